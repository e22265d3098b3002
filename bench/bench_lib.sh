# bench/bench_lib.sh -- sourced by bench/classic_servers.sh, coro_scale.sh
# and churn.sh: options, servers in the background, medians.  Not run alone.
#
# Needs ROOT and TOOL set by the caller.  Defines BUILD, ARK, ASIO, CRR,
# bench_options "$@" (sets QUICK, ROUNDS, OUT, WARMUP, DURATION), say, step,
# start_server NAME CMD... (sets SRV_PID_<NAME>, SRV_PORT_<NAME>),
# stop_servers, median VALUES..., ratio A B, ark_value DIR FIELD.

BUILD=${ARKBENCH_BUILD_DIR:-$ROOT/build}
ARK=$BUILD/arkbench
ASIO=$BUILD/asio_echo
CRR=$BUILD/crr_loop
SERVERS=""

# The options every script takes: --quick, --rounds N, --out DIR, --help
# (the script's header comment).  Exits 2 on a wrong command line.
bench_options() {
  local usage="usage: bench/$TOOL.sh [--quick] [--rounds N] [--out DIR]"
  QUICK=0 ROUNDS="" OUT=""
  while [ $# -gt 0 ]; do
    case "$1" in
      -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
      --quick) QUICK=1 ;;
      --rounds) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; ROUNDS=$2; shift ;;
      --out) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; OUT=$2; shift ;;
      *) echo "$TOOL: unknown argument '$1'" >&2; echo "$usage" >&2; exit 2 ;;
    esac
    shift
  done
  # --quick tests the script: sizes a loaded 2-core machine completes (a
  # busy host may still fail a run: that reads FAILED and exit 1)
  if [ "$QUICK" = 1 ]; then WARMUP=0.2 DURATION=1 ROUNDS=${ROUNDS:-1}
  else WARMUP=0.5 DURATION=2 ROUNDS=${ROUNDS:-3}; fi
  case "$ROUNDS" in ''|*[!0-9]*|0) echo "$TOOL: --rounds: got '$ROUNDS'; expected an integer >= 1" >&2; exit 2 ;; esac
}

say() { echo "$@" | tee -a "$SUMMARY"; }
step() { echo "$TOOL: $*" >&2; }

# start_server NAME CMD...: CMD in the background, its output in
# $OUT/server-NAME.log; waits (10 s at most) for "listening on HOST:PORT"
start_server() {
  local name=$1 log port pid
  shift
  log="$OUT/server-$name.log"
  "$@" >"$log" 2>&1 &
  pid=$!
  SERVERS="$SERVERS $pid"
  for _ in $(seq 200); do
    port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$log" | head -1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if [ -z "$port" ]; then
    echo "$TOOL: server $name did not start: $(cat "$log")" >&2
    stop_servers
    exit 1
  fi
  eval "SRV_PID_$name=$pid SRV_PORT_$name=$port"
}

# SIGTERM to the servers this script started (by pid), then their last lines
stop_servers() {
  local pid
  for pid in $SERVERS; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $SERVERS; do wait "$pid" 2>/dev/null || true; done
  SERVERS=""
}

# the median of the numeric arguments ("n/a" when none)
median() {
  printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | awk '
    { v[++n] = $1 }
    END { if (n == 0) print "n/a"; else if (n % 2) print v[(n + 1) / 2]; else printf "%.0f\n", (v[n / 2] + v[n / 2 + 1]) / 2 }'
}

# A / B to 2 decimals, "n/a" when either is not a number
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) print "n/a"; else printf "%.2f\n", a / b }'
}

# FIELD (a number) of the first ok run in DIR/runs.jsonl, else FAILED
ark_value() {
  if grep -q '"ok":true' "$1/runs.jsonl" 2>/dev/null; then
    grep -o "\"$2\":[0-9.e+]*" "$1/runs.jsonl" | head -1 | cut -d: -f2 |
      awk '{ printf "%.0f\n", $1 }'
  else
    echo FAILED
  fi
}

# the verdict line: NAME RATIO GOAL
verdict() {
  awk -v r="$2" -v g="$3" -v n="$1" 'BEGIN {
    if (r !~ /^[0-9.]+$/) printf "%s: n/a (goal >= %s)\n", n, g
    else printf "%s: %.2f (goal >= %s): %s\n", n, r, g, (r + 0 >= g + 0 ? "PASS" : "BELOW") }'
}

bench_out() { # bench_out NAME: OUT (given or results/NAME/<UTC>), empty, absolute
  [ -n "$OUT" ] || OUT="$ROOT/results/$1/$(date -u +%Y-%m-%dT%H%M%SZ)"
  mkdir -p "$OUT"
  OUT=$(CDPATH= cd -- "$OUT" && pwd)
  [ -z "$(ls -A "$OUT")" ] || { echo "$TOOL: --out $OUT is not empty" >&2; exit 2; }
  SUMMARY="$OUT/summary.txt"
  : >"$SUMMARY"
}

load_line() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') on $(nproc 2>/dev/null || echo '?') CPUs"; }
