#!/usr/bin/env bash
# barrage vs wrk, h2load and oha: HTTP/1.1 keep-alive GET against nginx (1 worker, `return 200
# "hello"`), in one invocation of the shared peer harness (peers-http.sh): nginx pinned to CPU 0,
# each generator to CPU 1 (one thread each), reps interleaved with rotating order, medians and
# per-rep ratios.
#
#   bench/http.sh                       # 3 reps x 10 s x {100,1000} conns, 4 tools (~6 min)
#   bench/http.sh --reps 5              # any peers-http.sh / lib/bench.py option is passed on
#   bench/http.sh --peers-only --only wrk --reps 1 --dur 3   # harness check without barrage
#
# Targets (issue): barrage req/s >= the best of wrk, h2load and oha in the same rep, and barrage
# generator CPU µs/req <= 0.8 x wrk's (medians of per-rep ratios).
# Env: PEERBENCH (harness dir with installed tools; default: ../shared/bench or /tmp/peerbench,
# whichever has .tools/, see lib/common.sh), BARRAGE, BARRAGE_NO_BUILD=1, HTTP_PORT (default 18080).
# Needs: nginx, wrk, h2load, oha (the harness's install-peers.sh), taskset, python3.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
peers_only=0
args=()
for x in "$@"; do
  if [[ "$x" == --peers-only ]]; then peers_only=1; else args+=("$x"); fi
done
find_peerbench
need taskset python3 nginx wrk h2load oha

out="$WORKDIR/results/http-$(date +%Y%m%d-%H%M%S)"
add=()
if [[ $peers_only == 0 ]]; then
  build_barrage
  barrage_speaks "http://127.0.0.1:1/" || {
    echo "$BARRAGE has no http client yet (unknown scheme 'http'); run with --peers-only to check the peers" >&2
    exit 2
  }
  # {url} is http://127.0.0.1:PORT/ (the harness's nginx). -t 1: one event loop, pinned to CPU 1 like
  # wrk -t1 / h2load -t 1. No '|' inside a contender command.
  add=(--add "barrage | barrage_json | $BARRAGE {url} -c {conns} -t 1 -d {dur}s -q --json {rundir}/barrage.json")
fi

# --only: of the file's contenders keep the ones the targets name (k6, hey, ab ... would add ~8 min
# and judge nothing). Defaults first; later options on the command line win (argparse keeps the last).
"$PEERBENCH/peers-http.sh" --conns 100,1000 --reps 3 --dur 10 --only wrk,h2load,oha \
  --port "${HTTP_PORT:-18080}" --out "$out" "${add[@]}" "${args[@]}" >&2

echo
echo "## HTTP/1.1 keep-alive GET vs nginx: barrage vs wrk, h2load, oha — $out"
echo
echo "Harness summary (\`summary.md\`; its errors column double-counts barrage errors):"
echo
sed -n '/^| case/,$p' "$out/summary.md"
echo
echo "Compact table (barrage errors = summary.errors.total from barrage.json):"
echo
python3 "$BENCH_HERE/lib/peer_report.py" "$out" --unit req --rate-vs wrk,h2load,oha --rate-min 1.0 \
  --cpu-vs wrk --cpu-max 0.8
