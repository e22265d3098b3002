#!/bin/sh
# spec/tsan_check.sh -- builds arkbench with ThreadSanitizer in <build>/tsan,
# runs the C unit tests there and two end-to-end runs through the
# sanitized binary on N threads serving one reactor (the model whose
# threads share connections): callback tcp on shared:4, under a
# pseudo-terminal so that the live line's path runs too, and coroutine tls
# on shared:2 (each connection's coroutine migrates between the threads
# with its events; every coroutine is a TSan fiber, base/coro.c).  Any
# data race report fails the run (halt_on_error, exitcode).  Bounded: the
# build, ~16 C tests, two cases of 0.5 s.
set -eu
ROOT=$1
OUT=$2/tsan
mkdir -p "$OUT"
cmake -S "$ROOT" -B "$OUT" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAB_TSAN=ON -DAB_WERROR=ON >"$OUT.log" 2>&1 || { cat "$OUT.log"; exit 1; }
cmake --build "$OUT" -j2 >>"$OUT.log" 2>&1 || { cat "$OUT.log"; exit 1; }
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1"
ctest --test-dir "$OUT" -R '^c_' --output-on-failure
RES=$(mktemp -d)
cat >"$RES/s.lua" <<'LUA'
return { name = "tsan_shared", protocol = "tcp", payload = 1024, clients = 16, window = 16,
         topology = "shared:4", warmup = 0.1, duration = 0.5, timeout = 5, repetitions = 1 }
LUA
# under a pseudo-terminal (util-linux script) when there is one, so that
# the live line's path runs too: the loops publish each closed interval
# and the coordinator merges it while they go on (core/engine/live.c)
if command -v script >/dev/null 2>&1; then
  ARKBENCH_ROOT="$ROOT" script -qefc "'$OUT/arkbench' run '$RES/s.lua' --out '$RES/r' --set interval=0.1" /dev/null \
    >"$RES/out" 2>"$RES/err" </dev/null || {
    echo "ThreadSanitizer end-to-end run (under script) failed:"; cat "$RES/out" "$RES/err"; exit 1; }
  grep -q 'rt/s  p99' "$RES/out" || { echo "no live line in the sanitized run:"; cat "$RES/out"; exit 1; }
else
  ARKBENCH_ROOT="$ROOT" "$OUT/arkbench" run "$RES/s.lua" --out "$RES/r" >"$RES/out" 2>"$RES/err" || {
    echo "ThreadSanitizer end-to-end run failed:"; cat "$RES/out" "$RES/err"; exit 1; }
fi
lines=$(wc -l <"$RES/r/runs.jsonl")
[ "$lines" -eq 1 ] || { echo "expected 1 run, got $lines"; cat "$RES/err"; exit 1; }
if grep -q '"ok":false' "$RES/r/runs.jsonl"; then echo "the sanitized run failed:"; cat "$RES/r/runs.jsonl" "$RES/err"; exit 1; fi
cat >"$RES/co.lua" <<'LUA'
return { name = "tsan_shared_co", protocol = "tls", execution = "coroutine", payload = 1024,
         clients = 8, window = 8, topology = "shared:2", warmup = 0.1, duration = 0.5, timeout = 5,
         repetitions = 1 }
LUA
ARKBENCH_ROOT="$ROOT" "$OUT/arkbench" run "$RES/co.lua" --out "$RES/rco" >"$RES/out" 2>"$RES/err" || {
  echo "ThreadSanitizer end-to-end run co.lua failed:"; cat "$RES/out" "$RES/err"; exit 1; }
lines=$(wc -l <"$RES/rco/runs.jsonl")
[ "$lines" -eq 1 ] || { echo "co.lua: expected 1 run, got $lines"; cat "$RES/err"; exit 1; }
if grep -q '"ok":false' "$RES/rco/runs.jsonl"; then echo "the sanitized run co.lua failed:"; cat "$RES/rco/runs.jsonl" "$RES/err"; exit 1; fi
echo "tsan: C tests, the shared:4 callback run and the shared:2 coroutine run ok"
rm -rf "$RES"
