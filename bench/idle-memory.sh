#!/usr/bin/env bash
# Generator memory per open, mostly idle connection: barrage at 10,000 connections vs 10, each
# connection sending one small message every 10 s, against `barrage serve echo` (1 thread) on
# 127.0.0.1. Server on CPU 0, generator on CPU 1. VmRSS sampled once per second after every
# connection is up. Target: <= 2 KiB per connection.
#
#   bench/idle-memory.sh                       # 3 reps x {10, 10000} conns x 15 s (~2 min)
#   bench/idle-memory.sh --conns 15000 --reps 1
#
# Options (lib/idle_memory.py): --conns N --base N --reps N --interval D --dur S.
# Env: BARRAGE, BARRAGE_NO_BUILD=1 (see lib/common.sh). Needs fd limit > conns + 100 per process.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
need taskset python3
build_barrage
out="$WORKDIR/results/idle-memory-$(date +%Y%m%d-%H%M%S)"
echo "[bench] fd limit $(ulimit -n); results in $out" >&2
echo "## Idle-connection memory (barrage generator) — $out"
echo
python3 "$BENCH_HERE/lib/idle_memory.py" --barrage "$BARRAGE" --out "$out" "$@"
