// bench/asio_echo.cpp -- the native reference of the IO-model study
// (bench/README.md, docs/topologies.md): a length-framed TCP echo written on
// standalone Asio (Debian's libasio-dev), in two forms and two topologies.
//
//   asio_echo [--mode both|server|client] [--style callback|coroutine]
//             [--topology shared:N|sharded:N] [--clients C] [--window W]
//             [--framing length|raw] [--payload B] [--work N]
//             [--warmup S] [--duration S] [--listen HOST:PORT]
//             [--connect HOST:PORT] [--no-check]
//
// --topology shared:N   one io_context run by N threads (Asio's
//                       "1 context x N threads");
//            sharded:N  N io_contexts, each run by one thread; connection i
//                       (client end and server end) lives on context i mod N.
// --style callback      completion handlers (lambdas) per operation;
//         coroutine     one C++20 coroutine per connection end
//                       (asio::awaitable, co_spawn).
// --mode both           server and clients in this process, on the same
//                       threads (as `arkbench run` does by default);
//        server         serve on --listen until SIGINT/SIGTERM, then print
//                       one JSON line (arkbench's client can run against it:
//                       `--set target=HOST:PORT`);
//        client         run the clients against --connect (e.g. `arkbench
//                       serve --protocol tcp`).
//
// The wire format (--framing length, the default) is arkbench's `tcp` with
// `framing = "length"`
// (docs/protocols.md): a minimal length prefix (1 byte < 254, 254 + u16 LE,
// 255 + u64 LE) before each message, and each message of >= 16 bytes starts
// with arkbench's 16-byte header ('A','B', phase, 0, connection id u32 LE,
// sequence u64 LE) followed by its pattern, so the two programs can talk to
// each other either way.  The server echoes whole frames unchanged, doing
// --work iterations of xorshift64 per frame first (arkbench's `work`).
//
// --framing raw is arkbench's `framing = "raw"`: no prefix, every message
// exactly --payload bytes (1 .. 16 MiB).  The server is then the classic
// Asio echo: whatever a read returns is written back as it is (a message
// may arrive in pieces; the stream is echoed unchanged), and --payload only
// counts messages (server_messages = bytes echoed / payload) and places
// --work (once per message completed by a read).  The client's messages are
// arkbench's header and pattern when payload >= 16, else a pattern of
// (connection, index); the echo is still compared byte for byte.
//
// The client has the reference's batch shape: a connection writes
// window x payload bytes (window frames in one write), reads the whole echo
// back, checks it against what it sent (memcmp; --no-check skips it), and
// repeats.  Round trips/s = frames echoed during the measured interval
// (after --warmup) / its length, counted per batch.  Prints one JSON line:
// {"tool":"asio_echo",...,"round_trips_per_s":X,...}.  Exit 0 when no
// connection failed, 1 when one did (the line says which), 2 on a wrong
// command line.
#include <asio.hpp>
#include <asio/awaitable.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/use_awaitable.hpp>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using asio::ip::tcp;

namespace {

// ---- options ---------------------------------------------------------------

struct Options {
  std::string mode = "both";
  std::string style = "callback";
  std::string model = "shared";
  int n = 1;
  std::string listen = "127.0.0.1:0";
  std::string connect;
  int clients = 1;
  int window = 1;
  size_t payload = 1024;
  bool raw = false; // --framing raw
  uint64_t work = 0;
  double warmup = 0.25;
  double duration = 1.0;
  bool check = true;
};

const size_t kMinPayload = 16;   // --framing length: room for the header
const size_t kMinRawPayload = 1; // --framing raw
const size_t kMaxPayload = 16u * 1024 * 1024;
// a batch is written whole before its echo is read: past the loopback
// socket buffers (a few MiB) both ends would wait on each other
const size_t kMaxBatch = 1u * 1024 * 1024;

const char *const kUsage =
    "usage: asio_echo [--mode both|server|client] [--style callback|coroutine]\n"
    "                 [--topology shared:N|sharded:N] [--clients C] [--window W]\n"
    "                 [--framing length|raw] [--payload B] [--work N]\n"
    "                 [--warmup S] [--duration S] [--listen HOST:PORT]\n"
    "                 [--connect HOST:PORT] [--no-check]\n";

[[noreturn]] void usage(const std::string &why) {
  std::fprintf(stderr, "asio_echo: %s\n%s", why.c_str(), kUsage);
  std::exit(2);
}

long long to_int(const std::string &key, const std::string &v, long long lo, long long hi) {
  char *end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end || errno || x < lo || x > hi)
    usage(key + ": got '" + v + "'; expected an integer " + std::to_string(lo) + " .. " +
          std::to_string(hi));
  return x;
}

