#!/bin/sh
# fuzz/build.sh OUTDIR -- builds the libFuzzer targets (ASan + UBSan) and
# their seed corpora into OUTDIR.  Needs Debian's `clang` and
# `libclang-rt-14-dev` (libFuzzer + sanitizer runtimes; only recommended by
# clang, so name it with --no-install-recommends) and the project's build
# dependencies (libuv1-dev, libssl-dev, node-llhttp, pkg-config).
# See fuzz/README.md for running them.
set -eu

OUT=${1:?usage: fuzz/build.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${CC:-}" ]; then
  if command -v clang >/dev/null 2>&1; then CC=clang; else CC=clang-14; fi
fi
LLHTTP_SRC=${LLHTTP_SRC:-/usr/share/llhttp}
LLHTTP_INC=${LLHTTP_INC:-/usr/share/include/llhttp}
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CFLAGS="-g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra $SAN"
LIBS="$(pkg-config --libs libuv 2>/dev/null || echo -luv) -lssl -lcrypto -lnghttp2"

mkdir -p "$OUT/obj"
# llhttp is instrumented too, so the HTTP target's coverage reaches into it.
for f in api http llhttp; do
  $CC -g -O1 -w $SAN -fsanitize=fuzzer-no-link -I"$LLHTTP_INC" \
    -c "$LLHTTP_SRC/$f.c" -o "$OUT/obj/llhttp_$f.o"
done
# The codecs and what they use; -iquote so that core/ headers never shadow
# system ones (a core header named like a system one).
CORE="base/ab_error.c base/clock.c proto/framing.c base/outbuf.c proto/codec_length.c proto/ws.c proto/http.c proto/http_request.c proto/h2.c proto/h2_mem.c proto/h2_request.c"
SRCS=""
for f in $CORE; do SRCS="$SRCS $ROOT/core/$f"; done
for t in length ws http; do
  # shellcheck disable=SC2086
  $CC $CFLAGS -fsanitize=fuzzer -iquote "$ROOT/core" -I"$LLHTTP_INC" \
    $SRCS "$ROOT/fuzz/fuzz_$t.c" "$OUT"/obj/llhttp_*.o $LIBS -o "$OUT/fuzz_$t"
done
# HTTP/2: one binary per side
for side in client:1 server:0; do
  # shellcheck disable=SC2086
  $CC $CFLAGS -fsanitize=fuzzer -DFZ_SIDE="${side#*:}" -iquote "$ROOT/core" -I"$LLHTTP_INC" \
    $SRCS "$ROOT/fuzz/fuzz_h2.c" "$OUT"/obj/llhttp_*.o $LIBS -o "$OUT/fuzz_h2_${side%:*}"
done

# Seed corpora: a few valid streams per target (byte 0 = split/max_msg).
seed() { # seed DIR NAME PRINTF-FORMAT (a %0Nd with no argument: N zeros)
  mkdir -p "$OUT/$1"
  printf "$3" >"$OUT/$1/$2"
}
# length: 1-, 3- and 9-byte prefixes; raw (bit 6)
seed seeds_length small '\070\005hello\000\003abc'
seed seeds_length mid '\071\376\000\001%0256d'
seed seeds_length big '\077\377\000\000\001\000\000\000\000\000xyz'
seed seeds_length raw '\100abc'
# ws: server-bound masked frames with fragments and a ping; client-bound
# unmasked; a handshake request and response
seed seeds_ws masked '\070\202\203\001\002\003\004\140\140\140\002\201\000\000\000\000a\211\200\000\000\000\000\200\201\000\000\000\000b'
seed seeds_ws unmasked '\070\002\003abc\211\002hi\000\001d\200\001e\212\000\202\176\000\200%0128d\210\002\003\350'
seed seeds_ws hs_request '\077GET /echo HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n\202\200\001\002\003\004'
seed seeds_ws hs_response '\077HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n\202\001x'
# http: responses (chunked with extension and trailer, 103, 204) and
# requests (pipelined, chunked, 404, close)
seed seeds_http responses '\077HTTP/1.1 103 Early Hints\r\nLink: <a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nT: v\r\n\r\nHTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 500 Oops\r\nContent-Length: 1\r\n\r\nz'
seed seeds_http requests '\077POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcPOST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2;e\r\nhi\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\nPOST /echo HTTP/1.1\r\nConnection: close\r\nContent-Length: 1\r\n\r\nq'
seed seeds_http eof '\070HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n%0600d'
# h2 (byte 0: bit 5 client, bit 6 request mode): the server gets the
# preface's magic first; a SETTINGS, a request (HEADERS POST /echo, DATA)
# and a response (HEADERS :status 200, DATA), a RST_STREAM and a GOAWAY
seed seeds_h2_server request '\037\000\000\000\004\000\000\000\000\000\000\000\014\001\004\000\000\000\001\203\206\104\005/echo\101\001h\000\000\003\000\001\000\000\000\001abc'
seed seeds_h2_client response '\077\000\000\006\004\000\000\000\000\000\000\003\000\000\000\001\000\000\001\001\004\000\000\000\001\210\000\000\004\000\001\000\000\000\001abcd\000\000\004\003\000\000\000\000\003\000\000\000\010'
seed seeds_h2_client goaway '\177\000\000\000\004\000\000\000\000\000\000\000\001\001\005\000\000\000\001\210\000\000\010\007\000\000\000\000\000\000\000\001\000\000\000\000'
echo "built $OUT/fuzz_length $OUT/fuzz_ws $OUT/fuzz_http $OUT/fuzz_h2_client $OUT/fuzz_h2_server"
