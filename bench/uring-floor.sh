#!/usr/bin/env bash
# Issue 30's go/no-go: each floor example against its io_uring twin, the same load, pinned and
# interleaved (the order alternating per rep), against redis-server on CPU 0 with the floor on
# CPU 1. Per run: the process's CPU (user + system, getrusage) per request; medians and the
# median of per-rep ratios uring ÷ epoll. The issue's rule: build the backend only if io_uring's
# floor is at least 25 % below epoll's on at least two of the three loads.
#   pipelined  N connections x P SETs in flight (redis-benchmark -P), `pipelined_floor`
#   ping-pong  the same with P = 1
# (the open-loop twin, `open_loop_floor`'s, is not written yet).
#
#   bench/uring-floor.sh                  # 5 reps; 50 connections; P 16 x 1M and P 1 x 200k
#   bench/uring-floor.sh --reps 3
# Env: REDIS_PORT (default 16399). Needs: redis-server, taskset, python3.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need redis-server taskset python3
reps=5 conns=50
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    *) echo "unknown option $1 (use --reps, --conns)" >&2; exit 2 ;;
  esac
done
(cd "$REPO" && cargo build --release -p barrage-engine --example pipelined_floor --example pipelined_floor_uring >&2)
ex="${CARGO_TARGET_DIR:-$REPO/target}/release/examples"
port="${REDIS_PORT:-16399}"
dir="$WORKDIR/uring-floor"
rm -rf "$dir" && mkdir -p "$dir"
taskset -c 0 redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >"$dir/redis.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
sleep 0.5
echo "rep load way cpu_us_per_request" >"$dir/runs.txt"
for rep in $(seq 1 "$reps"); do
  ways=(epoll uring)
  (( rep % 2 == 0 )) && ways=(uring epoll)
  for load in "pipelined 16 1000000" "ping-pong 1 200000"; do
    read -r name p n <<<"$load"
    for way in "${ways[@]}"; do
      bin=pipelined_floor
      [[ $way == uring ]] && bin=pipelined_floor_uring
      line=$(timeout 120 taskset -c 1 "$ex/$bin" "127.0.0.1:$port" "$conns" "$p" "$n")
      cpu=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["cpu_us_per_request"])' "$line")
      echo "$rep $name $way $cpu" | tee -a "$dir/runs.txt" >&2
    done
  done
done
python3 - "$dir/runs.txt" "$conns" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
print(f"{sys.argv[2]} connections against redis-server (CPU 0), the floor on CPU 1")
print("| load | epoll µs/req | io_uring µs/req | ratio (median of per-rep) |")
print("|---|---|---|---|")
for load in ("pipelined", "ping-pong"):
    by = {}
    for rep, l, way, cpu in rows:
        if l == load:
            by.setdefault(rep, {})[way] = float(cpu)
    reps = [r for r in by.values() if len(r) == 2]
    e = st.median(r["epoll"] for r in reps)
    u = st.median(r["uring"] for r in reps)
    ratio = st.median(r["uring"] / r["epoll"] for r in reps)
    print(f"| {load} | {e:.3f} | {u:.3f} | {ratio:.2f} |")
PY
