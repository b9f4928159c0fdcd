#!/usr/bin/env bash
# barrage vs k6: WebSocket echo ping-pong, 100 connections, against two third-party echo servers
# (PyPI `websockets`, then npm `ws`), each in one invocation of the shared peer harness
# (peers-ws.sh): server pinned to CPU 0, each generator to CPU 1, reps interleaved, medians and
# per-rep ratios.
#
# Same load as the harness's k6 scenario (scripts/k6-ws.js): every connection sends one 32-byte
# text message ('x' x 32) and sends the next one when the echo arrives (one in flight per
# connection). barrage: `-m` with the same 32 bytes; text frames and echo ping-pong are its
# defaults for ws://.
#
#   bench/ws.sh                          # python then node server, 3 reps x 10 s (~3 min)
#   bench/ws.sh --servers node --reps 5  # any other peers-ws.sh / lib/bench.py option is passed on
#   bench/ws.sh --peers-only --reps 1 --dur 3   # harness check without barrage
#
# Target (issue): barrage generator CPU µs/msg <= 0.2 x k6's (median of per-rep ratios), per server.
# Env: PEERBENCH, BARRAGE, BARRAGE_NO_BUILD=1 (see lib/common.sh), WS_PORT (default 18765).
# Needs: k6, node + npm ws, python websockets (the harness's install-peers.sh), taskset, python3.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
peers_only=0
servers=python,node
args=()
while (($#)); do
  case "$1" in
    --peers-only) peers_only=1 ;;
    --servers) servers="$2"; shift ;;
    --servers=*) servers="${1#*=}" ;;
    *) args+=("$1") ;;
  esac
  shift
done
find_peerbench
need taskset python3 k6
msg="$(printf 'x%.0s' {1..32})"  # the k6 scenario's PAYLOAD = 'x'.repeat(32)

add=()
if [[ $peers_only == 0 ]]; then
  build_barrage
  barrage_speaks "ws://127.0.0.1:1/" || {
    echo "$BARRAGE has no ws client yet (unknown scheme 'ws'); run with --peers-only to check the peers" >&2
    exit 2
  }
  # {url} is ws://127.0.0.1:PORT/ (the harness's echo server). No '|' inside a contender command.
  add=(--add "barrage | barrage_json | $BARRAGE {url} -m $msg -c {conns} -t 1 -d {dur}s -q --json {rundir}/barrage.json")
fi

stamp="$(date +%Y%m%d-%H%M%S)"
outs=()
for srv in ${servers//,/ }; do
  case "$srv" in
    python | python-uvloop) python3 -c 'import websockets' 2>/dev/null ||
      { echo "missing: python websockets (harness venv; run install-peers.sh)" >&2; exit 2; } ;;
    node) need node
      [[ -d "$PEERBENCH/.tools/node_modules/ws" ]] || { echo "missing: npm ws in $PEERBENCH/.tools" >&2; exit 2; } ;;
  esac
  out="$WORKDIR/results/ws-$srv-$stamp"
  outs+=("$out")
  # --only k6: artillery (the file's other line) runs ~26 s per 10 s test and judges nothing here.
  "$PEERBENCH/peers-ws.sh" --ws-server "$srv" --conns 100 --reps 3 --dur 10 --only k6 \
    --port "${WS_PORT:-18765}" --out "$out" "${add[@]}" "${args[@]}" >&2
done

for out in "${outs[@]}"; do
  srv="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["server"])' "$out/meta.json")"
  echo
  echo "## WebSocket echo ping-pong (32-byte text, 100 conns), server $srv: barrage vs k6 — $out"
  echo
  echo "Harness summary (\`summary.md\`; its errors column double-counts barrage errors):"
  echo
  sed -n '/^| case/,$p' "$out/summary.md"
  echo
  echo "Compact table (barrage errors = summary.errors.total from barrage.json; msg/s ratio is information only):"
  echo
  python3 "$BENCH_HERE/lib/peer_report.py" "$out" --unit msg --rate-vs k6 --cpu-vs k6 --cpu-max 0.2
done
