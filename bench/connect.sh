#!/usr/bin/env bash
# Time to connect N idle connections with no pacing, barrage next to tcpkali (issue 13), as the
# server counts them: a fresh `barrage serve echo` (one thread) per run, its open connections
# polled every 10 ms until they reach N. One process of each tool (a process here may open
# 20,000 files, so N defaults to 19,000); barrage -t 2, tcpkali -w 2, on a 2-core machine.
#
#   TCPKALI=/path/to/tcpkali bench/connect.sh [--conns 19000] [--reps 3]
#
# tcpkali is not packaged by Debian: build it from github.com/satori-com/tcpkali
# (autoreconf -fi && ./configure && make; needs autoconf automake libtool bison flex).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need python3
build_barrage
args=(--barrage "$BARRAGE" --out "$WORKDIR/results/connect-$(date +%Y%m%d-%H%M%S)")
if [[ -n "${TCPKALI:-}" ]]; then args+=(--tcpkali "$TCPKALI"); else echo "[bench] TCPKALI unset: barrage alone" >&2; fi
python3 "$BENCH_HERE/lib/connect.py" "${args[@]}" "$@"
