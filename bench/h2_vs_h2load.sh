#!/bin/sh
# bench/h2_vs_h2load.sh [ROUNDS] [SECONDS] -- arkbench's HTTP/2 client
# against h2load (nghttp2-client, the reference, built on the same
# libnghttp2), 16 connections x 16 streams, one client thread each,
# alternated ROUNDS times in one run:
#   1. nginx (one worker, http2, a static 601-byte file) over h2 (TLS, ALPN
#      h2) and h2c (prior knowledge): arkbench request mode (request = {
#      path = "/f601" }, clients 16, window 16, sharded:1) vs
#      `h2load -c16 -m16 -t1`; both are bound by nginx's one worker on most
#      machines, so the requests/s ratio says whether arkbench keeps up as
#      h2load does (goal >= 0.95) and the client CPU per request ratio what
#      it costs (goal <= 1.1);
#   2. arkbench's own h2/h2c echo (`arkbench serve --protocol h2|h2c
#      --topology sharded:1`, 601-byte bodies): arkbench's echo client vs
#      `h2load -c16 -m16 -t1 -d BODY` POSTing the same size to /echo, same
#      server; goal >= 1.3x requests/s (our client is not the limit).
# Client CPU: h2load's user+sys (getrusage of the child) over its requests;
# arkbench's run object's cpu_user_s + cpu_sys_s over its completed round
# trips (the worker is the client alone: the servers are other processes).  Prints one line
# per round and, per comparison, the median and range of the ratios.
# Needs nginx, h2load (nghttp2-client), openssl, python3.
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
ROUNDS=${1:-3}
S=${2:-3}
C=16
M=16
BIN=${ARKBENCH_BIN:-$ROOT/build/arkbench}
export ARKBENCH_ROOT=$ROOT
TMP=$(mktemp -d)
NPID=
SPIDS=
trap '[ -n "$NPID" ] && kill $NPID 2>/dev/null; for p in $SPIDS; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT INT TERM
mkdir -p "$TMP/html" "$TMP/tmp"
head -c 600 /dev/zero | tr '\0' a >"$TMP/html/f601"
echo >>"$TMP/html/f601"
head -c 601 /dev/zero | tr '\0' b >"$TMP/body601"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/key.pem" \
  -out "$TMP/cert.pem" -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1,DNS:localhost >/dev/null 2>&1
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for i in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 1)" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
P=$(free_port)
PS=$(free_port)
cat >"$TMP/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $TMP/nginx.pid;
error_log $TMP/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $TMP/tmp/body;
    proxy_temp_path $TMP/tmp/proxy;
    fastcgi_temp_path $TMP/tmp/fastcgi;
    uwsgi_temp_path $TMP/tmp/uwsgi;
    scgi_temp_path $TMP/tmp/scgi;
    keepalive_requests 100000000;
    keepalive_timeout 300s;
    server { listen 127.0.0.1:$P http2; root $TMP/html; }
    server {
        listen 127.0.0.1:$PS ssl http2; root $TMP/html;
        ssl_protocols TLSv1.3;
        ssl_certificate $TMP/cert.pem; ssl_certificate_key $TMP/key.pem;
    }
}
CONF
nginx -e "$TMP/error.log" -p "$TMP" -c "$TMP/nginx.conf" >"$TMP/nginx.out" 2>&1 &
NPID=$!
wait_port "$P"
wait_port "$PS"

# h2load URL [ARGS...] -> "req_per_s cpu_s requests" (CPU: its getrusage)
run_h2load() {
  python3 - "$@" <<'PY'
import re, resource, subprocess, sys
out = subprocess.run(["h2load"] + sys.argv[2:] + [sys.argv[1]], capture_output=True, text=True).stdout
r = resource.getrusage(resource.RUSAGE_CHILDREN)
rps = re.search(r"finished in [0-9.]+m?s, ([0-9.]+) req/s", out)
done = re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", out)
print(rps.group(1) if rps else "0", r.ru_utime + r.ru_stime, done.group(2) if done else "0")
PY
}

# arkbench SCENARIO -> "rt_per_s cpu_s completed ok"
run_arkbench() {
  rm -rf "$TMP/r"
  "$BIN" run "$1" --out "$TMP/r" >/dev/null 2>&1 || true
  python3 - "$TMP/r/runs.jsonl" <<'PY'
import json, sys
try:
    r = json.loads(open(sys.argv[1]).readline())
    print(r["round_trips_per_s"], r["cpu_user_s"] + r["cpu_sys_s"], r["completed"], str(r["ok"]).lower())
except Exception:
    print(0, 0, 0, "false")
PY
}

