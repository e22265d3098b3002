#!/bin/sh
# bench/asio_echo_check.sh ASIO_ECHO -- the ctest test asio_echo_self: the
# native Asio reference (bench/asio_echo.cpp) against itself, in one process,
# for each form (callback, coroutine) on each topology (one io_context x 2
# threads, 2 io_contexts x 1 thread), 0.05 s warm-up and 0.2 s measured each
# (about 1 s in all); then --framing raw (arkbench's framing = "raw": no
# prefix, fixed-size messages from 1 byte): in one process at 1 byte, and
# as a standalone server (--mode server, the form bench/classic_servers.sh
# drives with arkbench's client) at 4 bytes driven by a second asio_echo
# (--mode client), which must count what it echoed. Each run must exit 0
# and print one JSON line with a positive round_trips_per_s and no error.
# No assertion on speed.
# Exit 77 (ctest: skipped) when ASIO_ECHO is empty: CMake found no g++ with
# C++20 coroutines or no asio.hpp (apt-get install g++ libasio-dev).
bin=$1
if [ -z "$bin" ]; then
  echo "asio_echo_self: skipped: asio_echo was not built (apt-get install g++ libasio-dev, then re-run cmake)"
  exit 77
fi
fail=0
for style in callback coroutine; do
  for topo in shared:2 sharded:2; do
    line=$("$bin" --style "$style" --topology "$topo" --clients 4 --window 4 \
      --payload 1024 --warmup 0.05 --duration 0.2)
    rc=$?
    rate=$(printf '%s\n' "$line" | sed -n 's/.*"round_trips_per_s":\([0-9.]*\).*/\1/p')
    errs=$(printf '%s\n' "$line" | sed -n 's/.*"errors":\([0-9]*\).*/\1/p')
    if [ "$rc" = 0 ] && [ -n "$rate" ] && [ "$errs" = 0 ] &&
       awk -v r="$rate" 'BEGIN { exit !(r > 0) }'; then
      echo "ok: $style $topo: $rate round trips/s"
    else
      echo "FAILED: $style $topo: exit $rc: $line"
      fail=1
    fi
  done
done
# check NAME LINE RC: one run's verdict
check() {
  rate=$(printf '%s\n' "$2" | sed -n 's/.*"round_trips_per_s":\([0-9.]*\).*/\1/p')
  errs=$(printf '%s\n' "$2" | sed -n 's/.*"errors":\([0-9]*\).*/\1/p')
  if [ "$3" = 0 ] && [ -n "$rate" ] && [ "$errs" = 0 ] &&
     awk -v r="$rate" 'BEGIN { exit !(r > 0) }'; then
    echo "ok: $1: $rate round trips/s"
  else
    echo "FAILED: $1: exit $3: $2"
    fail=1
  fi
}
line=$("$bin" --framing raw --payload 1 --style coroutine --topology sharded:2 --clients 4 \
  --window 2 --warmup 0.05 --duration 0.2)
check "raw 1 B, coroutine sharded:2" "$line" $?

out=$(mktemp) || exit 1
"$bin" --mode server --framing raw --payload 4 --topology shared:2 >"$out" 2>&1 &
srv=$!
port=""
for _ in $(seq 100); do
  port=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$out")
  [ -n "$port" ] && break
  sleep 0.05
done
if [ -z "$port" ]; then
  echo "FAILED: raw server: no 'listening on' line: $(cat "$out")"
  fail=1
else
  line=$("$bin" --mode client --connect "127.0.0.1:$port" --framing raw --payload 4 \
    --clients 4 --window 3 --warmup 0.05 --duration 0.2)
  check "raw 4 B, client against --mode server" "$line" $?
fi
kill -TERM "$srv" 2>/dev/null
wait "$srv"
src=$?
sline=$(grep '^{' "$out")
served=$(printf '%s\n' "$sline" | sed -n 's/.*"server_messages":\([0-9]*\).*/\1/p')
if [ -n "$port" ] && { [ "$src" != 0 ] || [ -z "$served" ] || [ "$served" = 0 ]; }; then
  echo "FAILED: raw server: exit $src, server_messages '$served': $sline"
  fail=1
elif [ -n "$port" ]; then
  echo "ok: raw server: exit 0, $served messages echoed"
fi
rm -f "$out"
[ "$fail" = 0 ] && echo "asio_echo_self: all runs ok" || echo "asio_echo_self: a run failed"
exit "$fail"
