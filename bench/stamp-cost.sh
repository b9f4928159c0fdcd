#!/usr/bin/env bash
# The receiving side's user-space cost per broadcast delivery (issue 11: ≤ 1 µs beyond the
# plain receive): scan, per-sender window, latency histogram and per-message span, against
# the same messages without stamps; 3 runs of 20M deliveries on CPU 1, median.
#
#   bench/stamp-cost.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need taskset
(cd "$REPO" && cargo build --release -q -p barrage-engine --example stamp_cost)
bin="${CARGO_TARGET_DIR:-$REPO/target}/release/examples/stamp_cost"
echo "## Broadcast receive cost per delivery (user space) — $(cd "$REPO" && git rev-parse --short HEAD)"
echo
out=$(for i in 1 2 3; do taskset -c 1 "$bin" 20000000; done)
echo "$out"
med=$(echo "$out" | sed -n 's/.*added \([0-9.]*\) ns/\1/p' | sort -n | sed -n 2p)
echo
echo "median added: $med ns per delivery (target ≤ 1000)"
