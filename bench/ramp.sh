#!/usr/bin/env bash
# Open-loop load during a connection ramp (issue 8, point 1): p99 from the intended send time,
# the busiest second against the plan, the ramp time and what was not sent, for
#   -c 2000 --connect-rate 500 --interval 100ms    and    -c 19000 --interval 1s
# against `barrage serve echo` (2 threads, CPU 0), generator on CPU 1, interleaved reps.
# No packaged peer starts a schedule per connection (wrk2 and tcpkali are not in Debian), so the
# side-by-side contender is an earlier barrage build: BEFORE=/path/to/old/barrage.
#
#   bench/ramp.sh                               # this build alone, 3 reps x 8 s (~1.5 min)
#   BEFORE=/tmp/barrage-2de6c23 bench/ramp.sh   # before/after in one invocation
#
# Options (lib/ramp.py): --reps N --dur D --cases NAME,NAME. Needs an fd limit > 19,100.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need taskset python3
build_barrage
out="$WORKDIR/results/ramp-$(date +%Y%m%d-%H%M%S)"
bins=()
[[ -n "${BEFORE:-}" ]] && bins+=("before=$BEFORE")
bins+=("after=$BARRAGE")
echo "## Open-loop load during the connection ramp — $out"
echo
python3 "$BENCH_HERE/lib/ramp.py" --out "$out" "$@" "${bins[@]}"
