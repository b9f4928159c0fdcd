#!/usr/bin/env bash
# Idle memory per connection at 10,000 connections, BEFORE and AFTER barrage builds side by side
# (issue 9: ≤ 400 B raw TCP, ≤ 600 B WebSocket; issue 28: ≤ 2 KiB HTTP/2, `--transports h2`
# against `serve h2`): against `serve echo` and `serve ws` (1 thread,
# CPU 0, separate processes), generator -t 1 on CPU 1, one message per connection every 10 s.
# Per connection: (VmRSS once all 10,000 are up − VmRSS of a 10-connection run) / 9,990 (the
# headline), and within the 10,000 run (all up − ~0 open); VmRSS from /proc/PID/status, "all up"
# from the run's JSON (summary.ramp.all_ready_s).
#
#   BEFORE=/work/bin/barrage-before AFTER=/tmp/barrage-after bench/idle-mem.sh     # 3 reps (~5 min)
#   AFTER=/tmp/barrage-after bench/idle-mem.sh --reps 1 --transports tcp           # one build
#
# Options (lib/idle_mem.py): --conns N --base N --reps N --interval D --connect-rate N --dur S --base-dur S --transports tcp,ws.
# Env: BEFORE (optional), AFTER (required; never built here). Needs fd limit > conns + 100.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need taskset python3
[[ -n "${AFTER:-}" && -x "$AFTER" ]] || { echo "idle-mem.sh: set AFTER=/path/to/barrage (and BEFORE= for a side-by-side)" >&2; exit 2; }
builds=()
if [[ -n "${BEFORE:-}" ]]; then
  [[ -x "$BEFORE" ]] || { echo "idle-mem.sh: BEFORE=$BEFORE is not an executable" >&2; exit 2; }
  builds+=("before=$BEFORE")
fi
builds+=("after=$AFTER")
out="$WORKDIR/results/idle-mem-$(date +%Y%m%d-%H%M%S)"
echo "[bench] fd limit $(ulimit -n); results in $out" >&2
echo "## Idle memory per connection, before vs after — $out"
echo
for b in "${builds[@]}"; do echo "    ${b%%=*}: ${b#*=} ($("${b#*=}" --version)) sha256 $(sha256sum "${b#*=}" | cut -c1-12)"; done
echo
python3 "$BENCH_HERE/lib/idle_mem.py" --out "$out" "$@" "${builds[@]}"
