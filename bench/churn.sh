#!/bin/bash
# bench/churn.sh [--quick] [--rounds N] [--out DIR] -- connection setup
# rate: arkbench with requests_per_connection = 1 (a new connection per
# round trip) against the raw C loop build/crr_loop (bench/crr_loop.c:
# connect, write, read the echo, close, again), in one run.
#
# One server for both, started once: `arkbench serve --protocol tcp
# --framing raw --payload 64 --topology sharded:1`. The two clients have
# the same shape: 64 connections, 64 B, one thread (arkbench sharded:1:
# bench/churn_client.lua; crr_loop --connections 64 --threads 1). Each
# round runs both, which goes first alternating from round to round.
# Printed: each round's connections/s, the medians, and arkbench/raw loop
# (goal >= 0.8).
#
# A build whose arkbench does not know requests_per_connection yet (its
# scenario check refuses the key) runs the raw loop only and says so.
# Needs a build ($ARKBENCH_BUILD_DIR, default build/) with arkbench and
# crr_loop. On loopback the client's TIME_WAIT ports are reused (Linux's
# default net.ipv4.tcp_tw_reuse = 2); with it off a long run can run out of
# ephemeral ports.
# --quick: 1 round, 0.2 s warm-up, 1 s measured (tests the script).
# --rounds N: rounds (default 3; 0.5 s warm-up, 2 s measured per run).
# --out DIR: logs and each run's folder (default results/churn/<UTC>).
# Exit: 0 done (the verdict is printed, not the exit code), 1 a run failed,
# 2 wrong command line.
set -uo pipefail
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
TOOL=churn
. "$ROOT/bench/bench_lib.sh"
bench_options "$@"
[ -x "$ARK" ] || { echo "$TOOL: no $ARK: build first (cmake --build build)" >&2; exit 1; }
[ -x "$CRR" ] || { echo "$TOOL: no $CRR: build first (cmake --build build --target crr_loop)" >&2; exit 1; }
bench_out churn
trap stop_servers EXIT

# does this arkbench know the key? (--list checks the scenario, runs nothing)
HAVE_K=0
if "$ARK" run "$ROOT/bench/churn_client.lua" --list --set target=127.0.0.1:9 \
     --set requests_per_connection=1 >"$OUT/key-check.log" 2>&1; then
  HAVE_K=1
fi

say "churn: connections/s, arkbench requests_per_connection = 1 vs a raw C connect/echo/close loop, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "$(load_line); tcp raw 64 B, 64 connections, 1 thread per client; $ROUNDS round(s), warm-up $WARMUP s, $DURATION s measured per run"
[ "$HAVE_K" = 1 ] || say "this arkbench does not know requests_per_connection ("$(head -c 80 "$OUT/key-check.log")..."): the raw loop runs alone"
start_server srv "$ARK" serve --protocol tcp --framing raw --payload 64 --topology sharded:1
FAILED=0 ARK_RATES="" RAW_RATES=""
ark_run() {
  local dir="$OUT/ark-$1" v
  "$ARK" run "$ROOT/bench/churn_client.lua" --set target="127.0.0.1:$SRV_PORT_srv" \
    --set requests_per_connection=1 --set warmup="$WARMUP" --set duration="$DURATION" \
    --out "$dir" >"$dir.log" 2>&1
  v=$(ark_value "$dir" connections_per_s)
  [ "$v" != FAILED ] || { FAILED=1; step "the arkbench run failed (log: $dir.log)"; }
  echo "$v"
}
raw_run() {
  local log="$OUT/raw-$1.log" v
  "$CRR" --connect "127.0.0.1:$SRV_PORT_srv" --connections 64 --threads 1 --payload 64 \
    --warmup "$WARMUP" --duration "$DURATION" >"$log" 2>&1 || { FAILED=1; step "crr_loop: errors (log: $log)"; }
  v=$(sed -n 's/.*"connections_per_s":\([0-9.]*\).*/\1/p' "$log" | awk '{ printf "%.0f\n", $1 }')
  echo "${v:-FAILED}"
}
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="ark raw"; else order="raw ark"; fi
  [ "$HAVE_K" = 1 ] || order="raw"
  line="round $r:"
  for side in $order; do
    if [ "$side" = ark ]; then v=$(ark_run "$r"); ARK_RATES="$ARK_RATES $v"; line="$line arkbench $v conn/s;"
    else v=$(raw_run "$r"); RAW_RATES="$RAW_RATES $v"; line="$line raw loop $v conn/s;"; fi
    [ "$v" != FAILED ] || FAILED=1  # the run was a subshell: its FAILED=1 is lost
  done
  say "$line"
done
stop_servers
trap - EXIT
A=$(median $ARK_RATES) R=$(median $RAW_RATES)
say ""
say "median connections/s: arkbench (K = 1) $A; raw C loop $R"
say "$(verdict "arkbench/raw loop" "$(ratio "$A" "$R")" 0.8)"
say "server: $(grep -o '"connections":[0-9]*' "$OUT/server-srv.log" | head -1) accepted in all (server-srv.log)"
say "$(load_line) (at the end)"
say "results: $OUT"
exit "$FAILED"
