#!/bin/sh
# bench/nginx_vs_wrk.sh [ROUNDS] [CONNECTIONS] [SECONDS] -- arkbench's
# http/https client in request mode against wrk, on the same nginx, the
# same connections, one thread each.
#
# Starts nginx (one worker, keep-alive for the whole run, a static 1 KiB
# page at /) on two loopback ports, plain and TLS (an EC P-256 certificate
# made here with openssl), then for http and for https alternates ROUNDS
# times: wrk -t1 -cC -dS URL/ and arkbench (request = { path = "/" },
# clients = C, window = 1 -- wrk does not pipeline -- sharded:1, target=,
# tls.ca = the certificate) for S seconds.  Prints each round and the
# median of the per-round ratios arkbench / wrk.  Both are bound by nginx's
# one worker on most machines, so the ratio says whether arkbench keeps up
# with a server as wrk does (goal >= 0.95).  Needs nginx, wrk, openssl,
# python3.
set -eu
ROOT=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
ROUNDS=${1:-3}
C=${2:-16}
S=${3:-3}
BIN=${ARKBENCH_BIN:-$ROOT/build/arkbench}
export ARKBENCH_ROOT=$ROOT
TMP=$(mktemp -d)
NPID=
trap '[ -n "$NPID" ] && kill $NPID 2>/dev/null; rm -rf "$TMP"' EXIT INT TERM
mkdir -p "$TMP/html" "$TMP/tmp"
head -c 1023 /dev/zero | tr '\0' a >"$TMP/html/index.html"
echo >>"$TMP/html/index.html"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/key.pem" \
  -out "$TMP/cert.pem" -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1,DNS:localhost >/dev/null 2>&1
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
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
    server { listen 127.0.0.1:$P; root $TMP/html; }
    server {
        listen 127.0.0.1:$PS ssl; root $TMP/html;
        ssl_protocols TLSv1.3;
        ssl_certificate $TMP/cert.pem; ssl_certificate_key $TMP/key.pem;
    }
}
CONF
nginx -e "$TMP/error.log" -p "$TMP" -c "$TMP/nginx.conf" >"$TMP/nginx.out" 2>&1 &
NPID=$!
for i in $(seq 50); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $P), 1)" 2>/dev/null && break
  sleep 0.1
done
echo "server: nginx, one worker, 1 KiB page; $C connections, 1 thread, ${S}s, $ROUNDS rounds"
for proto in http https; do
  port=$P; [ "$proto" = https ] && port=$PS
  cat >"$TMP/$proto.lua" <<LUA
return { name = "nginx_vs_wrk", protocol = "$proto", clients = $C, window = 1,
         topology = "sharded:1", target = "127.0.0.1:$port", warmup = 0.25,
         duration = $S, repetitions = 1, request = { path = "/" },
         tls = { ca = "$TMP/cert.pem" } }
LUA
  ratios=""
  for i in $(seq "$ROUNDS"); do
    w=$(wrk -t1 -c"$C" -d"${S}s" "$proto://127.0.0.1:$port/" | sed -n 's/^Requests\/sec:[[:space:]]*\([0-9.]*\).*/\1/p')
    rm -rf "$TMP/r"
    "$BIN" run "$TMP/$proto.lua" --out "$TMP/r" >/dev/null 2>&1 || true
    a=$(sed -n 's/.*"round_trips_per_s":\([0-9.e+]*\).*/\1/p' "$TMP/r/runs.jsonl")
    ok=$(sed -n 's/.*"ok":\(true\|false\).*/\1/p' "$TMP/r/runs.jsonl" | head -1)
    r=$(awk -v a="$a" -v w="$w" 'BEGIN { if (w > 0) printf "%.3f", a / w; else print "nan" }')
    echo "$proto round $i: wrk $w req/s   arkbench $a round trips/s (ok $ok)   ratio $r"
    ratios="$ratios $r"
  done
  echo "$ratios" | tr ' ' '\n' | grep -v '^$' | sort -n | awk -v p="$proto" '{ v[NR] = $1 } END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%s: median ratio arkbench / wrk: %.3f over %d rounds\n", p, m, NR }'
done
