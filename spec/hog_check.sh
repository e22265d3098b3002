#!/bin/bash
# spec/hog_check.sh [N] [-- CTEST ARGS...] -- run ctest (or the given
# ctest arguments, e.g. -R integration_bench) with N busy-loop processes
# (default 2) beside it for its whole duration: the suite must hold on a
# busy machine (issue 27; CI runs while other work is on the host).  The
# hogs are started and stopped by their pids; the ctest exit code is kept.
#   spec/hog_check.sh                      # the whole suite, 2 hogs
#   spec/hog_check.sh 2 -- -R integration_bench_scripts_spec --output-on-failure
# Needs a build in $ARKBENCH_BUILD_DIR (default build/).
set -u
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
BUILD=${ARKBENCH_BUILD_DIR:-$ROOT/build}
N=2
if [ $# -gt 0 ] && [ "$1" != -- ]; then N=$1; shift; fi
[ "${1:-}" = -- ] && shift
case "$N" in ''|*[!0-9]*) echo "hog_check: N: got '$N'; expected an integer" >&2; exit 2 ;; esac
HOGS=""
stop_hogs() { for p in $HOGS; do kill "$p" 2>/dev/null; done; for p in $HOGS; do wait "$p" 2>/dev/null; done; HOGS=""; }
trap stop_hogs EXIT
trap 'exit 130' INT TERM
for _ in $(seq "$N"); do (while :; do :; done) & HOGS="$HOGS $!"; done
echo "hog_check: $N busy loop(s) running (pids$HOGS); ctest $*" >&2
start=$(date +%s)
ctest --test-dir "$BUILD" "$@"
rc=$?
echo "hog_check: ctest exit $rc after $(( $(date +%s) - start )) s with $N busy loop(s)" >&2
exit "$rc"
