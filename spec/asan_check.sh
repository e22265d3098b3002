#!/bin/sh
# spec/asan_check.sh -- builds arkbench with AddressSanitizer + UBSan in
# <build>/asan, runs the C unit tests there and end-to-end runs through
# the sanitized binary (orchestrator and workers): tcp on sharded:2,
# pool:2 and shared:2, h2 and h2c on the same three, coroutine tls on
# shared:2 (its coroutines migrate between the threads), and the Lua driver.  Any sanitizer report fails
# the run: halt_on_error and a non-zero exitcode.
set -eu
ROOT=$1
OUT=$2/asan
mkdir -p "$OUT"
cmake -S "$ROOT" -B "$OUT" -DCMAKE_BUILD_TYPE=Debug -DAB_SANITIZE=ON -DAB_WERROR=ON >"$OUT.log" 2>&1 || { cat "$OUT.log"; exit 1; }
cmake --build "$OUT" -j2 >>"$OUT.log" 2>&1 || { cat "$OUT.log"; exit 1; }
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:exitcode=99
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=99
ctest --test-dir "$OUT" -R '^c_' --output-on-failure
RES=$(mktemp -d)
ARKBENCH_ROOT="$ROOT" "$OUT/arkbench" run "$ROOT/scenarios/tcp.lua" --quick \
  --filter payload=1024 --set topology=sharded:2,pool:2,shared:2 --out "$RES/r" >"$RES/out" 2>"$RES/err" || {
  echo "sanitized end-to-end run failed:"; cat "$RES/out" "$RES/err"; exit 1; }
lines=$(wc -l <"$RES/r/runs.jsonl")
[ "$lines" -eq 6 ] || { echo "expected 6 runs, got $lines"; exit 1; }
if grep -q '"ok":false' "$RES/r/runs.jsonl"; then echo "a sanitized run failed:"; cat "$RES/r/runs.jsonl"; exit 1; fi
# HTTP/2 (nghttp2 sessions, streams completed out of order) over TLS and
# cleartext, on every topology model
ARKBENCH_ROOT="$ROOT" "$OUT/arkbench" run "$ROOT/scenarios/h2.lua" --quick \
  --filter payload=1024 --set protocol=h2,h2c --set topology=sharded:2,pool:2,shared:2 \
  --out "$RES/h2" >"$RES/out5" 2>"$RES/err5" || {
  echo "sanitized h2/h2c run failed:"; cat "$RES/out5" "$RES/err5"; exit 1; }
[ "$(wc -l <"$RES/h2/runs.jsonl")" -eq 12 ] || { echo "expected 12 h2/h2c runs"; cat "$RES/err5"; exit 1; }
if grep -q '"ok":false' "$RES/h2/runs.jsonl"; then echo "a sanitized h2 run failed:"; cat "$RES/h2/runs.jsonl"; exit 1; fi
# coroutines on N threads serving one reactor (stacks that migrate)
ARKBENCH_ROOT="$ROOT" "$OUT/arkbench" run "$ROOT/scenarios/tcp.lua" --quick \
  --filter payload=1024 --set topology=shared:2 --set protocol=tls --set execution=coroutine \
  --out "$RES/co" >"$RES/out4" 2>"$RES/err4" || {
  echo "sanitized coroutine shared:2 run failed:"; cat "$RES/out4" "$RES/err4"; exit 1; }
[ "$(wc -l <"$RES/co/runs.jsonl")" -eq 2 ] || { echo "expected 2 coroutine runs"; cat "$RES/err4"; exit 1; }
if grep -q '"ok":false' "$RES/co/runs.jsonl"; then echo "a sanitized coroutine run failed:"; cat "$RES/co/runs.jsonl"; exit 1; fi
# Lua-driven connections (client and server in Lua) under the sanitizers
ARKBENCH_ROOT="$ROOT" "$OUT/arkbench" run "$ROOT/scenarios/custom/line_echo.lua" --quick \
  --out "$RES/lua" >"$RES/out2" 2>"$RES/err2" || {
  echo "sanitized Lua run failed:"; cat "$RES/out2" "$RES/err2"; exit 1; }
if grep -q '"ok":false' "$RES/lua/runs.jsonl"; then echo "a sanitized Lua run failed:"; cat "$RES/lua/runs.jsonl"; exit 1; fi
# ... and over udp (the datagram queue, calls matched by expect, the light
# form matched by message number)
ARKBENCH_ROOT="$ROOT" "$OUT/arkbench" run "$ROOT/spec/fixtures/lua_exec/udp_echo.lua" --quick \
  --out "$RES/lua_udp" >"$RES/out3" 2>"$RES/err3" || {
  echo "sanitized Lua udp run failed:"; cat "$RES/out3" "$RES/err3"; exit 1; }
if grep -q '"ok":false' "$RES/lua_udp/runs.jsonl"; then echo "a sanitized Lua udp run failed:"; cat "$RES/lua_udp/runs.jsonl"; exit 1; fi
echo "asan: C tests and $lines sanitized runs ok, 12 h2/h2c runs ok, coroutine shared:2 runs ok, Lua runs ok"
rm -rf "$RES"
