#!/usr/bin/env bash
# barrage vs h2load: HTTP/2 cleartext (h2c, prior knowledge) GET against nginx (1 worker,
# `listen ... http2`, `return 200 "hello"`; h2load takes the http:// URL and speaks h2c with prior
# knowledge), in the shared peer harness: nginx pinned to CPU 0,
# each generator to CPU 1 (one thread each), reps interleaved with rotating order, medians and
# per-rep ratios. Two shapes, one harness run each: 100 connections x 10 streams (h2load -m 10,
# barrage --streams 10) and 1,000 connections x 1 stream.
#
#   bench/h2.sh                  # 3 reps x 10 s x 2 shapes (~3 min)
#   bench/h2.sh --reps 5         # any lib/bench.py option is passed on
#
# Targets (issue 28): barrage req/s >= h2load's, and barrage generator CPU µs/req <= 0.8 x
# h2load's (medians of per-rep ratios).
# The harness is copied to $WORKDIR/peerbench-h2 with its nginx template listening with http2 and
# its http contenders replaced by these two tools (the shared copy is not changed).
# Env: BARRAGE, BARRAGE_NO_BUILD=1, HTTP_PORT (default 18082). Needs: nginx, h2load (Debian's
# nghttp2-client), taskset, python3.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need taskset python3 nginx h2load
build_barrage
shared="$REPO/../shared/bench"
[[ -f "$shared/lib/bench.py" ]] || { echo "no peer harness at $shared" >&2; exit 2; }
H="$WORKDIR/peerbench-h2"
rm -rf "$H" && mkdir -p "$H"
(cd "$shared" && tar --exclude=./.tools --exclude=./results -cf - .) | (cd "$H" && tar -xf -)
chmod -R u+w "$H"
sed -i 's/listen 127.0.0.1:@PORT@ backlog=4096;/listen 127.0.0.1:@PORT@ backlog=4096 http2;/' "$H/conf/nginx.conf.tmpl"
grep -q "backlog=4096 http2;" "$H/conf/nginx.conf.tmpl" || { echo "could not turn http2 on in the harness's nginx" >&2; exit 2; }

stamp="$(date +%Y%m%d-%H%M%S)"
for shape in "100 10" "1000 1"; do
  read -r conns streams <<<"$shape"
  # h2load first: the harness's warm-up tool is the file's first line.
  cat >"$H/contenders/http.txt" <<CONT
h2load  | h2load       | h2load -t 1 -c {conns} -m $streams -D {dur} {url}
barrage | barrage_json | $BARRAGE h2c://127.0.0.1:{port}/ -c {conns} --streams $streams -t 1 -d {dur}s -q --json {rundir}/barrage.json
CONT
  out="$WORKDIR/results/h2-$stamp-c$conns-m$streams"
  python3 "$H/lib/bench.py" http --conns "$conns" --reps 3 --dur 10 --baseline h2load \
    --port "${HTTP_PORT:-18082}" --out "$out" "$@" >&2
  echo
  echo "## HTTP/2 h2c GET vs nginx, $conns connections x $streams streams: barrage vs h2load — $out"
  echo
  python3 "$BENCH_HERE/lib/peer_report.py" "$out" --unit req --rate-vs h2load --rate-min 1.0 \
    --cpu-vs h2load --cpu-max 0.8
done
