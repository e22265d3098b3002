#!/bin/bash
# bench/io_models.sh [--quick] [--reps N] [--out DIR] -- the IO-model study
# against its native reference: the Asio echo (bench/asio_echo.cpp) and
# arkbench, alternately, in one run, on this machine.
#
# Cases: tcp, 1 KiB, work 0, loads 16 clients x window 16 and 1 x 1,
# threads 1, 2 and 4, callback and coroutine. Per case and thread count:
#   arkbench sharded:T   against Asio's T io_contexts x 1 thread each,
#   arkbench shared:T    against Asio's 1 io_context run by T threads,
#   arkbench pool:T      (one IO loop + T work threads: no Asio counterpart)
#                        against the same 1 io_context x T threads.
# Each repetition runs the Asio side and the arkbench side back to back,
# which goes first alternating; the table gives the medians, the ratio
# arkbench/asio and each side's ratio to its own 1-thread number. A
# topology arkbench refuses (a build without it) reads "n/a"; so does the
# Asio side when asio_echo was not built (g++ and libasio-dev missing).
# Threads 4 on a machine with fewer logical CPUs are oversubscribed; the
# output says so.
#
# Needs a build: $ARKBENCH_BUILD_DIR (default build/) with arkbench and,
# for the Asio side, asio_echo (cmake --build build).
# --quick: warm-up 0.05 s, 0.2 s measured, 1 repetition: tests the script,
#          its numbers mean little.
# --reps N: repetitions per side and case (default 3).
# --out DIR: the logs and results.tsv (default results/io_models/<UTC>);
#          DIR/summary.txt is what was printed.
# Exit: 0 done, 1 a run failed (its cell reads FAILED), 2 wrong command line.
set -euo pipefail

ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
USAGE="usage: bench/io_models.sh [--quick] [--reps N] [--out DIR]"
usage_error() {
  echo "io_models: $1" >&2
  echo "$USAGE" >&2
  exit 2
}

QUICK=0
REPS=""
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,29s/^# \{0,1\}//p' "$0"; exit 0 ;;
    --quick) QUICK=1 ;;
    --reps) [ $# -ge 2 ] || usage_error "--reps needs a number"; REPS=$2; shift ;;
    --out) [ $# -ge 2 ] || usage_error "--out needs a directory"; OUT=$2; shift ;;
    --out=*) OUT=${1#--out=} ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
  shift
done
if [ "$QUICK" = 1 ]; then
  WARMUP=0.05; DURATION=0.2; REPS=${REPS:-1}
else
  WARMUP=0.25; DURATION=1; REPS=${REPS:-3}
fi
case "$REPS" in ''|*[!0-9]*|0) usage_error "--reps: got '$REPS'; expected an integer >= 1" ;; esac

BUILD=${ARKBENCH_BUILD_DIR:-$ROOT/build}
ARK=$BUILD/arkbench
ASIO=$BUILD/asio_echo
[ -x "$ARK" ] || { echo "io_models: no $ARK: build first (cmake --build build)" >&2; exit 1; }
HAVE_ASIO=1
[ -x "$ASIO" ] || HAVE_ASIO=0

[ -n "$OUT" ] || OUT="$ROOT/results/io_models/$(date -u +%Y-%m-%dT%H%M%SZ)"
mkdir -p "$OUT"
OUT=$(CDPATH= cd -- "$OUT" && pwd)
[ -z "$(ls -A "$OUT")" ] || usage_error "--out $OUT is not empty"
SUMMARY="$OUT/summary.txt"
TSV="$OUT/results.tsv" # load threads execution side model rep value (n/a, FAILED or rt/s)
: >"$TSV"
say() { echo "$@" | tee -a "$SUMMARY"; }
step() { echo "io_models: $*" >&2; }

CPUS=$(nproc 2>/dev/null || echo 1)
LOADS="16x16 1x1"
THREADS="1 2 4"
EXECS="callback coroutine"
FAILED=0

# asio LOAD T EXEC MODEL REP: one Asio run, its rt/s into the TSV
asio() {
  local load=$1 t=$2 ex=$3 model=$4 rep=$5 log value
  log="$OUT/asio-$load-$model-$ex-$rep.log"
  if [ "$HAVE_ASIO" = 0 ]; then value=n/a
  elif "$ASIO" --style "$ex" --topology "$model" --clients "${load%x*}" --window "${load#*x}" \
         --payload 1024 --work 0 --warmup "$WARMUP" --duration "$DURATION" >"$log" 2>&1; then
    value=$(sed -n 's/.*"round_trips_per_s":\([0-9.]*\).*/\1/p' "$log" | head -1)
    [ -n "$value" ] || { value=FAILED; FAILED=1; }
  else
    value=FAILED; FAILED=1
    step "asio $model $ex $load failed (log: $log)"
  fi
  printf '%s\t%s\t%s\tasio\t%s\t%s\t%s\n' "$load" "$t" "$ex" "$model" "$rep" "$value" >>"$TSV"
}

