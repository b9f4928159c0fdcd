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
    cp "$REPO/target/release/barrage" "$BARRAGE.tmp.$$" && mv -f "$BARRAGE.tmp.$$" "$BARRAGE"
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
