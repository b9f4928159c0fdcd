#!/usr/bin/env bash
# The README's two commands on a fresh clone, timed: wall seconds, CPU seconds (user + system of
# the command and its children) and what they leave on disk (target/, and the cargo home they
# filled: crates downloaded from crates.io). This is how README.md's set-up figures are measured.
#
#   bench/setup-cost.sh [REPO] [WORKDIR]
#
# REPO (default: this checkout) is cloned into WORKDIR/clone (default /tmp/barrage-setup) and
# built with an empty cargo home (WORKDIR/cargo-home, so every crate is downloaded, as on a new
# machine), then WORKDIR is left for a look (remove it yourself: several GB). Run it on a quiet
# machine: the wall times are the machine's. The tests' third-party programs (.ci/install) are
# used when installed (the line says whether they were); without them those tests skip.
# The demo sends traffic to loopback only and ends by itself; so do the tests.
set -euo pipefail
repo=$(cd "${1:-$(dirname "${BASH_SOURCE[0]}")/..}" && pwd)
work=${2:-/tmp/barrage-setup}
rm -rf "$work"
mkdir -p "$work"
git clone -q "$repo" "$work/clone"
cd "$work/clone"
export CARGO_HOME="$work/cargo-home"
export PATH="$CARGO_HOME/bin:$PATH:$HOME/.cargo/bin"
unset CARGO_TARGET_DIR CARGO_INCREMENTAL CI BARRAGE_WINE

mb() { du -sm "$1" 2>/dev/null | cut -f1; }
step() {
  local name=$1
  shift
  echo "== $name: $*" >&2
  /usr/bin/time -f "%e %U %S" -o "$work/$name.time" bash -c "$*" >"$work/$name.log" 2>&1 || {
    echo "$name failed: see $work/$name.log" >&2
    tail -20 "$work/$name.log" >&2
    exit 1
  }
  read -r wall user sys <"$work/$name.time"
  printf '| %s | %.0f s | %.0f s | %s MB | %s MB |\n' "$name" "$wall" "$(awk "BEGIN {print $user + $sys}")" \
    "$(mb target)" "$(mb "$CARGO_HOME")"
}

programs=present
for p in nginx redis-server memcached mosquitto chromium; do
  command -v "$p" >/dev/null || programs="missing ($p, ...)"
done
echo "fresh clone of $(git rev-parse --short HEAD) on $(nproc) cores, $(date -u +%F); .ci/install programs: $programs"
echo
echo "| command | wall | CPU (user + sys) | target/ after | cargo home after |"
echo "|---|---|---|---|---|"
step install 'cargo install --locked --path crates/barrage && barrage demo'
step test 'cargo xtask test'
echo
grep -E '^(skipped|left out)' "$work/test.log" | cut -c1-300 || true
grep -E '^test result' "$work/test.log" | awk '{p += $4; f += $6; i += $8} END {print "tests: " p " passed, " f " failed, " i " ignored"}'
