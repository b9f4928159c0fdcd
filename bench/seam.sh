#!/usr/bin/env bash
# No regression from the Session seam (issue 9): two barrage builds side by side, BEFORE and AFTER,
# as two --add contenders of the shared peer harness (../shared/bench), reps interleaved with
# rotating order (before after / after before ...), server on CPU 0, each generator -t 1 on CPU 1:
#   (a) HTTP/1.1 keep-alive GET vs nginx (peers-http.sh), 100 connections
#   (b) redis PING inline (peers-redis.sh): tcp:// -m 'PING\r\n' --expect line, 50 connections
# Reports generator CPU µs/request (generator CPU time / completed requests), medians over reps,
# and AFTER/BEFORE as the median of per-rep ratios. Target: within 3 % (ratio <= 1.03).
#
#   BEFORE=/work/bin/barrage-before AFTER=/tmp/barrage-after bench/seam.sh            # 6 reps x 8 s (~5 min)
#   BEFORE=... AFTER=... bench/seam.sh --reps 2 --dur 3                              # smoke test
#
# Options: --reps N --dur S --http-conns N --redis-conns N (defaults 6, 8, 100, 50).
# Env: BEFORE, AFTER (binaries, required; never built here), AFTER_ARGS (more arguments for the
# AFTER runs only, {rundir} expanded: bench/outputs.sh), TITLE (the report's heading), PEERBENCH (harness, default
# /work/shared/bench, read-only), HTTP_PORT (18091), REDIS_PORT (16391), BARRAGE_BENCH_DIR.
# Needs: nginx, redis-server, redis-benchmark (the harness calibrates with it), taskset, python3.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
PEERBENCH="${PEERBENCH:-/work/shared/bench}"
reps=6 dur=8 hconns=100 rconns=50
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --dur) dur="$2"; shift 2 ;;
    --http-conns) hconns="$2"; shift 2 ;;
    --redis-conns) rconns="$2"; shift 2 ;;
    *) echo "seam.sh: unknown option $1 (use --reps, --dur, --http-conns, --redis-conns)" >&2; exit 2 ;;
  esac
done
for v in BEFORE AFTER; do
  [[ -n "${!v:-}" && -x "${!v}" ]] || { echo "seam.sh: set $v=/path/to/barrage (an executable build)" >&2; exit 2; }
done
[[ -x "$PEERBENCH/peers-http.sh" && -x "$PEERBENCH/peers-redis.sh" ]] || { echo "no harness at $PEERBENCH (set PEERBENCH)" >&2; exit 2; }
need nginx redis-server redis-benchmark taskset python3

out="$WORKDIR/results/seam-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
{
  echo "before: $BEFORE ($("$BEFORE" --version)) sha256 $(sha256sum "$BEFORE" | cut -c1-12)"
  echo "after:  $AFTER ($("$AFTER" --version)) sha256 $(sha256sum "$AFTER" | cut -c1-12)"
} | tee "$out/binaries.txt" >&2

# One contender line per build: name | parser | command [| case filter]; no '|' inside a command.
# --only barrage-before keeps the suite file's own peers out (wrk, redis-benchmark ...): this
# script compares two barrage builds; --add contenders always run.
http_cmd='{url} -c {conns} -t 1 -d {dur}s -q --json {rundir}/barrage.json'
redis_cmd="tcp://{host}:{port} -m 'PING\\r\\n' --expect line -c {conns} -t 1 -d {dur}s -q --json {rundir}/barrage.json"
"$PEERBENCH/peers-http.sh" --conns "$hconns" --reps "$reps" --dur "$dur" --only barrage-before \
  --baseline barrage-before --port "${HTTP_PORT:-18091}" --out "$out/http" \
  --add "barrage-before | barrage_json | $BEFORE $http_cmd" \
  --add "barrage-after | barrage_json | $AFTER $http_cmd ${AFTER_ARGS:-}" >&2
"$PEERBENCH/peers-redis.sh" --tests ping_inline --conns "$rconns" --reps "$reps" --dur "$dur" \
  --only barrage-before --baseline barrage-before --port "${REDIS_PORT:-16391}" --out "$out/redis" \
  --add "barrage-before | barrage_json | $BEFORE $redis_cmd | ping_inline" \
  --add "barrage-after | barrage_json | $AFTER $redis_cmd ${AFTER_ARGS:-} | ping_inline" >&2

echo "## ${TITLE:-Session seam, before vs after}: HTTP vs nginx and redis PING — $out"
[[ -n "${AFTER_ARGS:-}" ]] && echo && echo "    after runs with: ${AFTER_ARGS}"
echo
sed 's/^/    /' "$out/binaries.txt"
echo
python3 "$BENCH_HERE/lib/seam_report.py" --max-ratio 1.03 "http=$out/http" "redis PING=$out/redis"
