#!/usr/bin/env bash
# Diagnosis, not a benchmark: syscalls per request of barrage vs redis-benchmark (PING inline),
# counted with `strace -c -f` on short runs against a private redis-server on 127.0.0.1.
# strace slows both tools by ~10x, so only the counts per request mean anything here.
#
#   bench/syscalls-redis.sh            # 50 and 800 conns, ~1 min
# Env: BARRAGE, BARRAGE_NO_BUILD=1 (lib/common.sh), REDIS_PORT (default 16392).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need strace redis-server redis-benchmark taskset python3
build_barrage
port="${REDIS_PORT:-16392}"
out="$WORKDIR/results/syscalls-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
taskset -c 0 redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
  --logfile "$out/redis.log" &
rpid=$!
trap 'kill "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
for c in 50 800; do
  timeout 30 strace -c -f -o "$out/barrage-c$c.txt" taskset -c 1 "$BARRAGE" "tcp://127.0.0.1:$port" \
    -m 'PING\r\n' --expect line -c "$c" -t 1 -d 3s -q --json "$out/barrage-c$c.json" >/dev/null
  timeout 60 strace -c -f -o "$out/redis-benchmark-c$c.txt" taskset -c 1 redis-benchmark -h 127.0.0.1 \
    -p "$port" -c "$c" -n 50000 -t ping_inline --csv >"$out/redis-benchmark-c$c.csv"
done
echo "## Syscalls per request, PING inline (strace -c -f) — $out"
echo
python3 - "$out" <<'PY'
import json, os, re, sys
out = sys.argv[1]
def calls(p):
    d = {}
    for line in open(p):
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$", line)
        if m and m.group(2) != "total":
            d[m.group(2)] = int(m.group(1))
    return d
print("| conns | tool | requests | sendto | recvfrom | epoll_wait | epoll_ctl | all syscalls | syscalls/req |")
print("|---|---|---|---|---|---|---|---|---|")
for c in (50, 800):
    for tool in ("barrage", "redis-benchmark"):
        d = calls(os.path.join(out, f"{tool}-c{c}.txt"))
        n = json.load(open(os.path.join(out, f"barrage-c{c}.json")))["summary"]["requests"] if tool == "barrage" else 50000
        per = lambda k: f"{d.get(k, 0) / n:.3f}"
        print(f"| {c} | {tool} | {n:,} | {per('sendto')} | {per('recvfrom')} | {per('epoll_wait')} | {per('epoll_ctl')} "
              f"| {sum(d.values()):,} | {sum(d.values()) / n:.2f} |")
PY
