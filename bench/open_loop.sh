#!/bin/bash
# bench/open_loop.sh [--quick] [--rounds N] [--out DIR] -- issue 12's
# open-loop benchmark, in one run:
#   (a) how closely the schedule is kept: bench/open_loop.lua (tcp 1 KiB,
#       sharded:1; 20,000 msg/s over 16 connections and 1,000 msg/s on
#       one, rate_precision sleep and spin, 3 repetitions each):
#       send_lag_us p50/p99 (goal, spin: p99 <= 5 us; sleep: p99 <= 1.2 x
#       the timer floor's p99, in (c)) and rate_achieved / rate_asked
#       (goal within 0.5 %);
#   (b) client CPU per round trip, open vs closed loop: a server of fixed
#       capacity (`arkbench serve --work N`, its own process; N from
#       $OPEN_LOOP_WORK, default 20000) loaded by
#       bench/open_loop_client.lua (16 x 16) closed loop, which runs it at
#       its capacity C, then open loop at rate = C / 2 (messages that
#       arrive one by one cost the server more than the closed loop's
#       batches: at 0.95 C the open loop's rate is not met here); the
#       client's (user + sys) CPU seconds / completed, each side's median
#       over the rounds, alternating which goes first (goal open/closed
#       <= 1.1);
#   (c) the machine's floor for both: build/timer_floor (bench/
#       timer_floor.c) sleeps in epoll on a timerfd until each instant of
#       the same two schedules, with no socket: how late a bare wake comes
#       (lag p50/p99) and its CPU; arkbench's send_lag and open-loop CPU
#       per round trip beside it (ratios arkbench / floor; goals, sleep
#       mode: send lag p99 <= 1.2 x the floor's, CPU per round trip <=
#       1.2 x a wake's).
# Needs a build ($ARKBENCH_BUILD_DIR, default build/) with arkbench.
# --quick: 1 round, 0.2 s warm-up, 1 s measured, (a) with 1 repetition
#          (tests the script).
# --rounds N: rounds of (b) (default 3; 0.5 s warm-up, 2 s measured).
# --out DIR: logs and each run's folder (default results/open_loop/<UTC>).
# Exit: 0 done (the verdicts are printed, not the exit code), 1 a run
# failed, 2 wrong command line.
set -uo pipefail
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
TOOL=open_loop
. "$ROOT/bench/bench_lib.sh"
bench_options "$@"
[ -x "$ARK" ] || { echo "$TOOL: no $ARK: build first (cmake --build build)" >&2; exit 1; }
bench_out open_loop
trap stop_servers EXIT
WORK=${OPEN_LOOP_WORK:-20000}

# FIELD's number in the first run of DIR/runs.jsonl (as written), or FAILED
num() { grep -o "\"$2\":[0-9.e+-]*" "$1/runs.jsonl" 2>/dev/null | head -1 | cut -d: -f2 | grep . || echo FAILED; }

say "open_loop: schedule accuracy and CPU per round trip, open vs closed loop, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "$(load_line)"
FAILED=0

# ---- (a) ----------------------------------------------------------------
REPS=3
[ "$QUICK" = 1 ] && REPS=1
dir="$OUT/accuracy"
"$ARK" run "$ROOT/bench/open_loop.lua" --set repetitions="$REPS" \
  $([ "$QUICK" = 1 ] && echo "--set warmup=$WARMUP --set duration=$DURATION") \
  --set rate_strict=false --out "$dir" >"$dir.log" 2>&1 || { FAILED=1; step "(a) failed (log: $dir.log)"; }
say ""
say "(a) schedule accuracy, tcp 1 KiB sharded:1, $REPS repetition(s) per case:"
luajit - "$dir/runs.jsonl" <<'LUA' 2>&1 | tee -a "$SUMMARY"
  local cjson = require("cjson")
  local worst_lag, worst_dev = {}, 0
  for line in io.lines(arg[1]) do
    local r = cjson.decode(line)
    if r.send_lag_us and r.rate_asked then
      local dev = math.abs(r.rate_achieved / r.rate_asked - 1)
      local prec = r.rate_precision or "sleep"
      print(string.format("  %6d msg/s over %2d connection(s), %-5s rep %d: send_lag p50 %.1f us, p99 %.1f us; achieved/asked %.4f%s",
        r.rate_asked, r.case.clients, prec, r.repetition, r.send_lag_us.p50, r.send_lag_us.p99,
        r.rate_achieved / r.rate_asked, r.rate_met and "" or " (rate not met)"))
      worst_lag[prec] = math.max(worst_lag[prec] or 0, r.send_lag_us.p99)
      if dev > worst_dev then worst_dev = dev end
    end
  end
  if worst_lag.spin then
    print(string.format("  spin: worst send_lag p99 %.1f us (goal <= 5): %s", worst_lag.spin,
      worst_lag.spin <= 5 and "PASS" or "ABOVE"))
  end
  if worst_lag.sleep then
    print(string.format("  sleep: worst send_lag p99 %.1f us (goal <= 1.2 x the timer floor's p99: (c))", worst_lag.sleep))
  end
  print(string.format("  worst |achieved/asked - 1| %.3f %% (goal <= 0.5 %%): %s", worst_dev * 100,
    worst_dev <= 0.005 and "PASS" or "ABOVE"))
LUA

