#!/bin/sh
# bench/asio_echo_check.sh ASIO_ECHO -- the ctest test asio_echo_self: the
# native Asio reference (bench/asio_echo.cpp) against itself, in one process,
# for each form (callback, coroutine) on each topology (one io_context x 2
# threads, 2 io_contexts x 1 thread), 0.05 s warm-up and 0.2 s measured each
# (about 1 s in all). Each run must exit 0 and print one JSON line with a
# positive round_trips_per_s and no error. No assertion on speed.
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
[ "$fail" = 0 ] && echo "asio_echo_self: all 4 runs ok" || echo "asio_echo_self: a run failed"
exit "$fail"
