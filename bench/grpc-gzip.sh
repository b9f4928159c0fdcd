#!/usr/bin/env bash
# What `--compression gzip` costs per gRPC call (issue 45, item 6): barrage against grpc-go's
# compression example (tests/grpc-go/bin/features_compression_server, built by .ci/install;
# server on CPU 0, barrage -t 1 on CPU 1), the same unary calls plain and gzipped, reps
# interleaved with rotating order. The message is 1 KiB of text with a {seq} in it, so every
# call is rendered and gzipped anew (a message that never changes is gzipped once, at start).
#
# Reports barrage's CPU µs per call (its user + system time / completed calls) and bytes
# written per call, medians over reps, and gzip/plain as the median of per-rep ratios.
#
#   bench/grpc-gzip.sh [--reps N] [--calls N]      # default 5 reps x 100,000 calls
#
# Env: BARRAGE (default target/release/barrage). Traffic: 127.0.0.1 only; runs bounded by -n.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
reps=5
calls=100000
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --calls) calls=$2; shift 2 ;;
    *) echo "usage: $0 [--reps N] [--calls N]" >&2; exit 2 ;;
  esac
done
barrage=${BARRAGE:-target/release/barrage}
server=tests/grpc-go/bin/features_compression_server
[ -x "$barrage" ] || { echo "no $barrage: cargo build --release" >&2; exit 1; }
[ -x "$server" ] || { echo "no $server: run .ci/install" >&2; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 0 "$server" -port="$port" >/dev/null 2>&1 &
srv=$!
trap 'kill "$srv" 2>/dev/null || true' EXIT
sleep 0.5
dir=$(mktemp -d)
text=$(printf 'word %.0s' $(seq 1 200))
data="{\"message\":\"{seq} $text\"}"
run() { # $1: label, $2...: extra args; prints "cpu_us_per_call bytes_per_call"
  local label=$1; shift
  local json="$dir/$label.json"
  /usr/bin/time -f '%U %S' -o "$dir/time" taskset -c 1 "$barrage" \
    "grpc://127.0.0.1:$port/grpc.examples.echo.Echo/UnaryEcho" \
    --proto tests/grpc-go/echo.proto --data "$data" -c 4 --streams 8 -t 1 -n "$calls" \
    -q --json "$json" "$@" >/dev/null 2>"$dir/$label.err"
  python3 - "$json" "$dir/time" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
u, s = map(float, open(sys.argv[2]).read().split())
n = r["summary"]["exchanges"]["completed"]
w = r["summary"]["totals"]["bytes_written"]
print(f"{(u + s) * 1e6 / n:.3f} {w / n:.1f}")
EOF
}
plain=(); gz=(); ratio=()
for i in $(seq 1 "$reps"); do
  if [ $((i % 2)) = 1 ]; then
    p=$(run plain); g=$(run gzip --compression gzip)
  else
    g=$(run gzip --compression gzip); p=$(run plain)
  fi
  echo "rep $i: plain ${p% *} µs/call ${p#* } B/call; gzip ${g% *} µs/call ${g#* } B/call"
  plain+=("$p"); gz+=("$g")
  ratio+=("$(python3 -c "print(${g% *} / ${p% *})")")
done
python3 - "${plain[*]}" "${gz[*]}" "${ratio[*]}" <<'EOF'
import statistics, sys
def col(s, i): 
    v = s.split(); return [float(x) for x in v[i::2]]
p, g, r = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3].split()]
print(f"plain: {statistics.median(col(p,0)):.3f} µs/call, {statistics.median(col(p,1)):.0f} B/call")
print(f"gzip:  {statistics.median(col(g,0)):.3f} µs/call, {statistics.median(col(g,1)):.0f} B/call")
print(f"gzip/plain CPU per call: {statistics.median(r):.3f}x (per rep: {', '.join(f'{x:.3f}' for x in r)})")
EOF