# ---- (b) ----------------------------------------------------------------
say ""
say "(b) client CPU per round trip against arkbench serve --work $WORK (tcp 1 KiB, 16 x 16, sharded:1), $ROUNDS round(s):"
start_server srv "$ARK" serve --protocol tcp --topology sharded:1 --work "$WORK"
TARGET="127.0.0.1:$SRV_PORT_srv"
one() { # one MODE ROUND [RATE]: prints "RT/S CPU_US_PER_RT"
  local dir="$OUT/$1-$2" rt u s n
  "$ARK" run "$ROOT/bench/open_loop_client.lua" --set target="$TARGET" \
    --set warmup="$WARMUP" --set duration="$DURATION" ${3:+--set rate=$3} \
    --out "$dir" >"$dir.log" 2>&1
  rt=$(num "$dir" round_trips_per_s) u=$(num "$dir" cpu_user_s) s=$(num "$dir" cpu_sys_s) n=$(num "$dir" completed)
  if [ "$rt" = FAILED ] || [ "$n" = FAILED ]; then FAILED=1; step "the $1 run failed (log: $dir.log)"; echo "FAILED FAILED"; return; fi
  awk -v rt="$rt" -v u="$u" -v s="$s" -v n="$n" 'BEGIN { printf "%.0f %.3f\n", rt, (u + s) / n * 1e6 }'
}
# the capacity, closed loop, before the rounds
set -- $(one closed 0)
CAP=$1
[ "$CAP" != FAILED ] || FAILED=1  # one ran in a subshell: its FAILED=1 is lost
RATE=$(awk -v c="$CAP" 'BEGIN { if (c ~ /^[0-9.]+$/) printf "%.0f", c / 2; else print "" }')
[ -n "$RATE" ] || { say "  the capacity run failed"; exit 1; }
say "  capacity (closed loop): $CAP rt/s; open loop at $RATE msg/s"
CL_RT="" CL_CPU="" OP_RT="" OP_CPU=""
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="closed open"; else order="open closed"; fi
  line="  round $r:"
  for m in $order; do
    if [ "$m" = closed ]; then set -- $(one closed "$r"); CL_RT="$CL_RT $1"; CL_CPU="$CL_CPU $2"
    else set -- $(one open "$r" "$RATE"); OP_RT="$OP_RT $1"; OP_CPU="$OP_CPU $2"; fi
    [ "$1" != FAILED ] || FAILED=1
    line="$line $m $1 rt/s, $2 us CPU/rt;"
  done
  say "$line"
done
stop_servers
trap - EXIT

mcpu() { printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | awk '{ v[++n] = $1 } END { if (n == 0) print "n/a"; else if (n % 2) print v[(n + 1) / 2]; else printf "%.3f\n", (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
C=$(mcpu $CL_CPU) O=$(mcpu $OP_CPU)
say "  median: closed $(median $CL_RT) rt/s, $C us CPU/rt; open $(median $OP_RT) rt/s, $O us CPU/rt"
say "  $(awk -v o="$O" -v c="$C" 'BEGIN { if (o !~ /^[0-9.]+$/ || c !~ /^[0-9.]+$/ || c == 0) print "open/closed CPU per round trip: n/a (goal <= 1.1)"; else printf "open/closed CPU per round trip: %.2f (goal <= 1.1): %s\n", o / c, (o / c <= 1.1 ? "PASS" : "ABOVE") }')"

# ---- (c) ----------------------------------------------------------------
say ""
say "(c) the floor: a bare timerfd wake at each instant of the schedule (build/timer_floor, no socket):"
FLOOR=$BUILD/timer_floor
if [ ! -x "$FLOOR" ]; then
  say "  n/a: no $FLOOR (cmake --build build --target timer_floor)"
else
  for rate in 20000 1000 "$RATE"; do
    "$FLOOR" --rate "$rate" --warmup "$WARMUP" --duration "$DURATION" >"$OUT/floor-$rate.json" 2>"$OUT/floor-$rate.log" ||
      { FAILED=1; step "timer_floor --rate $rate failed (log: $OUT/floor-$rate.log)"; continue; }
  done
  luajit - "$OUT" "$dir/runs.jsonl" "$O" "$RATE" <<'LUA' 2>&1 | tee -a "$SUMMARY"
    local cjson = require("cjson")
    local out, runs, open_cpu, brate = arg[1], arg[2], tonumber(arg[3]), tonumber(arg[4])
    local worst = {}
    for line in io.lines(runs) do
      local r = cjson.decode(line)
      if r.send_lag_us and r.rate_asked and (r.rate_precision or "sleep") == "sleep" then
        worst[r.rate_asked] = math.max(worst[r.rate_asked] or 0, r.send_lag_us.p99)
      end
    end
    local function floor(rate)
      local f = io.open(out .. "/floor-" .. rate .. ".json")
      local fl = f and cjson.decode(f:read("*a"))
      if f then f:close() end
      return fl
    end
    for _, rate in ipairs({ 20000, 1000 }) do
      local fl, ark = floor(rate), worst[rate]
      if fl then
        print(string.format("  %6d wakes/s: lag p50 %.1f us, p99 %.1f us, %.1f us CPU per wake; arkbench's worst send_lag p99 %s",
          rate, fl.lag_us.p50, fl.lag_us.p99, fl.cpu_us_per_wake,
          ark and string.format("%.1f us (%.2f x the floor's; sleep mode, goal <= 1.2)", ark, ark / fl.lag_us.p99) or "n/a"))
      end
    end
    local fl = brate and floor(brate)
    if fl and open_cpu then
      print(string.format("  %6d wakes/s ((b)'s rate): %.1f us CPU per wake; arkbench's open-loop CPU per round trip %.1f us (%.2f x a wake's; goal <= 1.2)",
        brate, fl.cpu_us_per_wake, open_cpu, open_cpu / fl.cpu_us_per_wake))
    end
LUA
fi
say "$(load_line) (at the end)"
say "results: $OUT"
exit "$FAILED"
