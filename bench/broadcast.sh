#!/usr/bin/env bash
# One-to-many delivery cost (issue 11): generator CPU per delivery with stamps (scanned, timed,
# windowed) and without (a literal of the same length), against `serve chat --threads 1`
# (rooms 3-8, CPU 0); the generator `-t 1` on CPU 1; each run in its own network namespace.
# Also the generator's RSS every second: its slope over the steady part (all users in).
#
#   bench/broadcast.sh                                   # 2,000 users, 30 s, 3 reps (~4 min)
#   bench/broadcast.sh --users 15000 --arrive 500 --hold 600 --reps 1 --variants stamps
#                                                        # the 15,000-user, 10-minute run
#
# Options (lib/broadcast.py): --users N --arrive R --hold S --reps N --variants stamps,plain.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need taskset python3
build_barrage
out="$WORKDIR/results/broadcast-$(date +%Y%m%d-%H%M%S)"
echo "## One-to-many delivery cost — $out"
echo
python3 "$BENCH_HERE/lib/broadcast.py" --out "$out" --barrage "$BARRAGE" "$@"
