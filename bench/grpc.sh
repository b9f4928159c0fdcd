#!/usr/bin/env bash
# barrage vs ghz: gRPC unary calls (routeguide.RouteGuide/GetFeature) against grpc-go's example
# route guide server (tests/grpc-go, built with Go as .ci/install does; GOMAXPROCS=1; not the
# greeter, which logs every call), in the
# shared peer harness: the server pinned to CPU 0, each generator to CPU 1 (ghz --cpus 1,
# barrage -t 1), reps interleaved with rotating order, medians and per-rep ratios. Two shapes,
# one harness run each: 10 connections x 10 calls in flight (ghz --connections 10 -c 100,
# barrage -c 10 --streams 10) and 50 connections x 1.
#
#   bench/grpc.sh                # 3 reps x 10 s x 2 shapes (~3 min)
#   bench/grpc.sh --reps 5       # any lib/bench.py option is passed on
#
# Target (issue 28): barrage req/s >= 2 x ghz's and barrage generator CPU µs/req <= 0.5 x ghz's
# (medians of per-rep ratios). When the one-core Go server is the limit, req/s is the server's
# and the CPU ratio is what says how the generators compare.
# The harness is copied to $WORKDIR/peerbench-grpc with a `grpc` suite added (the route guide as its
# server) and a parser for ghz's JSON (the shared copy is not changed).
# Env: BARRAGE, BARRAGE_NO_BUILD=1, GRPC_PORT (default 18090), GHZ (default: ghz on PATH, else
# `go install github.com/bojand/ghz/cmd/ghz@v0.120.0` into $WORKDIR/go/bin). Needs: Go, taskset,
# python3.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
export PATH="$PATH:/usr/local/go/bin"
need taskset python3 go
build_barrage
shared="$REPO/../shared/bench"
[[ -f "$shared/lib/bench.py" ]] || { echo "no peer harness at $shared" >&2; exit 2; }

server_bin="$REPO/tests/grpc-go/bin/route_guide_server"
if [[ ! -x "$server_bin" ]]; then
  (cd "$REPO/tests/grpc-go" && go build -o bin/route_guide_server google.golang.org/grpc/examples/route_guide/server) >&2
fi
GHZ="${GHZ:-$(command -v ghz || true)}"
if [[ -z "$GHZ" ]]; then
  GOBIN="$WORKDIR/go/bin" go install github.com/bojand/ghz/cmd/ghz@v0.120.0 >&2
  GHZ="$WORKDIR/go/bin/ghz"
fi
proto="$REPO/tests/grpc-go/route_guide.proto"
# Doubled braces: the harness fills its {placeholders} with Python's str.format.
data='{{"latitude":409146138,"longitude":-746188906}}'

H="$WORKDIR/peerbench-grpc"
rm -rf "$H" && mkdir -p "$H"
(cd "$shared" && tar --exclude=./.tools --exclude=./results -cf - .) | (cd "$H" && tar -xf -)
chmod -R u+w "$H"
python3 - "$H" "$server_bin" <<'PY'
import sys
h, server_bin = sys.argv[1], sys.argv[2]
p = f"{h}/lib/bench.py"
s = open(p).read()
s = s.replace('choices=["http", "redis", "ws", "conns"]', 'choices=["http", "redis", "ws", "conns", "grpc"]', 1)
s = s.replace('SUITE_DEFAULTS = {', 'SUITE_DEFAULTS = {"grpc": dict(port=18090, conns="10", baseline="ghz", unit="req", keys=["conns"]),\n                  ', 1)
s = s.replace('''    else:
        server = start_ws(srvdir, port, a.ws_server)''', f'''    elif a.suite == "grpc":
        server = Server("grpc-go-route-guide", ["{server_bin}", "-port", str(port)], port, 0, srvdir,
                        env=dict(os.environ, GOMAXPROCS="1"))
        url = f"grpc://{{host}}:{{port}}/routeguide.RouteGuide/GetFeature"
    else:
        server = start_ws(srvdir, port, a.ws_server)''', 1)
assert 'grpc-go-route-guide' in s and '"grpc": dict' in s
open(p, "w").write(s)
with open(f"{h}/lib/parsers.py", "a") as f:
    f.write('''

def parse_ghz_json(out, err, rundir, params):
    """ghz -O json: count, rps, latencyDistribution (ns), statusCodeDistribution."""
    d = _json_tail(out)
    codes = d.get("statusCodeDistribution") or {}
    ok = int(codes.get("OK", 0))
    r = {"requests": ok, "rps": float(d.get("rps", 0.0)), "errors": int(d.get("count", 0)) - ok}
    for x in d.get("latencyDistribution") or []:
        if x.get("percentage") in (50, 99):
            r["p%d_ms" % x["percentage"]] = x["latency"] / 1e6
    if "average" in d:
        r["mean_ms"] = d["average"] / 1e6
    return r
''')
PY
grep -q "def check_cmd_loopback" "$H/lib/bench.py"

stamp="$(date +%Y%m%d-%H%M%S)"
for shape in "10 10" "50 1"; do
  read -r conns streams <<<"$shape"
  # ghz first: the harness's warm-up tool is the file's first line. ghz's workers (-c) share
  # its --connections; barrage keeps --streams calls in flight on each connection.
  cat >"$H/contenders/grpc.txt" <<CONT
ghz     | ghz_json     | $GHZ --insecure --proto $proto --call routeguide.RouteGuide.GetFeature -d '$data' --connections {conns} -c $((conns * streams)) --cpus 1 -z {dur}s -O json 127.0.0.1:{port}
barrage | barrage_json | $BARRAGE grpc://127.0.0.1:{port}/routeguide.RouteGuide/GetFeature --proto $proto --data '$data' -c {conns} --streams $streams -t 1 -d {dur}s -q --json {rundir}/barrage.json
CONT
  out="$WORKDIR/results/grpc-$stamp-c$conns-m$streams"
  python3 "$H/lib/bench.py" grpc --conns "$conns" --reps 3 --dur 10 --baseline ghz \
    --port "${GRPC_PORT:-18090}" --out "$out" "$@" >&2
  echo
  echo "## gRPC unary vs grpc-go's route guide (GetFeature), $conns connections x $streams calls in flight: barrage vs ghz — $out"
  echo
  python3 "$BENCH_HERE/lib/peer_report.py" "$out" --unit req --rate-vs ghz --rate-min 2.0 \
    --cpu-vs ghz --cpu-max 0.5
done
