#!/usr/bin/env bash
# barrage vs redis-benchmark, PING inline against redis-server, in one invocation of the shared
# peer harness (../shared/bench, peers-redis.sh): redis-server pinned to CPU 0, each generator to
# CPU 1, reps interleaved with rotating order, medians and per-rep ratios.
#
#   bench/redis-ping.sh                 # 3 reps x 10 s x {50,800} conns (~4 min)
#   bench/redis-ping.sh --reps 5 --dur 10   # any peers-redis.sh / lib/bench.py option is passed on
#
# Env: PEERBENCH (harness dir, default /work/shared/bench; used read-only, results go to
# $BARRAGE_BENCH_DIR/results), BARRAGE (binary copy, default /tmp/barrage-bench/barrage),
# BARRAGE_NO_BUILD=1 (skip the cargo build + copy), REDIS_PORT (default 16379).
# Needs: redis-server, redis-benchmark (apt-get install -y redis-server redis-tools), taskset, python3.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
PEERBENCH="${PEERBENCH:-/work/shared/bench}"
[[ -x "$PEERBENCH/peers-redis.sh" ]] || { echo "no harness at $PEERBENCH" >&2; exit 2; }
need redis-server redis-benchmark taskset python3
build_barrage

out="$WORKDIR/results/redis-$(date +%Y%m%d-%H%M%S)"
# --only redis-benchmark: of the file's contenders keep only the baseline (resp-benchmark runs ping_mbulk
# only; leaving it in would skew the rotating order). One contender line: name | parser | command | case filter. No '|' inside the command.
# -m is expanded by barrage (\r\n escapes); -t 1: one event loop, the harness pins it to CPU 1.
add="barrage | barrage_json | $BARRAGE tcp://{host}:{port} -m 'PING\\r\\n' --expect line -c {conns} -t 1 -d {dur}s -q --json {rundir}/barrage.json | ping_inline"

# Defaults first; later options given on the command line win (argparse keeps the last).
"$PEERBENCH/peers-redis.sh" --tests ping_inline --conns 50,800 --reps 3 --dur 10 \
  --only redis-benchmark --port "${REDIS_PORT:-16379}" --out "$out" --add "$add" "$@" >&2

echo
echo "## Redis PING (ping_inline): barrage vs redis-benchmark — $out"
echo
echo "Harness summary (\`summary.md\`; its errors column double-counts barrage errors, see below):"
echo
sed -n '/^| case/,$p' "$out/summary.md"
echo
echo "Compact table (errors for barrage = summary.errors.total from barrage.json):"
echo
python3 "$BENCH_HERE/lib/redis_report.py" "$out"
