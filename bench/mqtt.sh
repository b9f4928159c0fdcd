#!/usr/bin/env bash
# barrage vs an MQTT bench tool: closed-loop publishing (each client publishes its next message
# when the last is acknowledged, QoS 1; written, QoS 0) to mosquitto on loopback. mosquitto
# (one thread) is pinned to CPU 0, each generator to CPU 1 (barrage -t 1). Reps interleaved, the
# order rotating; per rep: messages/s and the generator's CPU (user + system) per message;
# medians and the medians of per-rep ratios.
#
#   MQTT_PEER=/path/to/mqtt-benchmark bench/mqtt.sh            # 3 reps, 10 clients, 200k msgs
#   MQTT_PEER=... bench/mqtt.sh --reps 5 --clients 50 --count 4000
#
# The peer: krylovsk/mqtt-benchmark (Go, on eclipse/paho.mqtt.golang; closed loop per client,
# `-message-interval 0`). EMQX's emqtt-bench, the tool the issue names, needs Erlang and
# packages from hex.pm, which this machine cannot reach; no MQTT bench tool is on the Go module
# proxy or PyPI here, so the peer is given as a built binary (MQTT_PEER); this script does not
# fetch or build it.
# Target (issue 29): barrage msgs/s >= the peer's, and barrage CPU per message <= 0.5 x the
# peer's, at QoS 0 and 1.
# Env: BARRAGE, BARRAGE_NO_BUILD=1, MQTT_PORT (default 18831). Needs: mosquitto, taskset,
# python3, /usr/bin/time.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need taskset python3 mosquitto
[[ -x /usr/bin/time ]] || { echo "missing /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }
PEER="${MQTT_PEER:-}"
[[ -x "$PEER" ]] || { echo "set MQTT_PEER to a built mqtt-benchmark binary (see the header)" >&2; exit 2; }
reps=3 clients=10 count=20000 size=100
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --count) count="$2"; shift 2 ;;
    --no-build) export BARRAGE_NO_BUILD=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
build_barrage
port="${MQTT_PORT:-18831}"
dir="$WORKDIR/mqtt-bench"
rm -rf "$dir" && mkdir -p "$dir"
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 0\n' "$port" >"$dir/m.conf"
chmod -R a+rX "$dir"
taskset -c 0 mosquitto -c "$dir/m.conf" >"$dir/mosquitto.log" 2>&1 &
broker=$!
trap 'kill "$broker" 2>/dev/null || true' EXIT
sleep 0.5
total=$((clients * count))
payload=$(python3 -c "print('x' * $size)")

# One run: "msgs cpu_seconds" on stdout.
run_peer() {
  /usr/bin/time -f "%U %S" -o "$dir/time" taskset -c 1 "$PEER" -broker "tcp://127.0.0.1:$port" \
    -topic /bench -qos "$1" -clients "$clients" -count "$count" -size "$size" \
    -message-interval 0 -quiet -format json >"$dir/peer.json" 2>/dev/null
  python3 - "$dir/peer.json" "$dir/time" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["totals"]
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
ok = j["successes"]
print(ok, ok / j["total_run_time"] if "total_run_time" in j else ok / j["duration"], u + s)
PY
}
run_barrage() {
  /usr/bin/time -f "%U %S" -o "$dir/time" taskset -c 1 "$BARRAGE" "mqtt://127.0.0.1:$port" \
    -c "$clients" -t 1 --publish /bench --qos "$1" -m "$payload" -n "$total" -q \
    --json "$dir/b.json" >/dev/null 2>&1
  python3 - "$dir/b.json" "$dir/time" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["summary"]
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
ok = r["exchanges"]["completed"]
print(ok, r["rps"]["avg"], u + s)
PY
}

echo "qos rep tool msgs msgs_per_s cpu_s" >"$dir/runs.txt"
for qos in 0 1; do
  for rep in $(seq 1 "$reps"); do
    order=(peer barrage)
    (( rep % 2 == 0 )) && order=(barrage peer)
    for tool in "${order[@]}"; do
      line=$("run_$tool" "$qos")
      echo "$qos $rep $tool $line" | tee -a "$dir/runs.txt" >&2
    done
  done
done
python3 - "$dir/runs.txt" "$clients" "$count" "$size" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
print(f"closed loop, {sys.argv[2]} clients x {sys.argv[3]} messages of {sys.argv[4]} B, mosquitto on CPU 0")
print("| QoS | barrage msgs/s | peer msgs/s | ratio | barrage CPU µs/msg | peer CPU µs/msg | ratio |")
print("|---|---|---|---|---|---|---|")
for q in ("0", "1"):
    by = {}
    for qos, rep, tool, n, rate, cpu in rows:
        if qos == q:
            by.setdefault(rep, {})[tool] = (float(rate), float(cpu) / float(n) * 1e6)
    reps = [r for r in by.values() if len(r) == 2]
    med = lambda xs: st.median(xs)
    b_rate, p_rate = med([r["barrage"][0] for r in reps]), med([r["peer"][0] for r in reps])
    b_cpu, p_cpu = med([r["barrage"][1] for r in reps]), med([r["peer"][1] for r in reps])
    rr = med([r["barrage"][0] / r["peer"][0] for r in reps])
    cr = med([r["barrage"][1] / r["peer"][1] for r in reps])
    print(f"| {q} | {b_rate:,.0f} | {p_rate:,.0f} | {rr:.2f} | {b_cpu:.1f} | {p_cpu:.1f} | {cr:.2f} |")
PY
