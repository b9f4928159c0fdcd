#!/usr/bin/env bash
# Time to connect N idle connections with no pacing, barrage next to tcpkali (issue 13), and the
# generator's RSS per connection once they are up. Every run in its own network namespace
# (`unshare --net`: a fresh port range, no TIME_WAIT left by the run before); connections
# counted by the kernel (/proc/net/snmp CurrEstab / 2) every 10 ms. Above ~19,000 connections
# (a process here may open 20,000 files) barrage runs --processes auto --source-ip auto and
# tcpkali as K processes, one source address each; the server is `serve echo --processes K`.
#
#   TCPKALI=/path/to/tcpkali bench/connect.sh [--conns 19000,100000] [--reps 3]
#
# tcpkali is not packaged by Debian: build it from github.com/satori-com/tcpkali
# (autoreconf -fi && ./configure && make; needs autoconf automake libtool bison flex).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need python3 unshare ip
build_barrage
args=(--barrage "$BARRAGE" --out "$WORKDIR/results/connect-$(date +%Y%m%d-%H%M%S)")
if [[ -n "${TCPKALI:-}" ]]; then args+=(--tcpkali "$TCPKALI"); else echo "[bench] TCPKALI unset: barrage alone" >&2; fi
python3 "$BENCH_HERE/lib/connect.py" "${args[@]}" "$@"
