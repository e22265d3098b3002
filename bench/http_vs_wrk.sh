#!/bin/sh
# bench/http_vs_wrk.sh [PAIRS] [CONNECTIONS] [SECONDS] -- arkbench's HTTP
# client against wrk, same server, same connections, one thread each.
#
# Starts `arkbench serve --protocol http` (sharded:1) on a loopback port,
# then alternates PAIRS times: wrk -t1 -cC -dS with a 1 KiB POST /echo
# script, and arkbench's client (clients=C, window=1 — wrk does not
# pipeline — sharded:1, target=) for S seconds.  Prints each pair and the
# median of the per-pair ratios arkbench / wrk (goal >= 1.0).  Needs wrk.
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
PAIRS=${1:-5}
C=${2:-16}
S=${3:-2}
BIN=${ARKBENCH_BIN:-$ROOT/build/arkbench}
export ARKBENCH_ROOT=$ROOT
TMP=$(mktemp -d)
trap 'kill $SPID 2>/dev/null || true; rm -rf "$TMP"' EXIT INT TERM
"$BIN" serve --protocol http --listen 127.0.0.1:0 >"$TMP/serve.out" 2>&1 &
SPID=$!
for i in $(seq 50); do grep -q "listening on" "$TMP/serve.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/^listening on .*:\([0-9]*\)$/\1/p' "$TMP/serve.out")
[ -n "$PORT" ] || { echo "serve did not start"; cat "$TMP/serve.out"; exit 1; }
cat >"$TMP/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = string.rep("x", 1024)
wrk.headers["Content-Type"] = "application/octet-stream"
LUA
cat >"$TMP/client.lua" <<LUA
return { name = "http_vs_wrk", protocol = "http", payload = 1024, clients = $C,
         window = 1, topology = "sharded:1", target = "127.0.0.1:$PORT",
         warmup = 0.25, duration = $S, repetitions = 1 }
LUA
echo "server: arkbench serve --protocol http on 127.0.0.1:$PORT; $C connections, 1 thread, ${S}s"
ratios=""
for i in $(seq "$PAIRS"); do
  w=$(wrk -t1 -c"$C" -d"${S}s" -s "$TMP/post.lua" "http://127.0.0.1:$PORT/echo" | sed -n 's/^Requests\/sec:[[:space:]]*\([0-9.]*\).*/\1/p')
  "$BIN" run "$TMP/client.lua" --out "$TMP/r$i" >/dev/null 2>&1 || true
  a=$(sed -n 's/.*"round_trips_per_s":\([0-9.e+]*\).*/\1/p' "$TMP/r$i/runs.jsonl")
  r=$(awk -v a="$a" -v w="$w" 'BEGIN { if (w > 0) printf "%.3f", a / w; else print "nan" }')
  echo "pair $i: wrk $w req/s   arkbench $a round trips/s   ratio $r"
  ratios="$ratios $r"
done
echo "$ratios" | tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ v[NR] = $1 } END {
  m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "median ratio arkbench / wrk: %.3f over %d pairs\n", m, NR }'
