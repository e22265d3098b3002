#!/bin/sh
# fuzz/short_run.sh BUILD SECONDS -- builds the fuzz targets into BUILD/fuzz
# and runs each for SECONDS (the CI smoke run; fuzz/README.md has the long
# one).  Exits non-zero on a crash, a sanitizer report or a build failure.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$1/fuzz
SECS=${2:-15}
sh "$ROOT/fuzz/build.sh" "$OUT" >"$OUT.log" 2>&1 || { cat "$OUT.log"; exit 1; }
for t in length ws http h2_client h2_server; do
  if ! "$OUT/fuzz_$t" -max_total_time="$SECS" "$OUT/seeds_$t" >"$OUT/run_$t.log" 2>&1; then
    tail -40 "$OUT/run_$t.log"
    echo "fuzz_$t: FAILED"
    exit 1
  fi
  echo "fuzz_$t: $(grep -E '^#[0-9]+.*DONE' "$OUT/run_$t.log" | tail -1)"
done
