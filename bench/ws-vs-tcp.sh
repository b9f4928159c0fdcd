#!/usr/bin/env bash
# What WebSocket framing costs barrage: the same echo ping-pong (100 connections, 32-byte message,
# one in flight per connection) against barrage's own raw TCP echo server (`barrage serve echo`)
# and its WebSocket echo server (`barrage serve ws`), 1 server thread on CPU 0, barrage -t 1 on
# CPU 1, reps interleaved (tcp ws / ws tcp ...). Prints the socket ÷ WebSocket throughput ratio
# and the CPU per message of generator and server for each transport.
#
#   bench/ws-vs-tcp.sh                     # 3 reps x 10 s x {tcp, ws} (~1.5 min)
#   bench/ws-vs-tcp.sh --reps 5 --dur 10   # options of lib/ws_vs_tcp.py: --conns --msg-bytes --warmup --order
#
# Env: BARRAGE, BARRAGE_NO_BUILD=1 (see lib/common.sh). Needs: taskset, python3.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need taskset python3
build_barrage
"$BARRAGE" serve ws --help >/dev/null 2>&1 || { echo "$BARRAGE has no 'serve ws' yet" >&2; exit 2; }
barrage_speaks "ws://127.0.0.1:1/" || { echo "$BARRAGE has no ws client yet (unknown scheme 'ws')" >&2; exit 2; }
out="$WORKDIR/results/ws-vs-tcp-$(date +%Y%m%d-%H%M%S)"
echo "[bench] results in $out" >&2
echo "## Socket vs WebSocket echo ping-pong: barrage vs barrage serve echo / serve ws — $out"
echo
python3 "$BENCH_HERE/lib/ws_vs_tcp.py" --barrage "$BARRAGE" --out "$out" "$@"
