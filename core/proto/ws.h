/* ws.h -- WebSocket (RFC 6455): the upgrade handshake and the frame codec.
 *
 * Handshake.  The client sends
 *   GET /echo HTTP/1.1 / Host / Upgrade: websocket / Connection: Upgrade /
 *   Sec-WebSocket-Key: <base64 of 16 random bytes> / Sec-WebSocket-Version: 13
 * and the server answers 101 Switching Protocols with Sec-WebSocket-Accept
 * = base64(SHA-1(key + GUID)), which the client checks.  Both directions
 * are parsed with llhttp by ab_ws_hs_t; bytes after the handshake (frames
 * sent right behind it) are left to the caller through *used.
 *
 * Codec (ab_codec_ws, codec.h / codecs.h contract): binary frames, minimal
 * 7/16/64-bit lengths, client frames masked with a fresh 32-bit key per
 * frame drawn from a per-connection PRNG seeded from RAND_bytes, server
 * frames unmasked.  Fragments are reassembled; control frames may come
 * between fragments: ping -> pong with the same payload written to c->out,
 * pong ignored, close -> a close is written back (if none was sent) and
 * parse returns AB_ECLOSED.  Text frames are accepted as data.
 *
 * Protocol errors write a close frame to c->out (once), count one in
 * c->protocol_errors and return:
 *   AB_EFRAME  length not minimally encoded (close 1002), or a message
 *              above c->max_msg (close 1009);
 *   AB_EPROTO  everything else (close 1002): RSV bits, unknown opcode,
 *              control frame fragmented or > 125 bytes, continuation with
 *              no message open or a new message inside one, a 64-bit length
 *              with its top bit set, an unmasked frame at the server, a
 *              masked frame at the client, a bad close payload.
 * After a close has been written, server_reply writes nothing and returns
 * AB_ECLOSED.
 */
#ifndef AB_WS_H
#define AB_WS_H

#include <stddef.h>
#include <stdint.h>

#include <llhttp.h>

#include "proto/codec.h"

#define AB_WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define AB_WS_KEY_LEN 24    /* base64 of 16 bytes */
#define AB_WS_ACCEPT_LEN 28 /* base64 of a 20-byte SHA-1 */
#define AB_WS_HS_MAX 16384  /* largest handshake accepted, bytes */

enum {
  AB_WS_CLOSE_NORMAL = 1000,
  AB_WS_CLOSE_PROTOCOL = 1002,
  AB_WS_CLOSE_TOO_BIG = 1009
};

extern const ab_codec_vt_t ab_codec_ws;

/* Pings received and pongs written by this connection's codec. */
void ab_ws_stats(const ab_codec_t *c, uint64_t *pings, uint64_t *pongs_sent);

/* Starts the closing handshake: writes a close frame with `code` (e.g.
 * AB_WS_CLOSE_NORMAL at the end of a run) to c->out.  Returns 0, AB_ECLOSED
 * when a close was already sent, AB_EINVAL for a code that may not be sent,
 * or AB_ENOMEM.  The peer's answering close then makes parse return
 * AB_ECLOSED. */
int ab_ws_send_close(ab_codec_t *c, unsigned code);

/* out = base64(SHA-1(client_key + GUID)), NUL-terminated (28 chars).
 * Returns 0, or AB_EINVAL when client_key is longer than 64 bytes or the
 * digest fails. */
int ab_ws_accept_key(const char *client_key, char out[AB_WS_ACCEPT_LEN + 1]);

/* out = base64 of 16 bytes from RAND_bytes, NUL-terminated (24 chars).
 * Returns 0 or AB_EPROTO when the RNG fails. */
int ab_ws_new_key(char out[AB_WS_KEY_LEN + 1]);

/* The client's upgrade request for `path` on `host` with `key`, written to
 * buf[0..cap) NUL-terminated.  Returns its length (without the NUL) or
 * AB_EINVAL when it does not fit or an argument holds CR/LF. */
int ab_ws_request(char *buf, size_t cap, const char *host, const char *path,
                  const char *key);

/* The server's 101 answer carrying `accept`.  Same returns. */
int ab_ws_response(char *buf, size_t cap, const char *accept);

/* Handshake parser, one per connection; must not move after init. */
typedef struct {
  llhttp_t parser;
  int is_client;
  int state;   /* 0 reading, 1 done, <0 failed (sticky) */
  int status;  /* server: HTTP status of the rejection (400, 404, 426, 431) */
  size_t seen; /* bytes fed so far */
  unsigned got; /* which required headers were seen and valid */
  int field;   /* header whose value is being read (internal) */
  char name[32];
  size_t name_len;
  char value[256];
  size_t value_len;
  char path[8];
  size_t path_len;
  char key[AB_WS_KEY_LEN + 1];      /* server: the client's key */
  char accept[AB_WS_ACCEPT_LEN + 1]; /* client: the accept it expects */
} ab_ws_hs_t;

/* Client: sent_key is the key it put in its request.  Server: NULL.
 * Returns 0 or AB_EINVAL (client with a bad key). */
int ab_ws_hs_init(ab_ws_hs_t *h, int is_client, const char *sent_key);

/* Feeds in[0..avail).  Returns 1 when the handshake is complete and valid
 * (*used = the bytes it took; the rest are frames), 0 when it needs more
 * (*used == avail), or AB_EPROTO (not an acceptable upgrade, malformed, or
 * longer than AB_WS_HS_MAX).  Sticky like the codecs. */
int ab_ws_hs_feed(ab_ws_hs_t *h, const uint8_t *in, size_t avail, size_t *used);

/* Server, after ab_ws_hs_feed returned 1: the 101 response; after it
 * failed: an HTTP error response (h->status, Connection: close) to send
 * before closing.  Returns the length or AB_EINVAL (buf too small, or
 * the handshake is still reading).  512 bytes always suffice. */
int ab_ws_hs_reply(const ab_ws_hs_t *h, char *buf, size_t cap);

#endif
