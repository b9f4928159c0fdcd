#!/usr/bin/env bash
# What rendering a binary message of typed fields costs (issue 29: a 4-field message well
# under 100 ns): u8, a u16be length of (u32be {seq}, a u8-prefixed "room-{conn}", u64be
# {ts_us}), 3 runs of 20M messages on CPU 1, medians; the same placeholders in a text message
# beside them.
#
#   bench/fields-cost.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need taskset
(cd "$REPO" && cargo build --release -q -p barrage-engine --example fields_cost)
bin="${CARGO_TARGET_DIR:-$REPO/target}/release/examples/fields_cost"
echo "## Binary message render cost — $(cd "$REPO" && git rev-parse --short HEAD)"
echo
out=$(for i in 1 2 3; do taskset -c 1 "$bin" 20000000; done)
echo "$out"
echo
for what in "fields, bounded writer" "fields, growing writer" "text with the same placeholders"; do
  med=$(echo "$out" | grep "^$what:" | sed -n 's/.*: \([0-9.]*\) ns.*/\1/p' | sort -n | sed -n 2p)
  echo "median, $what: $med ns/message"
done
echo "(target: the fields well under 100 ns)"
