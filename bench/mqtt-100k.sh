#!/usr/bin/env bash
# 100,000 MQTT connections held with keep-alive on this machine, and barrage's memory per idle
# MQTT connection. Each process here may open 20,000 files, so the connections go to K
# mosquitto brokers on loopback (ports P..P+K-1, a config each) and barrage runs as as many
# processes as the open-file limit needs (--processes auto), its connections spread over the
# brokers (--url). Every connection CONNECTs, then holds: a PINGREQ per keep-alive (30 s), each
# answered. Then memory per connection in one process: 19,000 connections against 10.
#
#   bench/mqtt-100k.sh                          # 100,000 connections, 6 brokers, held 75 s
#   bench/mqtt-100k.sh --conns 20000 --brokers 2 --hold 40s
#
# Printed per run: CONNACKs accepted, connections open at the end, PINGREQ/PINGRESP, errors, the
# peak VmRSS of barrage's processes (the parent and its shards, sampled every second); then per
# connection (peak at 19,000 - peak at 10) / 18,990. Target (issue 29): N = 100,000 held; idle
# memory per MQTT connection <= 1 KiB.
# Env: BARRAGE, BARRAGE_NO_BUILD=1, MQTT_PORT (first broker port, default 18900).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need mosquitto python3
conns=100000 brokers=6 hold=75s
while [[ $# -gt 0 ]]; do
  case "$1" in
    --conns) conns="$2"; shift 2 ;;
    --brokers) brokers="$2"; shift 2 ;;
    --hold) hold="$2"; shift 2 ;;
    --no-build) export BARRAGE_NO_BUILD=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
build_barrage
port0="${MQTT_PORT:-18900}"
dir="$WORKDIR/mqtt-100k"
rm -rf "$dir" && mkdir -p "$dir"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
urls=()
for i in $(seq 0 $((brokers - 1))); do
  p=$((port0 + i))
  printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_connections -1\n' "$p" >"$dir/m$i.conf"
  chmod a+r "$dir/m$i.conf"
  mosquitto -c "$dir/m$i.conf" >"$dir/m$i.log" 2>&1 &
  pids+=($!)
  (( i > 0 )) && urls+=(--url "mqtt://127.0.0.1:$p")
done
sleep 1

# Runs barrage with N connections held for $hold; prints the result's figures and the peak RSS.
hold_run() {
  local n="$1" procs="$2" out="$dir/run-$1"
  "$BARRAGE" "mqtt://127.0.0.1:$port0" "${urls[@]}" -c "$n" --processes "$procs" --keepalive 30s \
    -d "$hold" --connect-rate 20000 --timeout 30s -q --json "$out.json" >"$out.log" 2>&1 &
  local b=$!
  python3 - "$b" "$out.rss" <<'PY' &
import os, sys, time
root, out = int(sys.argv[1]), sys.argv[2]
def kids(p):
    try:
        return [int(c) for c in open(f"/proc/{p}/task/{p}/children").read().split()]
    except OSError:
        return []
def rss(p):
    try:
        for l in open(f"/proc/{p}/status"):
            if l.startswith("VmRSS:"):
                return int(l.split()[1])
    except OSError:
        pass
    return 0
peak = 0
while os.path.exists(f"/proc/{root}"):
    tree, todo = [], [root]
    while todo:
        p = todo.pop(); tree.append(p); todo += kids(p)
    peak = max(peak, sum(rss(p) for p in tree))
    time.sleep(1)
open(out, "w").write(str(peak))
PY
  local sampler=$!
  wait "$b" || true
  wait "$sampler" || true
  python3 - "$out.json" "$(cat "$out.rss")" "$n" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["summary"]
m = r["totals"].get("mqtt", {})
c = r["connections"]
print(f"{sys.argv[3]} connections: CONNACK accepted {m.get('connack', {}).get('0', 0)}, open at end {c['open']}, "
      f"peak {c['peak']}, PINGREQ {m.get('pings', 0)}, PINGRESP {m.get('pongs', 0)}, "
      f"errors {r['errors']['total']}; barrage peak VmRSS {int(sys.argv[2]) / 1024:.1f} MiB")
PY
}
hold_run "$conns" auto
# Memory per connection in one process (several would each add their own baseline): 19,000
# connections against 10.
hold_run 19000 1
hold_run 10 1
python3 - "$dir/run-19000.rss" "$dir/run-10.rss" <<'PY'
import sys
big, small = int(open(sys.argv[1]).read()), int(open(sys.argv[2]).read())
print(f"memory per idle MQTT connection, one process: ({big} - {small}) KiB / 18990 = {(big - small) * 1024 / 18990:.0f} B")
PY
