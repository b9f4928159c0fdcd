# Sourced by the bench/*.sh scripts. Builds barrage (release) and copies the binary to
# $BARRAGE (default /tmp/barrage-bench/barrage), so the benchmark runs a fixed copy while
# others may rebuild target/. Set BARRAGE_NO_BUILD=1 (or pass --no-build) to use the copy as is.
set -euo pipefail
BENCH_HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO="$(cd "$BENCH_HERE/.." && pwd)"
WORKDIR="${BARRAGE_BENCH_DIR:-/tmp/barrage-bench}"
BARRAGE="${BARRAGE:-$WORKDIR/barrage}"
mkdir -p "$WORKDIR"

build_barrage() {
  if [[ "${BARRAGE_NO_BUILD:-0}" == 1 ]]; then
    [[ -x "$BARRAGE" ]] || { echo "no binary at $BARRAGE (unset BARRAGE_NO_BUILD)" >&2; exit 2; }
  else
    echo "[bench] cargo build --release -p barrage" >&2
    (cd "$REPO" && cargo build --release -p barrage >&2)
    cp "${CARGO_TARGET_DIR:-$REPO/target}/release/barrage" "$BARRAGE.tmp.$$" && mv -f "$BARRAGE.tmp.$$" "$BARRAGE"
    # which source the copy was built from (HEAD, +dirty if crates/ had uncommitted changes)
    (cd "$REPO" && echo "$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- crates 2>/dev/null || echo '+dirty')") >"$BARRAGE.commit"
  fi
  echo "[bench] barrage: $BARRAGE ($("$BARRAGE" --version), built from git $(cat "$BARRAGE.commit" 2>/dev/null || echo unknown))" >&2
}

need() {
  for t in "$@"; do
    command -v "$t" >/dev/null || { echo "missing tool: $t (Debian: apt-get install -y redis-server redis-tools util-linux)" >&2; exit 2; }
  done
}

# The shared peer harness and the tools install-peers.sh put in its .tools/ (oha, k6, npm ws, the
# python websockets venv). /work/shared/bench is read-only here, so the install runs in a copy
# (cp -r ../shared/bench /tmp/peerbench && /tmp/peerbench/install-peers.sh). Sets PEERBENCH to
# $PEERBENCH if given, else the first of ../shared/bench and /tmp/peerbench that has .tools/bin,
# and puts the harness's tools on PATH (its lib/env.sh), so `need` sees them.
find_peerbench() {
  local shared="$REPO/../shared/bench"
  if [[ -z "${PEERBENCH:-}" ]]; then
    for d in "$shared" /tmp/peerbench; do
      [[ -d "$d/.tools/bin" ]] && { PEERBENCH="$(cd "$d" && pwd)"; break; }
    done
  fi
  if [[ -z "${PEERBENCH:-}" || ! -f "$PEERBENCH/lib/bench.py" ]]; then
    echo "no peer harness with installed tools (looked for .tools/bin in $shared and /tmp/peerbench)." >&2
    echo "install: rm -rf /tmp/peerbench && cp -r $shared /tmp/peerbench && chmod -R u+w /tmp/peerbench && /tmp/peerbench/install-peers.sh" >&2
    exit 2
  fi
  if [[ -d "$shared" && "$(cd "$shared" && pwd)" != "$PEERBENCH" ]] &&
     ! diff -rq -x .tools -x results "$shared" "$PEERBENCH" >/dev/null 2>&1; then
    echo "[bench] warning: harness copy $PEERBENCH differs from $shared (refresh: cp -r $shared/. $PEERBENCH/)" >&2
  fi
  # shellcheck disable=SC1091
  source "$PEERBENCH/lib/env.sh"
  echo "[bench] peer harness: $PEERBENCH" >&2
}

# Does the binary know this URL scheme yet? Probes 127.0.0.1:1 (nothing listens: refused at once), 1 s, 1 conn.
barrage_speaks() {
  local url="$1" err
  err="$(timeout 15 "$BARRAGE" "$url" -c 1 -d 1s -q 2>&1 >/dev/null || true)"
  ! grep -qi "unknown scheme" <<<"$err"
}