# ark LOAD T EXEC TOPOLOGY REP: one arkbench run (one case, one repetition)
ark() {
  local load=$1 t=$2 ex=$3 topo=$4 rep=$5 dir rc value
  dir="$OUT/ark-$load-$topo-$ex-$rep"
  rc=0
  "$ARK" run "$ROOT/scenarios/io_models.lua" --set payload=1024 --set load="$load" \
    --set topology="$topo" --set work=0 --set execution="$ex" --set repetitions=1 \
    --set warmup="$WARMUP" --set duration="$DURATION" --out "$dir" >"$dir.log" 2>&1 || rc=$?
  if [ "$rc" = 2 ] && grep -q "key 'topology'" "$dir.log"; then
    value=n/a # this build refuses the topology
  elif [ "$rc" = 0 ] && grep -q '"ok":true' "$dir/runs.jsonl" 2>/dev/null; then
    value=$(grep -o '"round_trips_per_s":[0-9.]*' "$dir/runs.jsonl" | head -1 | cut -d: -f2)
  else
    value=FAILED; FAILED=1
    step "arkbench $topo $ex $load failed (log: $dir.log)"
  fi
  printf '%s\t%s\t%s\tark\t%s\t%s\t%s\n' "$load" "$t" "$ex" "$topo" "$rep" "${value:-FAILED}" >>"$TSV"
}

say "io_models: native Asio echo (bench/asio_echo.cpp) vs arkbench on $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "tcp, 1 KiB, work 0, same process; warm-up $WARMUP s, $DURATION s measured, $REPS repetition(s) per side, alternated"
say "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') on $CPUS CPUs"
[ "$HAVE_ASIO" = 1 ] || say "asio_echo is not built ($ASIO): the Asio columns read n/a (apt-get install g++ libasio-dev, re-run cmake)"
[ "$QUICK" = 0 ] || say "--quick: smoke test, tiny durations; the numbers mean little"

i=0
for load in $LOADS; do
  for t in $THREADS; do
    for ex in $EXECS; do
      step "$load, $t thread(s), $ex"
      for rep in $(seq "$REPS"); do
        # which side goes first alternates, so neither always runs on a warmer machine
        if [ $(((i + rep) % 2)) = 0 ]; then order="asio ark"; else order="ark asio"; fi
        for side in $order; do
          if [ "$side" = asio ]; then
            asio "$load" "$t" "$ex" "sharded:$t" "$rep"
            asio "$load" "$t" "$ex" "shared:$t" "$rep"
          else
            for m in sharded shared pool; do ark "$load" "$t" "$ex" "$m:$t" "$rep"; done
          fi
        done
      done
      i=$((i + 1))
    done
  done
done

say ""
awk -F'\t' -v cpus="$CPUS" '
function median(key,   n, a, i, j, v, k) {
  n = split(vals[key], a, " ")
  if (n == 0) return "n/a"
  k = 0
  for (i = 1; i <= n; i++) {
    if (a[i] == "FAILED") return "FAILED"
    if (a[i] == "n/a") return "n/a"
    v[++k] = a[i] + 0
  }
  for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { x = v[j]; v[j] = v[j - 1]; v[j - 1] = x }
  return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
}
function num(v) { return v != "n/a" && v != "FAILED" }
function rate(v) { return num(v) ? sprintf("%.0f", v) : v }
function ratio(a, b) { return num(a) && num(b) && b > 0 ? sprintf("%.2fx", a / b) : "n/a" }
{
  key = $1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5
  vals[key] = vals[key] " " $7
  if (!(($1 SUBSEP $2 SUBSEP $3) in seen)) { seen[$1 SUBSEP $2 SUBSEP $3] = 1; order[++n] = $1 SUBSEP $2 SUBSEP $3 }
}
END {
  fmt = "%-6s %-8s %-9s  %-9s  %-24s  %13s  %13s  %13s  %10s  %10s\n"
  printf fmt, "load", "threads", "execution", "arkbench", "asio", "asio rt/s", "arkbench rt/s",
    "arkbench/asio", "asio x1thr", "ark x1thr"
  for (r = 1; r <= n; r++) {
    split(order[r], c, SUBSEP)
    load = c[1]; t = c[2]; ex = c[3]
    asio1 = median(load SUBSEP 1 SUBSEP ex SUBSEP "asio" SUBSEP "shared:1")
    ark1 = median(load SUBSEP 1 SUBSEP ex SUBSEP "ark" SUBSEP "sharded:1")
    over = (t + 0 > cpus + 0) ? " over" : ""
    for (m = 1; m <= 3; m++) {
      model = m == 1 ? "sharded" : m == 2 ? "shared" : "pool"
      amodel = m == 1 ? "sharded" : "shared"
      what = m == 1 ? t " ctx x 1 thread" : m == 2 ? "1 ctx x " t " thr" : "1 ctx x " t " thr (*)"
      a = median(load SUBSEP t SUBSEP ex SUBSEP "asio" SUBSEP amodel ":" t)
      k = median(load SUBSEP t SUBSEP ex SUBSEP "ark" SUBSEP model ":" t)
      printf fmt, load, t over, ex, model ":" t, what, rate(a), rate(k), ratio(k, a),
        m == 3 ? "" : ratio(a, asio1), ratio(k, ark1)
    }
  }
  print ""
  print "(*) pool:T has no Asio counterpart (one IO loop handing work to T threads); its row shows Asio'"'"'s 1 io_context x T threads."
  print "x1thr: the rate over the same side'"'"'s 1-thread rate (Asio 1 context x 1 thread, arkbench sharded:1) of that load and execution."
  if (cpus + 0 < 4) print "\"4 over\": 4 threads on " cpus " CPUs are oversubscribed (more busy threads than logical CPUs)."
}' "$TSV" | tee -a "$SUMMARY"
say "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
say "results: $OUT (summary.txt, results.tsv, one log per run)"
[ "$FAILED" = 0 ] || say "some run FAILED: see the logs named above"
exit "$FAILED"