double to_seconds(const std::string &key, const std::string &v, double lo) {
  char *end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !(x >= lo) || x > 3600)
    usage(key + ": got '" + v + "'; expected seconds " + std::to_string(lo) + " .. 3600");
  return x;
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--no-check") {
      o.check = false;
      continue;
    }
    if (a == "-h" || a == "--help") {
      std::printf("asio_echo: the native Asio reference echo (docs/topologies.md)\n%s", kUsage);
      std::exit(0);
    }
    static const char *const with_value[] = {"--mode",    "--style",  "--topology", "--clients",
                                             "--window",  "--payload", "--work",    "--warmup",
                                             "--duration", "--listen", "--connect", "--framing"};
    bool known = false;
    for (const char *k : with_value) known = known || a == k;
    if (!known) usage("unknown option '" + a + "'");
    if (i + 1 >= argc) usage(a + " needs a value");
    std::string v = argv[++i];
    if (a == "--mode") {
      if (v != "both" && v != "server" && v != "client")
        usage("--mode: got '" + v + "'; expected both, server or client");
      o.mode = v;
    } else if (a == "--style") {
      if (v != "callback" && v != "coroutine")
        usage("--style: got '" + v + "'; expected callback or coroutine");
      o.style = v;
    } else if (a == "--topology") {
      size_t colon = v.find(':');
      std::string m = v.substr(0, colon);
      if (colon == std::string::npos || (m != "shared" && m != "sharded"))
        usage("--topology: got '" + v + "'; expected shared:N or sharded:N");
      o.model = m;
      o.n = (int)to_int("--topology", v.substr(colon + 1), 1, 256);
    } else if (a == "--clients") {
      o.clients = (int)to_int(a, v, 1, 100000);
    } else if (a == "--window") {
      o.window = (int)to_int(a, v, 1, 4096);
    } else if (a == "--framing") {
      if (v != "length" && v != "raw")
        usage("--framing: got '" + v + "'; expected length or raw");
      o.raw = v == "raw";
    } else if (a == "--payload") {
      o.payload = (size_t)to_int(a, v, 1, kMaxPayload);
    } else if (a == "--work") {
      o.work = (uint64_t)to_int(a, v, 0, 10000000);
    } else if (a == "--warmup") {
      o.warmup = to_seconds(a, v, 0);
    } else if (a == "--duration") {
      o.duration = to_seconds(a, v, 0.001);
    } else if (a == "--listen") {
      o.listen = v;
    } else if (a == "--connect") {
      o.connect = v;
    } else {
      usage("unknown option '" + a + "'");
    }
  }
  if (o.payload < (o.raw ? kMinRawPayload : kMinPayload))
    usage("--payload: got " + std::to_string(o.payload) + "; expected at least 16 with "
          "--framing length (the header), or --framing raw for 1 .. 15");
  if (o.mode == "client" && o.connect.empty()) usage("--mode client needs --connect HOST:PORT");
  if (o.mode != "server" && (size_t)o.window * (o.payload + 9) > kMaxBatch)
    usage("--window x --payload: a batch of " + std::to_string(o.window) + " x " +
          std::to_string(o.payload) + " B is over 1 MiB (each batch is written whole before "
          "its echo is read)");
  return o;
}

tcp::endpoint endpoint_of(const std::string &what, const std::string &hp) {
  size_t colon = hp.rfind(':');
  if (colon == std::string::npos) usage(what + ": got '" + hp + "'; expected HOST:PORT");
  std::string host = hp.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  asio::error_code ec;
  asio::ip::address addr = asio::ip::make_address(host, ec);
  if (ec) usage(what + ": got '" + hp + "'; expected a numeric address (127.0.0.1, [::1])");
  return tcp::endpoint(addr, (unsigned short)to_int(what, hp.substr(colon + 1), 0, 65535));
}

// ---- arkbench's wire format (docs/protocols.md) ---------------------------

size_t prefix_encode(uint8_t *out, uint64_t len) {
  if (len < 254) {
    out[0] = (uint8_t)len;
    return 1;
  }
  if (len <= 65535) {
    out[0] = 254;
    out[1] = (uint8_t)len;
    out[2] = (uint8_t)(len >> 8);
    return 3;
  }
  out[0] = 255;
  for (int i = 0; i < 8; i++) out[1 + i] = (uint8_t)(len >> (8 * i));
  return 9;
}

