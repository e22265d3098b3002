#!/bin/bash
# bench/compare_builds.sh [--quick] [--out DIR] OLD_REV -- an old build of
# arkbench against this checkout, on this machine, in one run.
#
# Builds OLD_REV in a temporary git worktree (its own build dir) and this
# checkout (uncommitted changes included), both RelWithDebInfo, then:
#   (a) scenarios/all.lua --set topology=sharded:1 --set repetitions=3,
#       old and new interleaved per protocol (bench/README.md says why),
#       `arkbench compare OLD NEW`, and per-protocol ratios new/old with
#       PASS/FAIL lines against the goals;
#   (b) `arkbench calibrate --pairs 5`, old and new alternately, 3 each:
#       each build's (a) throughput and (b) RTT ratio, new no worse than old;
#   (c) coroutine/callback on tcp 1 KiB 16x16 sharded:1, 5 repetitions
#       (bench/execution_tcp.lua) with the new build (the old's for context).
# Each build runs with ARKBENCH_ROOT at its own tree (its Lua side) and the
# same scenario files (this checkout's). The summaries are computed by
# bench/compare_builds.lua (luajit + lua-cjson).
#
# --quick: tiny durations, one repetition, one calibrate pair, one
#          calibrate run per build: a smoke test of the script, not numbers.
# --out DIR: where everything goes (default results/compare_builds/<UTC>);
#          DIR/summary.txt is the printed summary.
# Exit: 0 done (the verdicts are in the summary, not the exit code),
#       1 a build or a run failed, 2 wrong command line.
set -euo pipefail

ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
USAGE="usage: bench/compare_builds.sh [--quick] [--out DIR] OLD_REV"

usage_error() {
  echo "compare_builds: $1" >&2
  echo "$USAGE" >&2
  exit 2
}

QUICK=0
OUT=""
REV=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,24s/^# \{0,1\}//p' "$0"; exit 0 ;;
    --quick) QUICK=1 ;;
    --out) [ $# -ge 2 ] || usage_error "--out needs a directory"; OUT=$2; shift ;;
    --out=*) OUT=${1#--out=} ;;
    -*) usage_error "unknown option '$1'" ;;
    *) [ -z "$REV" ] || usage_error "one OLD_REV only (got '$REV' and '$1')"; REV=$1 ;;
  esac
  shift
done
[ -n "$REV" ] || usage_error "OLD_REV is missing (e.g. 9b3b5dc)"
OLD_SHA=$(git -C "$ROOT" rev-parse --verify --quiet "$REV^{commit}") ||
  usage_error "'$REV' is not a commit of $ROOT"
command -v luajit >/dev/null 2>&1 || { echo "compare_builds: needs luajit (apt-get install luajit)" >&2; exit 1; }

[ -n "$OUT" ] || OUT="$ROOT/results/compare_builds/$(date -u +%Y-%m-%dT%H%M%SZ)"
mkdir -p "$OUT"
OUT=$(CDPATH= cd -- "$OUT" && pwd)
[ -z "$(ls -A "$OUT")" ] || usage_error "--out $OUT is not empty"
SUMMARY="$OUT/summary.txt"
say() { echo "$@" | tee -a "$SUMMARY"; }
step() { echo "compare_builds: $*" >&2; }

# ---- the two builds ----------------------------------------------------------
OLD_SRC=$(mktemp -d "${TMPDIR:-/tmp}/arkbench-old.XXXXXX")
cleanup() {
  git -C "$ROOT" worktree remove --force "$OLD_SRC" >/dev/null 2>&1 || rm -rf "$OLD_SRC"
  git -C "$ROOT" worktree prune >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

build() { # build SRC DIR LOG
  if [ -f "$2/CMakeCache.txt" ]; then
    bt=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$2/CMakeCache.txt")
    [ "$bt" = RelWithDebInfo ] || {
      echo "compare_builds: $2 is a '$bt' build; set ARKBENCH_BUILD_DIR to a RelWithDebInfo one" >&2
      exit 1; }
  fi
  { cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
    cmake --build "$2" --target arkbench -j"${BUILD_JOBS:-2}"; } >"$3" 2>&1 ||
    { tail -30 "$3" >&2; echo "compare_builds: build of $1 failed (log: $3)" >&2; exit 1; }
}

step "old: $REV ($OLD_SHA) into $OLD_SRC"
git -C "$ROOT" worktree add --detach "$OLD_SRC" "$OLD_SHA" >"$OUT/worktree.log" 2>&1 ||
  { cat "$OUT/worktree.log" >&2; exit 1; }
build "$OLD_SRC" "$OLD_SRC/build" "$OUT/build-old.log"
NEW_BUILD=${ARKBENCH_BUILD_DIR:-$ROOT/build}
step "new: this checkout into $NEW_BUILD"
build "$ROOT" "$NEW_BUILD" "$OUT/build-new.log"

old() { ARKBENCH_ROOT="$OLD_SRC" "$OLD_SRC/build/arkbench" "$@"; }
new() { ARKBENCH_ROOT="$ROOT" "$NEW_BUILD/arkbench" "$@"; }
summarize() { luajit "$ROOT/bench/compare_builds.lua" "$@"; }

FAILED=0
run_side() { # run_side old|new LOG ARGS... ; a failed run is noted, the script goes on
  side=$1; log=$2; shift 2
  "$side" "$@" >"$log" 2>&1 || { FAILED=1; echo "compare_builds: $side $* failed (log: $log)" >&2; }
}

if [ "$QUICK" = 1 ]; then
  TIMES=(--set warmup=0.05 --set duration=0.2); REPS=1; CAL_PAIRS=1; CAL_RUNS=1; EXEC_REPS=1
  CAL_TIMES=(--warmup 0.05 --duration 0.2)
else
  TIMES=(); REPS=3; CAL_PAIRS=5; CAL_RUNS=3; EXEC_REPS=5; CAL_TIMES=()
fi

NEW_DESC=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo "?")
say "compare_builds: old $REV ($OLD_SHA) vs new $NEW_DESC on $(hostname), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
say "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') on $(nproc 2>/dev/null || echo '?') CPUs"
[ "$QUICK" = 0 ] || say "--quick: smoke test, tiny durations; the numbers mean nothing"
say ""

