#!/usr/bin/env bash
# The BeetleX test shape with barrage.exe under wine: 1,000 connections each sending a 19-byte
# message every 50 ms (20,000 messages/s) to `barrage.exe serve echo` (one thread), the server
# monitored by its Windows pid (CPU, working set, private bytes, handles, threads; machine CPU
# and the other processes' share), with the readiness table and an HTML report; then the same
# shape with the Linux build against the Linux echo server, on the same machine, for scale.
# Counts are reconciled with the server's own (--stats) for both.
#
#   bench/beetlex-wine.sh              # 60 s each, after a 20 s warm-up (~3.5 min)
#   DUR=30s WARMUP=15s bench/beetlex-wine.sh
#
# Loopback only; every process is stopped by its PID. Needs: wine, mingw-w64 (the Rust target
# x86_64-pc-windows-gnu), python3. Under wine, socket calls go through the wine server (one
# process for the prefix): see README.md "Windows" for what that means for these figures.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need wine x86_64-w64-mingw32-gcc python3
DUR="${DUR:-60s}"
WARMUP="${WARMUP:-20s}"
build_barrage
echo "[bench] cargo build --release --target x86_64-pc-windows-gnu -p barrage" >&2
(cd "$REPO" && cargo build --release --target x86_64-pc-windows-gnu -p barrage >&2)
EXE="$WORKDIR/barrage.exe"
cp "${CARGO_TARGET_DIR:-$REPO/target}/x86_64-pc-windows-gnu/release/barrage.exe" "$EXE"
out="$WORKDIR/results/beetlex-wine-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
export WINEPREFIX="$WORKDIR/wine-prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree=;mshtml="
unset DISPLAY
if [[ ! -d "$WINEPREFIX/drive_c" ]]; then
  mkdir -p "$WINEPREFIX" && wineboot --init >/dev/null 2>&1
fi
# wine 8 lacks bcryptprimitives.dll (Rust's std needs it): the tests' stand-in.
x86_64-w64-mingw32-gcc -O2 -shared -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
  "$REPO/tests/wine/bcryptprimitives.c" "$REPO/tests/wine/bcryptprimitives.def" -ladvapi32
echo "[bench] results in $out" >&2

# one_side NAME SERVER... -- CLIENT...: the server on a free port, its pid from its banner, the
# run against it, Ctrl-C (SIGINT) to the server, both JSONs kept.
one_side() {
  local name="$1" port="$2"; shift 2
  local server=() client=()
  while [[ "$1" != -- ]]; do server+=("$1"); shift; done
  shift
  client=("$@")
  "${server[@]}" serve echo --listen "127.0.0.1:$port" --threads 1 --exit-after 600s \
    --stats "$out/$name-server.json" >"$out/$name-server.txt" 2>&1 &
  local spid=$!
  for _ in $(seq 100); do grep -q "pid " "$out/$name-server.txt" 2>/dev/null && break; sleep 0.1; done
  local wpid
  wpid=$(grep -o "pid [0-9]*" "$out/$name-server.txt" | cut -d' ' -f2)
  "${client[@]}" "tcp://127.0.0.1:$port" -c 1000 --interval 50ms -t 1 -d "$DUR" --warmup "$WARMUP" \
    --monitor "$wpid" --recovery 5s --report "$out/$name.html" --json "$out/$name.json" --no-tui \
    >"$out/$name.txt" 2>"$out/$name.err" || true
  # wine turns SIGINT into Ctrl-C; a background job of this script ignores SIGINT (and barrage
  # keeps an ignored signal ignored), so the Linux server gets SIGTERM.
  if [[ "${server[0]}" == wine ]]; then kill -INT "$spid"; else kill -TERM "$spid"; fi
  wait "$spid" || true
}
port=$((20000 + RANDOM % 20000))
one_side windows "$port" wine "$EXE" -- wine "$EXE"
one_side linux "$((port + 1))" "$BARRAGE" -- "$BARRAGE"

python3 "$BENCH_HERE/lib/beetlex_report.py" "$out"