// > 0: prefix bytes, *len set; 0: more bytes needed; -1: not minimal or too long
int prefix_decode(const uint8_t *in, size_t avail, uint64_t *len) {
  if (avail < 1) return 0;
  uint64_t v = 0;
  int n;
  if (in[0] < 254) {
    v = in[0];
    n = 1;
  } else if (in[0] == 254) {
    if (avail < 3) return 0;
    v = (uint64_t)in[1] | (uint64_t)in[2] << 8;
    if (v < 254) return -1;
    n = 3;
  } else {
    if (avail < 9) return 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | in[1 + i];
    if (v <= 65535) return -1;
    n = 9;
  }
  if (v > kMaxPayload) return -1;
  *len = v;
  return n;
}

void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

// one message body: the 16-byte header, then the pattern of (conn, seq);
// below 16 bytes (raw framing only) a pattern of (conn, seq) alone
void msg_fill(uint8_t *p, size_t len, uint32_t conn, uint64_t seq) {
  const uint64_t golden = 0x9E3779B97F4A7C15ull;
  if (len < kMinPayload) {
    uint64_t w = (seq + 1) * golden ^ ((uint64_t)conn * 0xBF58476D1CE4E5B9ull);
    for (size_t i = 0; i < len; i++) p[i] = (uint8_t)(w >> (8 * (i % 8)));
    return;
  }
  p[0] = 'A';
  p[1] = 'B';
  p[2] = 2; // the measure phase
  p[3] = 0;
  for (int i = 0; i < 4; i++) p[4 + i] = (uint8_t)(conn >> (8 * i));
  put_u64(p + 8, seq);
  uint64_t w = seq * 0xD1B54A32D192ED03ull ^ ((uint64_t)conn << 32 | conn);
  for (size_t off = 16; off < len; off += 8) {
    w += golden;
    for (size_t i = 0; i < 8 && off + i < len; i++) p[off + i] = (uint8_t)(w >> (8 * i));
  }
}

