#!/usr/bin/env bash
# Issue 30's go/no-go: each floor example against its io_uring twin, the same load, pinned and
# interleaved (the order alternating per rep), the server on CPU 0 and the floor on CPU 1.
# Per run: the process's CPU (user + system, getrusage: io_uring's deferred task work runs in
# it, so both count the TCP stack) per request; medians and the median of per-rep ratios
# uring ÷ epoll. The issue's rule: build the backend only if io_uring's floor is at least 25 %
# below epoll's on at least two of the three loads.
#   pipelined  redis-server, N connections x P SETs in flight (redis-benchmark -P), `pipelined_floor`
#   ping-pong  the same with P = 1
#   open-loop  `barrage serve echo --threads 1`, 1,000 connections x one 19-byte line every
#              50 ms (20,000 msg/s), 1 ms slack, `open_loop_floor`
#
#   bench/uring-floor.sh                  # 5 reps; 50 connections; P 16 x 1M, P 1 x 200k, 8 s
#   bench/uring-floor.sh --reps 3
#   bench/uring-floor.sh --perf           # also: where each floor's CPU goes (perf, once each)
#
# --perf samples each floor once more under `perf record -e cpu-clock -g` and prints the share
# of its CPU inside tcp_sendmsg and tcp_recvmsg (on loopback the sender's send also runs the
# receiver's TCP input in its softirq): work both backends must do, so 1 - that share is the
# most any way of entering the kernel less often could save.
# Env: REDIS_PORT (default 16399), ECHO_PORT (default 17392). Needs: redis-server, taskset,
# python3.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need redis-server taskset python3
reps=5 conns=50 perf=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --conns) conns="$2"; shift 2 ;;
    --perf) perf=1; shift ;;
    *) echo "unknown option $1 (use --reps, --conns, --perf)" >&2; exit 2 ;;
  esac
done
build_barrage
(cd "$REPO" && cargo build --release -p barrage-engine --example pipelined_floor \
  --example pipelined_floor_uring --example open_loop_floor --example open_loop_floor_uring >&2)
ex="${CARGO_TARGET_DIR:-$REPO/target}/release/examples"
port="${REDIS_PORT:-16399}" echo_port="${ECHO_PORT:-17392}"
dir="$WORKDIR/uring-floor"
rm -rf "$dir" && mkdir -p "$dir"
taskset -c 0 redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >"$dir/redis.log" 2>&1 &
redis=$!
taskset -c 0 "$BARRAGE" serve echo --listen "127.0.0.1:$echo_port" --threads 1 >"$dir/echo.log" 2>&1 &
echo_pid=$!
trap 'kill "$redis" "$echo_pid" 2>/dev/null || true' EXIT
sleep 0.5
floor_args() { # LOAD WAY: the floor's command line
  local suffix=""
  [[ $2 == uring ]] && suffix=_uring
  case $1 in
    pipelined) args=("$ex/pipelined_floor$suffix" "127.0.0.1:$port" "$conns" 16 1000000) ;;
    ping-pong) args=("$ex/pipelined_floor$suffix" "127.0.0.1:$port" "$conns" 1 200000) ;;
    open-loop) args=("$ex/open_loop_floor$suffix" "127.0.0.1:$echo_port" 1000 50ms 1ms 8s) ;;
  esac
}
echo "rep load way cpu_us_per_request" >"$dir/runs.txt"
for rep in $(seq 1 "$reps"); do
  ways=(epoll uring)
  (( rep % 2 == 0 )) && ways=(uring epoll)
  for load in pipelined ping-pong open-loop; do
    for way in "${ways[@]}"; do
      floor_args "$load" "$way"
      line=$(timeout 120 taskset -c 1 "${args[@]}")
      echo "$line" >>"$dir/lines.txt"
      cpu=$(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(j.get("cpu_us_per_request", j.get("cpu_us_per_message")))' "$line")
      echo "$rep $load $way $cpu" | tee -a "$dir/runs.txt" >&2
    done
  done
done
python3 - "$dir/runs.txt" "$conns" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
print(f"redis-server or serve echo on CPU 0, the floor on CPU 1; {sys.argv[2]} connections to redis")
print("| load | epoll µs/req | io_uring µs/req | ratio (median of per-rep) |")
print("|---|---|---|---|")
for load in ("pipelined", "ping-pong", "open-loop"):
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
if [[ $perf == 1 ]]; then
  need perf
  echo
  echo "| load | backend | in tcp_sendmsg | in tcp_recvmsg | the rest (the most fewer entries could save) |"
  echo "|---|---|---|---|---|"
  for load in pipelined ping-pong open-loop; do
    for way in epoll uring; do
      floor_args "$load" "$way"
      timeout 120 taskset -c 1 perf record -q -e cpu-clock -g -o "$dir/$load-$way.perf" "${args[@]}" >/dev/null 2>&1
      perf report -i "$dir/$load-$way.perf" --children --sort sym -g none 2>/dev/null |
        python3 -c '
import re, sys
share = {}
for l in sys.stdin:
    m = re.match(r"\s*([\d.]+)%\s+[\d.]+%\s+\[k\] (tcp_sendmsg|tcp_recvmsg)$", l)
    if m:
        share[m.group(2)] = float(m.group(1))
s, r = share.get("tcp_sendmsg", 0), share.get("tcp_recvmsg", 0)
print(f"| {sys.argv[1]} | {sys.argv[2]} | {s:.0f} % | {r:.0f} % | {100 - s - r:.0f} % |")' "$load" "$way"
    done
  done
fi
