#!/usr/bin/env bash
# What the live outputs cost (issue 12): the same barrage build twice, side by side in one
# invocation of the shared harness (bench/seam.sh), once plain and once with every live output
# on: --prometheus and --web (each on a port of its own, served by their threads), the durable
# stream --out, --csv and --hdr-log. HTTP keep-alive vs nginx (100 conns) and redis PING (50
# conns); generator CPU µs/request, medians of per-rep ratios "with outputs ÷ plain".
# Target: within 3 % (ratio <= 1.03).
#
#   bench/outputs.sh                      # builds release, 6 reps x 8 s (~5 min)
#   BARRAGE=/path/to/barrage bench/outputs.sh --reps 2 --dur 3
#
# Options: those of bench/seam.sh (--reps --dur --http-conns --redis-conns).
#
#   bench/outputs.sh --fixed [--reps 8] [--http-n 600000] [--redis-n 1000000]
# The same comparison as generator CPU time for a fixed request count (lib/outputs_fixed.py):
# barrage's own user + system time over the requests it completed, plain vs every output on,
# reps interleaved; no rate or duration in the figure, so a server or VM neighbour that is
# slower in one run changes the wall time, not the figure.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
build_barrage
if [[ "${1:-}" == "--fixed" ]]; then
  shift
  need nginx redis-server taskset python3
  echo "## Live outputs, fixed request count: plain vs --prometheus --web --out --csv --hdr-log"
  echo
  echo "    barrage: $BARRAGE ($("$BARRAGE" --version)) sha256 $(sha256sum "$BARRAGE" | cut -c1-12)"
  echo
  exec python3 "$BENCH_HERE/lib/outputs_fixed.py" --barrage "$BARRAGE" --out "$WORKDIR/results/outputs-fixed-$(date +%Y%m%d-%H%M%S)" "$@"
fi
# Port 0: each run picks free ports (the harness runs one contender at a time anyway).
export AFTER_ARGS="--prometheus 127.0.0.1:0 --web 127.0.0.1:0 --out {rundir}/stream --csv {rundir}/seconds.csv --hdr-log {rundir}/latency.hlog"
export TITLE="Live outputs: plain (before) vs --prometheus --web --out --csv --hdr-log (after)"
BEFORE="$BARRAGE" AFTER="$BARRAGE" exec "$BENCH_HERE/seam.sh" "$@"
