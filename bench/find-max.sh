#!/usr/bin/env bash
# find-max against a server of known capacity (issue 10: "find it within 10 %"): `barrage serve
# http --threads 1 --service-time 500us` serves one request at a time in 500 µs, so 2,000/s at
# most. Server on CPU 0, barrage on CPU 1; prints the capacity found and its ratio to 2,000/s per
# rep. Every process is started here and stopped by its PID.
#
#   bench/find-max.sh            # 3 reps (~1.5 min)
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need taskset python3
build_barrage
reps="${1:-3}"
port=18093
out="$WORKDIR/results/find-max-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
echo "## find-max vs a server of known capacity (2,000/s) — $out"
echo "| rep | max met | first broken | max / 2,000 | why |"
echo "|---|---|---|---|---|"
for rep in $(seq 1 "$reps"); do
  taskset -c 0 "$BARRAGE" serve http --listen "127.0.0.1:$port" --threads 1 --service-time 500us --exit-after 120s >/dev/null 2>&1 &
  srv=$!
  sleep 0.5
  taskset -c 1 timeout 120 "$BARRAGE" find-max "http://127.0.0.1:$port/" --slo 'p99 < 50ms' --slo 'errors.rate < 1%' \
    --step-duration 2s --step-warmup 1s --start-rate 1000 --max-steps 12 -t 1 -q --json "$out/rep$rep.json" >/dev/null 2>&1 || true
  kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null || true
  python3 - "$out/rep$rep.json" "$rep" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["result"]
m = r.get("max_ok") or 0
print(f"| {sys.argv[2]} | {m:,.0f}/s | {(r.get('first_bad') or 0):,.0f}/s | {m / 2000:.2f} | {r.get('why', r.get('end'))} |")
PY
done
