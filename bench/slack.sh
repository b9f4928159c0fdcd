#!/usr/bin/env bash
# Open-loop timer slack (issue 10): generator CPU per message and p50/p99 at 20,000 msg/s over
# 1,000 connections (--interval 50ms, one thread) against `serve echo --threads 1`, for
# --timer-slack 0, 100us and 1ms (the default), interleaved reps; an earlier build (exact
# schedule) beside it with BEFORE=/path/to/old/barrage.
#
#   bench/slack.sh                                  # 3 reps x 10 s x 3 slacks (~2 min)
#   BEFORE=/work/bin/barrage-before bench/slack.sh  # with the exact-schedule build
#   FLOOR=1 bench/slack.sh                          # with the kernel's floor at each W
#
# FLOOR=1 builds and runs crates/barrage-engine/examples/open_loop_floor.rs beside barrage:
# the same load with only the system calls no generator can avoid (one write per message,
# one read per readable event, one epoll_wait per wake-up), so barrage's figure has a floor.
#
# Options (lib/slack.py): --reps N --dur D --slacks 0,100us,1ms.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need taskset python3
build_barrage
out="$WORKDIR/results/slack-$(date +%Y%m%d-%H%M%S)"
bins=()
[[ -n "${BEFORE:-}" ]] && bins+=("before=$BEFORE")
bins+=("after=$BARRAGE")
echo "## Open-loop timer slack — $out"
echo
floor=()
if [[ -n "${FLOOR:-}" ]]; then
  (cd "$REPO" && cargo build --release -p barrage-engine --example open_loop_floor >&2)
  floor=(--floor "${CARGO_TARGET_DIR:-$REPO/target}/release/examples/open_loop_floor")
fi
python3 "$BENCH_HERE/lib/slack.py" --out "$out" "${floor[@]}" "$@" "${bins[@]}"
