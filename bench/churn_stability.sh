#!/bin/sh
# bench/churn_stability.sh [SECONDS] -- the long churn run of issue 15:
# tls with resumption, a new connection per round trip, for SECONDS
# (default 60) against `arkbench serve` in its own process, sampling the
# fds and RSS of the client's worker and of the server once a second; fails
# when either grows past the bounds of spec/integration/churn_stability_spec.lua
# (which runs the same for 12 s in CI).  The samples are printed.
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
BUILD=${ARKBENCH_BUILD_DIR:-$ROOT/build}
cd "$ROOT"
ARKBENCH_CHURN_S=${1:-60} ARKBENCH_ROOT="$ROOT" ARKBENCH_BIN="$BUILD/arkbench" \
  "$BUILD/arkbench" dev-busted spec/integration/churn_stability_spec.lua