uint64_t do_work(uint64_t iterations, uint64_t seed) {
  uint64_t x = seed | 1;
  for (uint64_t i = 0; i < iterations; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

// ---- per-thread counters (written by their own thread only) ---------------

struct alignas(64) Slot {
  std::atomic<uint64_t> echoed{0}; // client: frames whose echo came back
  std::atomic<uint64_t> served{0}; // server: frames echoed (raw: messages completed)
  uint64_t sink = 0;               // keeps the work loop from being dropped
};

struct Shared {
  Options opt;
  std::vector<Slot> slots;
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> connections{0};
  std::mutex first_error_mu; // taken once per failed connection, never per message
  std::string first_error;

  explicit Shared(const Options &o, size_t threads) : opt(o), slots(threads) {}
  void fail(const std::string &what) {
    if (errors.fetch_add(1) == 0) {
      std::lock_guard<std::mutex> g(first_error_mu);
      first_error = what;
    }
  }
};

thread_local size_t t_slot = 0;

void add(std::atomic<uint64_t> &c, uint64_t n) { // single writer: no locked add
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// ---- the server end --------------------------------------------------------

// What has been read of a connection: whole frames at the front are echoed
// as they are; a partial one waits for the rest.
struct Framer {
  std::vector<uint8_t> buf = std::vector<uint8_t>(65536);
  size_t have = 0;
  size_t need = 0; // bytes the partial frame at the front needs in all
  uint64_t total = 0; // raw: bytes read so far (messages = total / payload)

  asio::mutable_buffer space() {
    if (buf.size() < need) buf.resize(need);
    if (buf.size() - have < 4096) buf.resize(buf.size() * 2);
    return asio::buffer(buf.data() + have, buf.size() - have);
  }
  // whole frames at the front after n more bytes: their size; -1 on a bad prefix
  long long cut(size_t n, Shared &sh) {
    have += n;
    size_t off = 0, frames = 0;
    Slot &slot = sh.slots[t_slot];
    need = 0;
    if (sh.opt.raw) { // the stream is echoed as it comes; messages only counted
      uint64_t before = total / sh.opt.payload;
      total += n;
      frames = (size_t)(total / sh.opt.payload - before);
      if (sh.opt.work)
        for (size_t i = 0; i < frames; i++) slot.sink ^= do_work(sh.opt.work, slot.sink + i);
      add(slot.served, frames);
      return (long long)have;
    }
    while (off < have) {
      uint64_t len = 0;
      int p = prefix_decode(buf.data() + off, have - off, &len);
      if (p < 0) return -1;
      if (p == 0 || have - off < p + len) {
        need = (p == 0 ? 9 : p + len);
        break;
      }
      if (sh.opt.work) slot.sink ^= do_work(sh.opt.work, slot.sink + frames);
      off += p + len;
      frames++;
    }
    add(slot.served, frames);
    return (long long)off;
  }
  void consume(size_t whole) {
    std::memmove(buf.data(), buf.data() + whole, have - whole);
    have -= whole;
  }
};

class ServerCb : public std::enable_shared_from_this<ServerCb> {
public:
  ServerCb(tcp::socket s, Shared &sh) : sock_(std::move(s)), sh_(sh) {}
  void start() { read(); }

private:
  void read() {
    auto self = shared_from_this();
    sock_.async_read_some(f_.space(), [self](asio::error_code ec, size_t n) {
      if (ec) return self->ended(ec);
      long long whole = self->f_.cut(n, self->sh_);
      if (whole < 0) return self->sh_.fail("server: a length prefix that is not minimal");
      if (whole == 0) return self->read();
      asio::async_write(self->sock_, asio::buffer(self->f_.buf.data(), (size_t)whole),
                        [self, whole](asio::error_code wec, size_t) {
                          if (wec) return self->ended(wec);
                          self->f_.consume((size_t)whole);
                          self->read();
                        });
    });
  }
  void ended(asio::error_code ec) {
    if (ec != asio::error::eof && ec != asio::error::connection_reset &&
        ec != asio::error::operation_aborted)
      sh_.fail("server: " + ec.message());
  }
  tcp::socket sock_;
  Shared &sh_;
  Framer f_;
};

asio::awaitable<void> server_co(tcp::socket sock, Shared &sh) {
  Framer f;
  try {
    for (;;) {
      size_t n = co_await sock.async_read_some(f.space(), asio::use_awaitable);
      long long whole = f.cut(n, sh);
      if (whole < 0) {
        sh.fail("server: a length prefix that is not minimal");
        co_return;
      }
      if (whole == 0) continue;
      co_await asio::async_write(sock, asio::buffer(f.buf.data(), (size_t)whole),
                                 asio::use_awaitable);
      f.consume((size_t)whole);
    }
  } catch (const std::system_error &e) {
    if (e.code() != asio::error::eof && e.code() != asio::error::connection_reset)
      sh.fail(std::string("server: ") + e.what());
  }
}

void serve_socket(tcp::socket s, Shared &sh) {
  asio::error_code ec;
  s.set_option(tcp::no_delay(true), ec);
  sh.connections++;
  auto ex = s.get_executor();
  if (sh.opt.style == "callback") {
    auto c = std::make_shared<ServerCb>(std::move(s), sh);
    asio::post(ex, [c] { c->start(); });
  } else {
    asio::co_spawn(ex, server_co(std::move(s), sh), asio::detached);
  }
}

// ---- the client end --------------------------------------------------------

struct Batch {
  std::vector<uint8_t> out, in;
  Batch(const Options &o, uint32_t conn) {
    uint8_t pre[9];
    size_t p = o.raw ? 0 : prefix_encode(pre, o.payload);
    out.resize((p + o.payload) * (size_t)o.window);
    for (int k = 0; k < o.window; k++) {
      uint8_t *f = out.data() + (p + o.payload) * (size_t)k;
      std::memcpy(f, pre, p);
      msg_fill(f + p, o.payload, conn, (uint64_t)k);
    }
    in.resize(out.size());
  }
  bool echoed_right(const Options &o) const {
    return !o.check || std::memcmp(in.data(), out.data(), out.size()) == 0;
  }
};

class ClientCb : public std::enable_shared_from_this<ClientCb> {
public:
  ClientCb(tcp::socket s, Shared &sh, uint32_t id) : sock_(std::move(s)), sh_(sh), b_(sh.opt, id) {}
  void start() { write(); }

private:
  void write() {
    auto self = shared_from_this();
    asio::async_write(sock_, asio::buffer(b_.out), [self](asio::error_code ec, size_t) {
      if (ec) return self->sh_.fail("client: write: " + ec.message());
      self->read();
    });
  }
  void read() {
    auto self = shared_from_this();
    asio::async_read(sock_, asio::buffer(b_.in), [self](asio::error_code ec, size_t) {
      if (ec) return self->sh_.fail("client: read: " + ec.message());
      if (!self->b_.echoed_right(self->sh_.opt))
        return self->sh_.fail("client: the echo differs from what was sent");
      add(self->sh_.slots[t_slot].echoed, (uint64_t)self->sh_.opt.window);
      self->write();
    });
  }
  tcp::socket sock_;
  Shared &sh_;
  Batch b_;
};

asio::awaitable<void> client_co(tcp::socket sock, Shared &sh, uint32_t id) {
  Batch b(sh.opt, id);
  try {
    for (;;) {
      co_await asio::async_write(sock, asio::buffer(b.out), asio::use_awaitable);
      co_await asio::async_read(sock, asio::buffer(b.in), asio::use_awaitable);
      if (!b.echoed_right(sh.opt)) {
        sh.fail("client: the echo differs from what was sent");
        co_return;
      }
      add(sh.slots[t_slot].echoed, (uint64_t)sh.opt.window);
    }
  } catch (const std::system_error &e) {
    sh.fail(std::string("client: ") + e.what());
  }
}

// ---- the contexts and their threads ----------------------------------------

struct Reactors {
  std::vector<std::unique_ptr<asio::io_context>> ctx;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  std::vector<std::thread> threads;

  explicit Reactors(const Options &o) {
    int contexts = o.model == "shared" ? 1 : o.n;
    int hint = o.model == "shared" ? o.n : 1;
    for (int i = 0; i < contexts; i++) {
      ctx.push_back(std::make_unique<asio::io_context>(hint));
      guards.push_back(asio::make_work_guard(*ctx.back()));
    }
  }
  asio::io_context &of(size_t i) { return *ctx[i % ctx.size()]; }
  void run(const Options &o) {
    for (int t = 0; t < o.n; t++) {
      asio::io_context &c = o.model == "shared" ? *ctx[0] : *ctx[(size_t)t];
      threads.emplace_back([&c, t] {
        t_slot = (size_t)t;
        c.run();
      });
    }
  }
  void stop() {
    for (auto &c : ctx) c->stop();
    for (auto &t : threads) t.join();
    threads.clear();
  }
};

uint64_t echoed(Shared &sh) {
  uint64_t n = 0;
  for (auto &s : sh.slots) n += s.echoed.load(std::memory_order_relaxed);
  return n;
}

std::string json_text(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += (char)c;
    } else if (c < 0x20) {
      char e[8];
      std::snprintf(e, sizeof e, "\\u%04x", c);
      out += e;
    } else {
      out += (char)c;
    }
  }
  return out + "\"";
}

void print_line(Shared &sh, double measured, uint64_t round_trips) {
  const Options &o = sh.opt;
  uint64_t served = 0;
  for (auto &s : sh.slots) served += s.served.load(std::memory_order_relaxed);
  std::printf("{\"tool\":\"asio_echo\",\"mode\":\"%s\",\"style\":\"%s\",\"topology\":\"%s:%d\","
              "\"framing\":\"%s\",\"contexts\":%d,\"threads\":%d,\"clients\":%d,\"window\":%d,\"payload\":%zu,"
              "\"work\":%" PRIu64 ",\"warmup_s\":%g,\"duration_s\":%g,\"measured_s\":%.6f,"
              "\"round_trips\":%" PRIu64 ",\"round_trips_per_s\":%.1f,\"server_messages\":%" PRIu64
              ",\"server_connections\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"error\":%s}\n",
              o.mode.c_str(), o.style.c_str(), o.model.c_str(), o.n, o.raw ? "raw" : "length",
              o.model == "shared" ? 1 : o.n, o.n, o.clients, o.window, o.payload, o.work,
              o.warmup, o.duration, measured, round_trips,
              measured > 0 ? (double)round_trips / measured : 0.0, served,
              sh.connections.load(), sh.errors.load(),
              sh.first_error.empty() ? "null" : json_text(sh.first_error).c_str());
  std::fflush(stdout);
}

void accept_loop(tcp::acceptor &acc, Reactors &r, Shared &sh, size_t k) {
  acc.async_accept(r.of(k), [&acc, &r, &sh, k](asio::error_code ec, tcp::socket s) {
    if (ec) {
      if (ec != asio::error::operation_aborted) sh.fail("accept: " + ec.message());
      return;
    }
    serve_socket(std::move(s), sh);
    accept_loop(acc, r, sh, k + 1);
  });
}

asio::awaitable<void> accept_co(tcp::acceptor &acc, Reactors &r, Shared &sh) {
  try {
    for (size_t k = 0;; k++) serve_socket(co_await acc.async_accept(r.of(k), asio::use_awaitable), sh);
  } catch (const std::system_error &e) {
    if (e.code() != asio::error::operation_aborted) sh.fail(std::string("accept: ") + e.what());
  }
}

void start_accepting(tcp::acceptor &acc, Reactors &r, Shared &sh) {
  if (sh.opt.style == "callback")
    asio::post(acc.get_executor(), [&acc, &r, &sh] { accept_loop(acc, r, sh, 0); });
  else
    asio::co_spawn(acc.get_executor(), accept_co(acc, r, sh), asio::detached);
}

// connects every client in turn (so connection i is accepted i-th), then
// starts them; returns false when a connect failed
bool start_clients(const tcp::endpoint &to, Reactors &r, Shared &sh) {
  std::vector<tcp::socket> socks;
  for (int i = 0; i < sh.opt.clients; i++) {
    tcp::socket s(r.of((size_t)i));
    asio::error_code ec;
    s.connect(to, ec);
    if (!ec) s.set_option(tcp::no_delay(true), ec);
    if (ec) {
      sh.fail("client: connect: " + ec.message());
      return false;
    }
    socks.push_back(std::move(s));
  }
  for (int i = 0; i < sh.opt.clients; i++) {
    auto ex = socks[(size_t)i].get_executor();
    if (sh.opt.style == "callback") {
      auto c = std::make_shared<ClientCb>(std::move(socks[(size_t)i]), sh, (uint32_t)i);
      asio::post(ex, [c] { c->start(); });
    } else {
      asio::co_spawn(ex, client_co(std::move(socks[(size_t)i]), sh, (uint32_t)i), asio::detached);
    }
  }
  return true;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

int measure(Reactors &r, Shared &sh) {
  using clock = std::chrono::steady_clock;
  sleep_s(sh.opt.warmup);
  uint64_t c0 = echoed(sh);
  auto t0 = clock::now();
  sleep_s(sh.opt.duration);
  uint64_t c1 = echoed(sh);
  auto t1 = clock::now();
  r.stop();
  print_line(sh, std::chrono::duration<double>(t1 - t0).count(), c1 - c0);
  return sh.errors.load() ? 1 : 0;
}

int run_server(Reactors &r, Shared &sh) {
  tcp::acceptor acc(r.of(0));
  asio::signal_set signals(r.of(0), SIGINT, SIGTERM);
  try {
    tcp::endpoint ep = endpoint_of("--listen", sh.opt.listen);
    acc.open(ep.protocol());
    acc.set_option(tcp::acceptor::reuse_address(true));
    acc.bind(ep);
    acc.listen();
  } catch (const std::system_error &e) {
    std::fprintf(stderr, "asio_echo: --listen %s: %s\n", sh.opt.listen.c_str(), e.what());
    return 1;
  }
  auto started = std::chrono::steady_clock::now();
  std::atomic<bool> done{false};
  signals.async_wait([&done](asio::error_code, int) { done = true; });
  start_accepting(acc, r, sh);
  r.run(sh.opt);
  tcp::endpoint at = acc.local_endpoint();
  std::printf("listening on %s:%u\n", at.address().to_string().c_str(), at.port());
  std::fflush(stdout);
  while (!done) sleep_s(0.01);
  r.stop();
  double served = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  print_line(sh, served, 0);
  return sh.errors.load() ? 1 : 0;
}

int run_both(Reactors &r, Shared &sh) {
  tcp::acceptor acc(r.of(0), tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  start_accepting(acc, r, sh);
  r.run(sh.opt);
  if (!start_clients(acc.local_endpoint(), r, sh)) {
    r.stop();
    print_line(sh, 0, 0);
    return 1;
  }
  return measure(r, sh);
}

int run_client(Reactors &r, Shared &sh) {
  r.run(sh.opt);
  if (!start_clients(endpoint_of("--connect", sh.opt.connect), r, sh)) {
    r.stop();
    print_line(sh, 0, 0);
    return 1;
  }
  return measure(r, sh);
}

} // namespace

int main(int argc, char **argv) {
  Options o = parse(argc, argv);
  std::signal(SIGPIPE, SIG_IGN); // a peer gone is an error code, not a signal
  Shared sh(o, (size_t)o.n);
  Reactors r(o);
  if (o.mode == "server") return run_server(r, sh);
  if (o.mode == "client") return run_client(r, sh);
  return run_both(r, sh);
}
