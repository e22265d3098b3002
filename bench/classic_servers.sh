#!/bin/bash
# bench/classic_servers.sh [--quick] [--rounds N] [--out DIR] -- the classic
# study's own comparison: one client, two servers, in one run.
#
# The client is arkbench's (bench/classic_client.lua: tcp, framing raw,
# 1000 connections x 64 B, window 1, sharded:2); the servers, both started
# once and kept for the whole run:
#   arkbench  `arkbench serve --protocol tcp --framing raw --payload 64
#             --topology sharded:2` (callback execution),
#   asio      `asio_echo --mode server --framing raw --payload 64
#             --topology sharded:2` (2 io_contexts x 1 thread, callbacks).
# Each round runs the client against one server, then against the other;
# which goes first alternates from round to round. Printed: each round's
# round trips/s, the medians, and arkbench/asio (goal >= 0.9).
#
# Needs a build ($ARKBENCH_BUILD_DIR, default build/) with arkbench and
# asio_echo (g++ and libasio-dev). 1000 connections need ~2100 fds per
# process side; the default RLIMIT_NOFILE of most hosts allows that.
# --quick: 1 round, 0.2 s warm-up, 1 s measured (tests the script).
# --rounds N: rounds (default 3; 0.5 s warm-up, 2 s measured per run).
# --out DIR: logs and each run's folder (default results/classic_servers/<UTC>).
# Exit: 0 done (the verdict is printed, not the exit code), 1 a run failed,
# 2 wrong command line.
set -uo pipefail
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
TOOL=classic_servers
. "$ROOT/bench/bench_lib.sh"
bench_options "$@"
[ -x "$ARK" ] || { echo "$TOOL: no $ARK: build first (cmake --build build)" >&2; exit 1; }
[ -x "$ASIO" ] || { echo "$TOOL: no $ASIO (apt-get install g++ libasio-dev, re-run cmake, build)" >&2; exit 1; }
bench_out classic_servers
trap stop_servers EXIT

say "classic_servers: arkbench's client (tcp raw, 1000 x 64 B, window 1) against two servers, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "$(load_line); $ROUNDS round(s), warm-up $WARMUP s, $DURATION s measured per run, order alternated"
start_server ark "$ARK" serve --protocol tcp --framing raw --payload 64 --topology sharded:2
start_server asio "$ASIO" --mode server --framing raw --payload 64 --topology sharded:2
FAILED=0 ARK_RATES="" ASIO_RATES=""
client() { # client SIDE PORT ROUND: one run, its rt/s printed
  local dir="$OUT/$1-$3" v
  "$ARK" run "$ROOT/bench/classic_client.lua" --set target="127.0.0.1:$2" \
    --set warmup="$WARMUP" --set duration="$DURATION" --out "$dir" >"$dir.log" 2>&1
  v=$(ark_value "$dir" round_trips_per_s)
  [ "$v" != FAILED ] || { FAILED=1; step "the run against $1 failed (log: $dir.log)"; }
  echo "$v"
}
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="ark asio"; else order="asio ark"; fi
  line="round $r:"
  for side in $order; do
    port_var=SRV_PORT_$side
    v=$(client "$side" "${!port_var}" "$r")
    [ "$v" != FAILED ] || FAILED=1  # client ran in a subshell: its FAILED=1 is lost
    if [ "$side" = ark ]; then ARK_RATES="$ARK_RATES $v"; else ASIO_RATES="$ASIO_RATES $v"; fi
    line="$line $side $v rt/s;"
  done
  say "$line"
done
stop_servers
trap - EXIT
A=$(median $ARK_RATES) S=$(median $ASIO_RATES)
say ""
say "median round trips/s: arkbench serve (callback, sharded:2) $A; asio_echo raw (sharded:2) $S"
say "$(verdict "arkbench/asio" "$(ratio "$A" "$S")" 0.9)"
say "served messages: arkbench $(grep -o '"messages":[0-9]*' "$OUT/server-ark.log" | cut -d: -f2)," \
    "asio $(grep -o '"server_messages":[0-9]*' "$OUT/server-asio.log" | cut -d: -f2) (the servers' lines: server-*.log)"
say "$(load_line) (at the end)"
say "results: $OUT"
exit "$FAILED"
