#!/usr/bin/env bash
# barrage's memcache:// client vs memcaslap (Debian libmemcached-tools; memtier_benchmark and
# mc-crusher are not packaged in Debian 12) against memcached (1 thread, CPU 0), each generator on
# CPU 1 (barrage -t 1, memcaslap -T 1), the same get/set ratio (1:3) and duration, 50 and 800
# connections, reps interleaved with rotating order; req/s and generator CPU µs/request, medians
# and medians of per-rep ratios. Every run is reconciled with memcached `stats` (deltas of
# cmd_get, get_hits, get_misses, cmd_set) against the tool's own counts.
#   barrage:    memcache://127.0.0.1:PORT --command 'get key:{rand%1000}' --command '3*set key:{rand%1000} VALUE'
#               -c C -t 1 -d Ds
#   memcaslap:  -T 1 -c C -t Ds -F CFG (set 0.75, get 0.25; 16-byte keys, its minimum; 5-byte values)
#
#   AFTER=/tmp/barrage-after bench/memcache.sh              # 2 cases x 2 tools x 3 reps x 4 s (~1.5 min)
#   AFTER=... bench/memcache.sh --conns 50 --reps 1 --dur 2  # smoke test
#
# Options (lib/kv_bench.py): --reps --dur --conns --port --only --barrage-cmd.
# Env: AFTER (the binary; else BARRAGE / the cargo build of lib/common.sh), PEERBENCH, BARRAGE_BENCH_DIR.
# Needs: memcached, memcaslap (apt-get install -y memcached libmemcached-tools), taskset, python3.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need memcached memcaslap taskset python3
if [[ -n "${AFTER:-}" ]]; then BARRAGE="$AFTER"; BARRAGE_NO_BUILD=1; fi
build_barrage
if [[ " $* " != *" --barrage-cmd "* ]] && ! barrage_speaks "memcache://127.0.0.1:1"; then
  echo "memcache.sh: $BARRAGE has no memcache:// client yet (unknown scheme 'memcache'); set AFTER= to a build that has" >&2
  exit 2
fi
out="$WORKDIR/results/memcache-$(date +%Y%m%d-%H%M%S)"
echo "## barrage memcache:// vs memcaslap: get 1 : set 3 — $out"
echo
echo "    barrage: $BARRAGE ($("$BARRAGE" --version)) sha256 $(sha256sum "$BARRAGE" | cut -c1-12); $(memcached -V); memcaslap $(memcaslap -V 2>&1 | head -1)"
echo
python3 "$BENCH_HERE/lib/kv_bench.py" memcache --barrage "$BARRAGE" --out "$out" "$@"
