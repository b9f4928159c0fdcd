#!/usr/bin/env bash
# The seed's scenario at full size on this machine (issue 13): examples/chat-100k.toml, i.e.
# 100,000 users arriving at 50/s against `serve chat --processes 6` (rooms of 3-8), each
# sending one message every 4 s that the room receives, held 10 minutes after the last arrival,
# then leaving at 100/s: about 60 minutes. barrage runs as the file says (`processes = "auto"`,
# `source_ip = "auto"`: 6 processes, 127.0.0.1-4). Writes the run's JSON and HTML report, the
# server's counts, the live log, and the generator's and the server's CPU and RSS every second
# (lib/proctree.py: each process tree, children included), then prints a summary. The run
# watches the server itself (--monitor) and streams the merged run to results/.../stream.
#
#   bench/chat-100k.sh                                   # the full run (~60 min)
#   bench/chat-100k.sh --users 20000 --arrive 500 --hold 60s   # a smaller one
#
# Extra arguments go to `barrage run`. Loopback only; everything stops by itself.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need python3
build_barrage
out="$WORKDIR/results/chat-100k-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
port=${PORT:-7100}
echo "[bench] results in $out" >&2
"$BARRAGE" serve chat --processes "${SERVER_PROCESSES:-6}" --threads 1 --room-size 3-8 \
  --listen "127.0.0.1:$port" --stats "$out/server.json" --exit-after 3h >"$out/server.log" 2>&1 &
server=$!
trap 'kill -TERM $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "listening on" "$out/server.log" && break; sleep 0.1; done
cat "$out/server.log" >&2
# The parent watches the server (all its processes) and the generator (barrage and its
# children) for the saturation verdict, and streams the merged run to --out as it goes.
"$BARRAGE" run "$REPO/examples/chat-100k.toml" --target "tcp://127.0.0.1:$port" --hold 10m \
  --monitor "$server" --out "$out/stream" "$@" \
  --no-tui --json "$out/run.json" --report "$out/run.html" >"$out/summary.txt" 2>"$out/live.log" &
run=$!
python3 "$BENCH_HERE/lib/proctree.py" "$out/usage.csv" "barrage=$run" "server=$server" &
sampler=$!
set +e
wait $run
code=$?
set -e
kill -TERM $server
wait $server || true
wait $sampler || true
trap - EXIT
echo "barrage run exited with $code" >"$out/exit.txt"
python3 - "$out" <<'PY'
import csv, json, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(f"{out}/usage.csv")))
r = json.load(open(f"{out}/run.json"))
s = json.load(open(f"{out}/server.json"))
def stat(name):
    v = [(float(x["cpu_cores"]), float(x["rss_mib"]), int(x["processes"])) for x in rows if x["name"] == name]
    if not v: return "n/a"
    cpu = sorted(c for c, _, _ in v)
    return (f"CPU mean {sum(cpu)/len(cpu):.2f} cores, p95 {cpu[int(len(cpu)*0.95)]:.2f}; "
            f"RSS max {max(m for _, m, _ in v):.0f} MiB; processes {max(p for _, _, p in v)}")
print(f"## chat-100k: {out}")
print(f"status {r['status']}: {r.get('message')}")
c = r["summary"]["connections"]
print(f"connections: target {c['target']}, peak {c['peak']}, attempts {c['attempts']}, failed {c['failed']}")
b = r["summary"].get("broadcast") or {}
print(f"broadcast: sent {b.get('sent')}, expected {b.get('expected')}, delivered {b.get('delivered')}, "
      f"reach {b.get('reach')}, lost {b.get('lost')}, remote {b.get('remote')}")
for k in ("peer_us", "own_us", "last_us"):
    l = b.get(k) or {}
    print(f"  {k}: p50 {l.get('p50')} us, p99 {l.get('p99')} us, max {l.get('max')} us, n {l.get('count')}")
ch = s.get("chat", {})
print(f"server: {s['connections_accepted']} connections, {ch.get('logins')} logins, {ch.get('rooms')} rooms, "
      f"{ch.get('messages_in')} messages in, {ch.get('deliveries_out')} deliveries out")
print("generator:", stat("barrage"))
print("server:   ", stat("server"))
print("machine:  ", stat("machine").split(";")[0], "(busy cores of", rows[-1]["processes"] if rows else "?", ")")
sat = r.get("analysis", {}).get("saturation")
print("saturation:", json.dumps(sat)[:600] if sat else "n/a")
PY
