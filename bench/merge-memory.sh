#!/usr/bin/env bash
# `barrage merge` memory over a long stream (issue 24): 4 real shards of a 3 s run against
# `serve echo` (127.0.0.1), each stretched to SECONDS seconds (default 43,200: 12 hours) by
# lib/synth_shards.py (its real seconds repeated, keys moved), then merged under
# `/usr/bin/time -v`: the maximum RSS of the merge of the whole run, of the same run with
# shard 1 cut at its first hour (a shard that ended early: what once held every later second
# of the others, ~370 KB each), and of the shards' --json files (their seconds embedded).
#
#   bench/merge-memory.sh                  # 12 hours, ~2 min once built
#   SECONDS_OF_RUN=3600 bench/merge-memory.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need python3 /usr/bin/time
build_barrage
secs="${SECONDS_OF_RUN:-43200}"
out="$WORKDIR/results/merge-memory-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
echo "[bench] results in $out" >&2
"$BARRAGE" serve echo --listen 127.0.0.1:0 --threads 1 --exit-after 60s >"$out/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q "listening on" "$out/server.log" && break; sleep 0.1; done
port="$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$out/server.log" | head -1)"
start=@$(( $(date +%s) + 2 ))
pids=()
for i in 0 1 2 3; do
  timeout 30 "$BARRAGE" "tcp://127.0.0.1:$port" -c 4 -t 1 --rate 200 -d 3s --shard "$i/4" \
    --start-at "$start" -q --no-tui --out "$out/real$i" >/dev/null 2>&1 &
  pids+=($!)
done
wait "${pids[@]}"
kill "$server" 2>/dev/null || true
python3 "$BENCH_HERE/lib/synth_shards.py" --seconds "$secs" --finished "$out"/real{0,1,2,3} "$out/long"
mkdir -p "$out/cut/shard1"
for i in 0 2 3; do ln -s "../long/shard$i" "$out/cut/shard$i"; done
cp "$out/long/shard1/run.json" "$out/cut/shard1/"
head -3600 "$out/long/shard1/seconds.jsonl" >"$out/cut/shard1/seconds.jsonl"
python3 - "$out/long" <<'PY'
import json, sys
d = sys.argv[1]
for i in range(4):
    h = json.load(open(f"{d}/shard{i}/run.json"))
    with open(f"{d}/shard{i}.json", "w") as o:
        o.write('{"schema":"barrage.result/1","status":"completed","stream":{"header":')
        o.write(json.dumps(h) + ',"seconds":[')
        o.write(",\n".join(l.strip() for l in open(f"{d}/shard{i}/seconds.jsonl")))
        o.write("]}}\n")
PY
measure() {
  local name="$1"; shift
  /usr/bin/time -v "$BARRAGE" merge "$@" -o "$out/$name.json" 2>"$out/$name.time" >/dev/null
  local rss wall status
  rss="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$out/$name.time")"
  wall="$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$out/$name.time")"
  status="$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['status'], r['summary']['exchanges']['completed'])" "$out/$name.json")"
  echo "| $name | $((rss / 1024)) MB | $wall | $status |"
}
echo "## barrage merge, 4 shards x $secs s ($(( secs / 3600 )) h)"
echo
echo "| merge of | max RSS | wall | status, exchanges |"
echo "|---|---|---|---|"
measure whole "$out"/long/shard{0,1,2,3}
measure cut-at-1h "$out"/cut/shard{0,1,2,3}
measure json-files "$out"/long/shard{0,1,2,3}.json