# ---- (a) per-protocol throughput, interleaved per protocol ----------------------
step "(a) scenarios/all.lua sharded:1, $REPS repetitions, per protocol old/new"
mkdir -p "$OUT/a/old" "$OUT/a/new"
i=0
for p in tcp tls ws wss http https udp; do
  # alternate which build goes first, so neither always runs on a warmer machine
  if [ $((i % 2)) = 0 ]; then order="old new"; else order="new old"; fi
  for side in $order; do
    step "  $p: $side"
    # --set, not --filter: the topology list of all.lua may name models an
    # old build does not know (pool:N), and --set replaces it before the
    # old build's checks
    run_side "$side" "$OUT/a/$side/$p.log" run "$ROOT/scenarios/all.lua" \
      --set topology=sharded:1 --filter protocol="$p" --set repetitions="$REPS" \
      ${TIMES[@]+"${TIMES[@]}"} --out "$OUT/a/$side/$p"
  done
  i=$((i + 1))
done
for side in old new; do
  cat "$OUT/a/$side"/*/runs.jsonl >"$OUT/a/$side/runs.jsonl" 2>/dev/null || true
  cp "$OUT/a/$side/tcp/env.json" "$OUT/a/$side/env.json" 2>/dev/null || true
  # a summary and report of the merged folder (rebuilt from runs.jsonl)
  new report "$OUT/a/$side" >"$OUT/a/$side/report.log" 2>&1 || true
done
new compare "$OUT/a/old" "$OUT/a/new" >"$OUT/a/compare.txt" 2>&1 || FAILED=1
say "== (a) arkbench compare OLD NEW (B = new, A = old) =="
tee -a "$SUMMARY" <"$OUT/a/compare.txt"
say ""
say "== (a) round trips/s new/old per protocol (topology sharded:1, $REPS repetitions) =="
summarize throughput "$OUT/a/old" "$OUT/a/new" | tee -a "$SUMMARY" || FAILED=1
say ""

# ---- (b) calibrate, alternately ------------------------------------------------
step "(b) arkbench calibrate --pairs $CAL_PAIRS, old and new alternately, $CAL_RUNS each"
mkdir -p "$OUT/b"
for k in $(seq "$CAL_RUNS"); do
  for side in old new; do
    step "  calibrate $side $k/$CAL_RUNS"
    "$side" calibrate --pairs "$CAL_PAIRS" ${CAL_TIMES[@]+"${CAL_TIMES[@]}"} \
      >"$OUT/b/$side-$k.md" 2>"$OUT/b/$side-$k.err" ||
      { FAILED=1; echo "compare_builds: $side calibrate failed (log: $OUT/b/$side-$k.err)" >&2; }
  done
done
say "== (b) arkbench calibrate --pairs $CAL_PAIRS, old/new alternately, $CAL_RUNS each =="
summarize calibrate "$OUT/b" | tee -a "$SUMMARY" || FAILED=1
say ""

# ---- (c) coroutine / callback -------------------------------------------------
step "(c) coroutine/callback, tcp 1 KiB 16x16 sharded:1, $EXEC_REPS repetitions"
mkdir -p "$OUT/c"
for side in new old; do
  run_side "$side" "$OUT/c/$side.log" run "$ROOT/bench/execution_tcp.lua" \
    --set repetitions="$EXEC_REPS" ${TIMES[@]+"${TIMES[@]}"} --out "$OUT/c/$side"
done
say "== (c) coroutine/callback, tcp 1 KiB, 16 clients x window 16, sharded:1, $EXEC_REPS repetitions =="
summarize execution "$OUT/c/new" "$OUT/c/old" | tee -a "$SUMMARY" || FAILED=1
say ""
say "results: $OUT (summary.txt, a/{old,new}, b/*.md, c/{old,new})"
[ "$FAILED" = 0 ] || say "some build or run FAILED: see the logs named above"
exit "$FAILED"
