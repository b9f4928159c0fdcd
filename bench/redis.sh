#!/usr/bin/env bash
# barrage's redis:// client vs redis-benchmark (issue 9): SET, GET, LPUSH at 50 and 800
# connections, with and without pipelining 16, against redis-server (CPU 0), each generator on
# CPU 1 (barrage -t 1), the same request count for both (-n, sized so that redis-benchmark lasts
# about --dur s), reps interleaved with rotating order; req/s and generator CPU µs/request,
# medians and medians of per-rep ratios. Every run is reconciled with the server: INFO
# commandstats calls of the command vs the tool's completed count (and barrage's per-command table).
#   barrage:          redis://127.0.0.1:PORT --command 'SET key:{seq} {conn}' (GET key:{seq}, LPUSH list {seq})
#                     -c C -t 1 -n N --pipeline P
#   redis-benchmark:  -c C -n N -P P -t set|get|lpush --csv
# Targets: barrage req/s >= redis-benchmark's, CPU/request <= 0.6 x (SET and GET).
#
#   AFTER=/tmp/barrage-after bench/redis.sh                 # 12 cases x 2 tools x 3 reps x ~4 s (~8 min)
#   AFTER=... bench/redis.sh --tests set --conns 50 --pipelines 1 --reps 1 --dur 2   # smoke test
#
# Options (lib/kv_bench.py): --reps --dur --conns --tests --pipelines --port --only --barrage-cmd,
#   --rb-keyspace N (redis-benchmark -r N), --same-keys (barrage sends redis-benchmark's own commands).
# Env: AFTER (the binary; else BARRAGE / the cargo build of lib/common.sh), PEERBENCH (shared
# harness, read-only, default /work/shared/bench), BARRAGE_BENCH_DIR.
# Needs: redis-server, redis-benchmark (apt-get install -y redis-server redis-tools), taskset, python3.
# The PING comparison (tcp:// with an inline command) is bench/redis-ping.sh.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need redis-server redis-benchmark taskset python3
if [[ -n "${AFTER:-}" ]]; then BARRAGE="$AFTER"; BARRAGE_NO_BUILD=1; fi
build_barrage
if [[ " $* " != *" --barrage-cmd "* ]] && ! barrage_speaks "redis://127.0.0.1:1"; then
  echo "redis.sh: $BARRAGE has no redis:// client yet (unknown scheme 'redis'); set AFTER= to a build that has" >&2
  exit 2
fi
out="$WORKDIR/results/redis-$(date +%Y%m%d-%H%M%S)"
echo "## barrage redis:// vs redis-benchmark: SET, GET, LPUSH — $out"
echo
echo "    barrage: $BARRAGE ($("$BARRAGE" --version)) sha256 $(sha256sum "$BARRAGE" | cut -c1-12); $(redis-server --version | cut -d' ' -f1-3)"
echo
python3 "$BENCH_HERE/lib/kv_bench.py" redis --barrage "$BARRAGE" --out "$out" "$@"