# compare NAME H2LOAD_URL "H2LOAD_ARGS" SCENARIO
compare() {
  name=$1 url=$2 hargs=$3 scen=$4
  rr="" cr=""
  for i in $(seq "$ROUNDS"); do
    # shellcheck disable=SC2086
    set -- $(run_h2load "$url" -c$C -m$M -t1 -D "$S" $hargs)
    hr=$1 hc=$2 hn=$3
    set -- $(run_arkbench "$scen")
    ar=$1 ac=$2 an=$3 aok=$4
    r=$(awk -v a="$ar" -v h="$hr" 'BEGIN { if (h > 0) printf "%.3f", a / h; else print "nan" }')
    c=$(awk -v ac="$ac" -v an="$an" -v hc="$hc" -v hn="$hn" 'BEGIN {
      if (an > 0 && hn > 0 && hc > 0) printf "%.3f", (ac / an) / (hc / hn); else print "nan" }')
    echo "$name round $i: h2load $hr req/s ($hn requests, $(awk -v c="$hc" -v n="$hn" 'BEGIN { if (n > 0) printf "%.2f", c / n * 1e6; else print "-" }') us CPU each)   arkbench $ar req/s (ok $aok, $(awk -v c="$ac" -v n="$an" 'BEGIN { if (n > 0) printf "%.2f", c / n * 1e6; else print "-" }') us CPU each)   req/s ratio $r   CPU/request ratio $c"
    rr="$rr $r"
    cr="$cr $c"
  done
  for kind in "req/s:$rr" "CPU per request:$cr"; do
    echo "${kind#*:}" | tr ' ' '\n' | grep -v '^$' | grep -v nan | sort -n | awk -v p="$name" -v k="${kind%%:*}" '{ v[NR] = $1 } END {
      if (NR == 0) { printf "%s: %s ratio arkbench / h2load: no rounds\n", p, k; exit }
      m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%s: %s ratio arkbench / h2load: median %.3f, range [%.3f, %.3f] over %d rounds\n", p, k, m, v[1], v[NR], NR }'
  done
}

echo "h2load -c$C -m$M -t1 vs arkbench clients=$C window=$M sharded:1, ${S}s, $ROUNDS rounds alternated"
for proto in h2 h2c; do
  if [ "$proto" = h2 ]; then port=$PS url="https://127.0.0.1:$PS"; else port=$P url="http://127.0.0.1:$P"; fi
  cat >"$TMP/ngx_$proto.lua" <<LUA
return { name = "h2_vs_h2load", protocol = "$proto", clients = $C, window = $M,
         topology = "sharded:1", target = "127.0.0.1:$port", warmup = 0.25,
         duration = $S, repetitions = 1, request = { path = "/f601" },
         $([ "$proto" = h2 ] && echo "tls = { ca = \"$TMP/cert.pem\", version = \"1.3\" }") }
LUA
  compare "nginx $proto (601-byte file)" "$url/f601" "" "$TMP/ngx_$proto.lua"
done
for proto in h2 h2c; do
  sp=$(free_port)
  extra=""
  [ "$proto" = h2 ] && extra="--cert-out $TMP/serve_$proto.pem"
  # shellcheck disable=SC2086
  "$BIN" serve --protocol "$proto" --listen "127.0.0.1:$sp" --topology sharded:1 --payload 601 $extra \
    >"$TMP/serve_$proto.out" 2>&1 &
  SPIDS="$SPIDS $!"
  wait_port "$sp"
  if [ "$proto" = h2 ]; then url="https://127.0.0.1:$sp"; else url="http://127.0.0.1:$sp"; fi
  cat >"$TMP/own_$proto.lua" <<LUA
return { name = "h2_vs_h2load_own", protocol = "$proto", clients = $C, window = $M,
         topology = "sharded:1", target = "127.0.0.1:$sp", payload = 601, warmup = 0.25,
         duration = $S, repetitions = 1,
         $([ "$proto" = h2 ] && echo "tls = { ca = \"$TMP/serve_$proto.pem\" }") }
LUA
  compare "arkbench serve $proto (601-byte echo)" "$url/echo" "-d $TMP/body601" "$TMP/own_$proto.lua"
done
