#!/bin/bash
# bench/coro_scale.sh [--quick] [--rounds N] [--out DIR] -- coroutine vs
# callback execution at scale, in one run: bench/coro_scale.lua (tcp,
# 2000 connections x 64 KiB, window 1, sharded:1, both ends in one
# process) with execution = callback and execution = coroutine, one run
# each per round, which goes first alternating from round to round.
# Printed: each round's round trips/s and RSS, the medians, and
# coroutine/callback (goal >= 0.8).
#
# Needs a build ($ARKBENCH_BUILD_DIR, default build/) with arkbench.
# 2000 connections are 4000 sockets in one process.
# --quick: 1 round, 200 connections, 0.2 s warm-up, 1 s measured (tests
# the script; sizes a loaded 2-core machine completes).
# --rounds N: rounds (default 3; 0.5 s warm-up, 2 s measured per run).
# --out DIR: each run's folder and log (default results/coro_scale/<UTC>).
# Exit: 0 done (the verdict is printed, not the exit code), 1 a run failed,
# 2 wrong command line.
set -uo pipefail
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
TOOL=coro_scale
. "$ROOT/bench/bench_lib.sh"
bench_options "$@"
[ -x "$ARK" ] || { echo "$TOOL: no $ARK: build first (cmake --build build)" >&2; exit 1; }
bench_out coro_scale
CLIENTS=2000
[ "$QUICK" = 1 ] && CLIENTS=200

say "coro_scale: coroutine vs callback, tcp $CLIENTS x 64 KiB, window 1, sharded:1, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "$(load_line); $ROUNDS round(s), warm-up $WARMUP s, $DURATION s measured per run, order alternated"
FAILED=0 CB="" CO=""
one() { # one EXECUTION ROUND: one run; prints "RT/S RSS_MIB"
  local dir="$OUT/$1-$2" v rss
  "$ARK" run "$ROOT/bench/coro_scale.lua" --set execution="$1" --set clients="$CLIENTS" \
    --set warmup="$WARMUP" --set duration="$DURATION" --out "$dir" >"$dir.log" 2>&1
  v=$(ark_value "$dir" round_trips_per_s)
  rss=$(ark_value "$dir" rss_peak_bytes)
  [ "$v" != FAILED ] || { FAILED=1; step "the $1 run failed (log: $dir.log)"; }
  echo "$v $(awk -v b="$rss" 'BEGIN { if (b ~ /^[0-9]+$/) printf "%.0f", b / 1048576; else print "?" }')"
}
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="callback coroutine"; else order="coroutine callback"; fi
  line="round $r:"
  for ex in $order; do
    set -- $(one "$ex" "$r")
    [ "$1" != FAILED ] || FAILED=1  # one ran in a subshell: its FAILED=1 is lost
    if [ "$ex" = callback ]; then CB="$CB $1"; else CO="$CO $1"; fi
    line="$line $ex $1 rt/s (RSS peak $2 MiB);"
  done
  say "$line"
done
A=$(median $CB) C=$(median $CO)
say ""
say "median round trips/s: callback $A; coroutine $C"
say "$(verdict "coroutine/callback" "$(ratio "$C" "$A")" 0.8)"
say "$(load_line) (at the end)"
say "results: $OUT"
exit "$FAILED"
