#!/usr/bin/env bash
# What a script costs (issue 29): CPU per message at 100 connections ping-pong against
# `barrage serve echo`, three ways, reps interleaved (the order rotating):
#   none     -m 'hello barrage\n' --expect line            (no script: the baseline)
#   trivial  --script bench/scripts/trivial.lua --expect line  (request() returns the same bytes)
#   judged   --script bench/scripts/judged.lua             (request(), frame() and response())
# The echo server (1 thread) on CPU 0, barrage -t 1 on CPU 1; per rep: requests/s and the
# generator's CPU (user + system, /usr/bin/time) per completed request; medians, and the
# medians of per-rep ratios to `none`. Runs without a script pay nothing for the hook:
# bench/seam.sh (BEFORE/AFTER builds) shows that.
#
#   bench/script-cost.sh                    # 5 reps x 5 s
#   bench/script-cost.sh --reps 3 --dur 3
# Env: BARRAGE, BARRAGE_NO_BUILD=1, ECHO_PORT (default 17411). Needs: taskset, python3, /usr/bin/time.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need taskset python3
[[ -x /usr/bin/time ]] || { echo "missing /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }
reps=5 dur=5 conns=100
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --dur) dur="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    --no-build) export BARRAGE_NO_BUILD=1; shift ;;
    *) echo "unknown option $1 (use --reps, --dur, --conns, --no-build)" >&2; exit 2 ;;
  esac
done
build_barrage
port="${ECHO_PORT:-17411}"
dir="$WORKDIR/script-cost"
rm -rf "$dir" && mkdir -p "$dir"
taskset -c 0 "$BARRAGE" serve echo --listen "127.0.0.1:$port" --threads 1 \
  --exit-after "$(( reps * 3 * (dur + 3) + 30 ))s" >"$dir/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
sleep 0.5

run() { # name, args...: prints "completed rps cpu_seconds"
  local name="$1"; shift
  /usr/bin/time -f "%U %S" -o "$dir/time" taskset -c 1 "$BARRAGE" "tcp://127.0.0.1:$port" \
    -c "$conns" -t 1 -d "${dur}s" "$@" -q --json "$dir/$name.json" >/dev/null 2>"$dir/$name.err"
  python3 - "$dir/$name.json" "$dir/time" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["summary"]
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
assert r["errors"]["total"] == 0, r["errors"]
print(r["exchanges"]["completed"], r["rps"]["avg"], u + s)
PY
}
none=(-m 'hello barrage\n' --expect line)
trivial=(--script "$BENCH_HERE/scripts/trivial.lua" --expect line)
judged=(--script "$BENCH_HERE/scripts/judged.lua")

echo "rep way completed rps cpu_s" >"$dir/runs.txt"
ways=(none trivial judged)
for rep in $(seq 1 "$reps"); do
  k=$(( (rep - 1) % 3 ))
  order=("${ways[@]:k}" "${ways[@]:0:k}")
  for way in "${order[@]}"; do
    declare -n args="$way"
    line=$(run "$way" "${args[@]}")
    echo "$rep $way $line" | tee -a "$dir/runs.txt" >&2
  done
done
python3 - "$dir/runs.txt" "$conns" "$dur" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
by = {}
for rep, way, n, rps, cpu in rows:
    by.setdefault(rep, {})[way] = (float(rps), float(cpu) / float(n) * 1e6)
reps = [r for r in by.values() if len(r) == 3]
print(f"{sys.argv[2]} connections ping-pong, {len(reps)} reps x {sys.argv[3]} s, serve echo on CPU 0, barrage -t 1 on CPU 1")
print("| way | req/s | CPU µs/req | CPU ratio to none |")
print("|---|---|---|---|")
for way in ("none", "trivial", "judged"):
    rate = st.median(r[way][0] for r in reps)
    cpu = st.median(r[way][1] for r in reps)
    ratio = st.median(r[way][1] / r["none"][1] for r in reps)
    print(f"| {way} | {rate:,.0f} | {cpu:.2f} | {ratio:.2f} |")
PY
