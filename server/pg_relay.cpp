// The relay: a PostgreSQL client of a PostgreSQL backend in transaction mode
// has its batches (messages up to a Sync, or one Query) sent to the server as
// bytes and the server's answers sent back as bytes, with only the names of
// prepared statements rewritten. The ordinary path (server/pg/) decodes
// every message into driver calls through libpq and encodes every row again;
// the relay does neither, and that is most of the proxy's own CPU per
// transaction (docs/protocol-postgres.md, "The relay", has the rules and the
// figures).
//
// A batch is relayed only when nothing in it needs the session layer: its
// statements are plain DML, queries and transaction control (no SET, SHOW,
// LISTEN, COPY, DEALLOCATE, DISCARD), its portal is the unnamed one, and the
// backend connection is plaintext and idle. Everything else takes the ordinary
// path, which shares the client's prepared statements with the relay.

#include <sys/socket.h>

#include <spdlog/spdlog.h>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>

#include "server/pg/client.hpp"
#include "server/pg/client_detail.hpp"
#include "server/pg_relay.hpp"
#include "sql/classify.hpp"

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
namespace relay = pg::relay;

/// The largest batch the relay takes: it writes a batch before it reads the
/// answers, so a batch must fit in the socket buffers (a larger one waits for
/// the ordinary path, which reads while it writes).
inline constexpr size_t kMaxRelayBatchBytes = 256 * 1024;
namespace {

uint32_t be32(const char* p) {
  auto u = [p](int i) { return uint32_t(static_cast<unsigned char>(p[i])); };
  return (u(0) << 24) | (u(1) << 16) | (u(2) << 8) | u(3);
}

/// Sends what is left of `data` from `sent` on without waiting: 1 all of it,
/// 0 the socket is full, -1 an error (errno says which).
int send_rest(int fd, const std::string& data, size_t& sent) {
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    }
  }
  return 1;
}

/// Waits until the backend's socket `fd` (watched through `b`) is writable.
awaitable<void> wait_writable(Backend& b, int fd) {
  auto& watcher = b.watch(fd, co_await asio::this_coro::executor);
  boost::system::error_code ec;
  co_await watcher.async_wait(asio::socket_base::wait_write,
                              asio::redirect_error(asio::use_awaitable, ec));
}

/// Reads what the backend's socket `fd` has, waiting for it when nothing is
/// there: bytes read, 0 with `ec` on end of stream or an error. A read through
/// the reactor, unlike a wait, re-arms nothing with the kernel.
awaitable<size_t> read_some(Backend& b, int fd, uint8_t* data, size_t size,
                            boost::system::error_code& ec) {
  auto& watcher = b.watch(fd, co_await asio::this_coro::executor);
  ec.clear();
  co_return co_await watcher.async_receive(asio::buffer(data, size),
                                           asio::redirect_error(asio::use_awaitable, ec));
}

std::string cache_key_of(std::string_view sql, std::span<const uint32_t> oids) {
  std::string key;
  key.reserve(sql.size() + 1 + oids.size() * 11);  // an OID has at most 10 digits
  key += sql;
  key += '\0';
  for (auto o : oids) {
    key += std::to_string(o);
    key += ',';
  }
  return key;
}

/// At most this many idle States per event loop (each about 9 KiB with
/// its read buffer).
constexpr size_t kRelayStateCache = 64;
/// The statements' and buffers' capacity a cached State may keep.
constexpr size_t kRelayKeepBytes = 16 * 1024;
}  // namespace

std::shared_ptr<PgClient::Prepared> PgClient::register_parse(const relay::ParseMsg& m,
                                                             int8_t plain) {
  auto p = std::make_shared<Prepared>();
  p->sql = std::string(m.sql);
  p->param_oids = m.oids;
  p->cls.kind = StatementKind::backend;
  p->relay_ok = 1;
  p->relay_plain = plain;
  p->key = cache_key_of(p->sql, p->param_oids);
  p->nparams = p->param_oids.size();
  ext().statements[std::string(m.name)] = p;
  return p;
}

PgRelay::Check PgRelay::check() {
  if (!c_.session_ || c_.skip_until_sync_ || c_.in_.empty()) return Check::no;
  if (!c_.session_->pool().pg_native() || c_.session_->mode() != config::PoolMode::transaction) {
    return Check::no;
  }
  // read_only.route_transactions: a read-only transaction's lease is taken on
  // the ordinary path, where the session picks the read-only database's pool.
  // read_only.route_statements: likewise an autocommit batch of reads.
  if (c_.session_->routes_reads() && !c_.session_->backend() && read_only_ahead()) {
    return Check::no;
  }
  // The rest of a routed statement's block (its Parse took the standby's
  // backend): the ordinary path runs it, and retries it on the primary.
  if (c_.session_->routed_statement()) return Check::no;
  // Open portals, or an implicit transaction of messages before this batch
  // (the ordinary path ends it at their Sync).
  if (c_.portals_open() || c_.session_->implicit()) return Check::no;
  // Settings SET in the transaction are read back at its end (settle_settings).
  if (c_.session_->settings_noted()) return Check::no;
  const size_t max_msg = c_.server_.config().server.max_message_size;
  if (!state_) state_ = RelayPath::of(c_.loop_).take_state();
  State& R = *state_;
  const auto buf = c_.in_.view();
  if (relay::scan_batch(buf, max_msg, R.frames) != relay::Scan::complete) return Check::no;
  const size_t total = R.frames.back().offset + R.frames.back().size;
  if (total > kMaxRelayBatchBytes) return Check::no;
  R.total = total;
  // The server splits statements as its standard_conforming_strings says.
  const bool bq = c_.session_->settings().backslash_quotes();

  // ---- 1. Does the relay take this batch? Decided before anything changes.
  std::vector<std::string_view> named;  // client statement names this batch parses
  bool parsed_unnamed = false, bound = false, parse_only = true;
  bool plain = true;
  auto statement_ok = [&](std::string_view name) {
    if (name.empty() && parsed_unnamed) return true;
    for (auto n : named)
      if (n == name) return true;
    if (!c_.ext_) return false;
    auto it = c_.ext_->statements.find(std::string(name));
    if (it == c_.ext_->statements.end()) return false;
    PgClient::Prepared& p = *it->second;
    if (p.relay_ok < 0 || p.relay_plain < 0) {
      bool pl = true;
      const bool ok = p.cls.kind == StatementKind::backend && !p.blank && p.show_name.empty() &&
                      sql::relay_may_send(p.sql, true, pl, bq);
      if (p.relay_ok < 0) p.relay_ok = ok;
      p.relay_plain = ok && pl;
    }
    plain = plain && p.relay_plain == 1;
    return p.relay_ok == 1;
  };
  for (const auto& f : R.frames) {
    const auto body = f.body(buf);
    parse_only = parse_only && (f.type == 'P' || f.type == 'S');
    switch (f.type) {
      case 'Q':
        if (body.empty() || body.find('\0') != body.size() - 1) return Check::no;
        if (!sql::relay_may_send(body.substr(0, body.size() - 1), false, plain, bq))
          return Check::no;
        break;
      case 'P': {
        if (!relay::parse_parse(body, R.parse) ||
            !sql::relay_may_send(R.parse.sql, true, plain, bq)) {
          return Check::no;
        }
        if (R.parse.name.empty()) {
          parsed_unnamed = true;
        } else {
          // An existing name is an error the ordinary path reports (42P05).
          for (auto n : named)
            if (n == R.parse.name) return Check::no;
          if (c_.ext_ && c_.ext_->statements.count(std::string(R.parse.name))) return Check::no;
          named.push_back(R.parse.name);
        }
        break;
      }
      case 'B': {
        relay::BindMsg m;
        if (!relay::parse_bind(body, m) || !m.portal.empty() || !statement_ok(m.statement)) {
          return Check::no;
        }
        bound = true;
        break;
      }
      case 'D': {
        relay::TargetMsg m;
        if (!relay::parse_target(body, m)) return Check::no;
        if (m.kind == 'S' ? !statement_ok(m.name) : (!m.name.empty() || !bound)) {
          return Check::no;
        }
        break;
      }
      case 'E': {
        relay::ExecuteMsg m;
        // A row limit leaves a portal suspended for a later batch: not relayed.
        if (!relay::parse_execute(body, m) || !m.portal.empty() || !bound || m.max_rows != 0) {
          return Check::no;
        }
        break;
      }
      case 'C': {
        relay::TargetMsg m;
        if (!relay::parse_target(body, m) || (m.kind == 'P' && !m.name.empty())) {
          return Check::no;
        }
        break;
      }
      default:  // 'S'
        break;
    }
  }

  R.plain = plain;

  // ---- 2. The client's statements. Parses are registered where the ordinary
  // path finds them too.

  // A batch of Parses while no backend is held (libpq's PQprepare: Parse, Sync)
  // is answered at once, as the ordinary path does: waiting for a backend here
  // could deadlock with the client's own connections that hold every backend
  // in open transactions. The statements are prepared on first use.
  if (parse_only && !c_.session_->backend()) {
    for (const auto& f : R.frames) {
      if (f.type != 'P') continue;
      relay::parse_parse(f.body(buf), R.parse);
      c_.register_parse(R.parse, R.plain ? 1 : -1);
      pg::Encoder(c_.out_).parse_complete();
    }
    c_.in_.consume(total);
    c_.ready_for_query();
    return Check::answered;
  }
  return Check::go;
}

awaitable<PgRelay::Relayed> PgRelay::run() {
  switch (check()) {
    case Check::no:
      co_return Relayed::no;
    case Check::answered:
      co_return Relayed::yes;
    case Check::go:
      break;
  }
  // ---- 3. A backend, relayable now (an idle one without a wait when it can).
  if (!c_.session_->try_backend_now()) {
    // What is answered goes out before a wait (a pipelining client gets each
    // answer as PostgreSQL would send it).
    if (!c_.out_.empty() && !co_await c_.flush()) co_return Relayed::closed;
    if (auto e = co_await c_.session_->ensure_backend()) {
      c_.send_error(*e);
      c_.in_.consume(state_->total);
      c_.ready_for_query();
      co_return Relayed::yes;
    }
    // The server's reports of the client's settings put back on this backend:
    // the client holds those values already, and kept they would pile up.
    (void)c_.session_->take_events();
  }
  if (!start()) co_return Relayed::no;
  co_return co_await rest(false);
}

bool PgRelay::known_on(Backend& b) {
  // Only statements the server has confirmed: a Parse of one running ahead
  // could fail or be skipped (an error before it), and a Parse here could
  // evict one a batch ahead still uses.
  State& R = *state_;
  const auto buf = c_.in_.view();
  std::vector<std::string_view> parsed;  // this batch's client names, all known
  for (const auto& f : R.frames) {
    const auto body = f.body(buf);
    std::string_view name;
    if (f.type == 'P') {
      relay::parse_parse(body, R.parse);
      if (!b.statements.relay_find(cache_key_of(R.parse.sql, R.parse.oids))) return false;
      parsed.push_back(R.parse.name);
      continue;
    }
    if (f.type == 'B') {
      relay::BindMsg m;
      relay::parse_bind(body, m);
      name = m.statement;
    } else if (f.type == 'D') {
      relay::TargetMsg m;
      relay::parse_target(body, m);
      if (m.kind != 'S') continue;
      name = m.name;
    } else {
      continue;
    }
    if (std::find(parsed.begin(), parsed.end(), name) != parsed.end()) continue;
    if (!c_.ext_) return false;
    auto it = c_.ext_->statements.find(std::string(name));
    if (it == c_.ext_->statements.end() || !b.statements.relay_find(it->second->key)) return false;
  }
  return true;
}

// The batch as the server gets it: the client's messages with its statement
// names mapped to the server's, Parses added where the server lacks one.
// `swallowed`: the first Parses were answered to the client already (a
// replay); `close_first`: server statements closed ahead of it.
void PgRelay::build(Backend& b, std::span<const uint8_t> buf, int swallowed,
                    std::span<const std::string> close_first) {
  State& R = *state_;
  R.to_server.clear();
  R.tracker.clear();
  R.parses.clear();
  R.executes = 0;
  R.shape = 0;
  for (const auto& name : close_first) {
    relay::put_target(R.to_server, 'C', 'S', name);
    R.tracker.expect(relay::Expect::swallow_close);
  }
  // Replayable (relay_replay): Parse, Bind, Describe and Execute up to one
  // final Sync, from an idle backend, each statement new to the client's view
  // (parsed in this batch, or never described to it).
  int syncs = 0;
  bool replayable = R.from_idle;
  int parse_frames = 0;
  bool cached = false;  // a statement the server had before this batch is used
  // The server's name for a client statement, preparing it first when the
  // server does not have it.
  auto server_name = [&](const PgClient::Prepared& p) -> std::string {
    for (const auto& e : R.parses) {
      if (e.key == p.key && !e.server_name.empty()) return e.server_name;
    }
    if (const auto* n = b.statements.relay_find(p.key)) {
      cached = true;
      return *n;
    }
    std::string evicted;
    std::string name = b.statements.relay_name(p.key, &evicted);
    if (!evicted.empty()) {
      relay::put_target(R.to_server, 'C', 'S', evicted);
      R.tracker.expect(relay::Expect::swallow_close);
    }
    relay::put_parse(R.to_server, name, p.sql, p.param_oids);
    R.tracker.expect(relay::Expect::swallow_parse, static_cast<int>(R.parses.size()));
    R.parses.push_back({"", p.key, name, true});
    return name;
  };
  auto client_statement = [&](std::string_view name) -> PgClient::Prepared& {
    return *c_.ext().statements.find(std::string(name))->second;
  };
  // A statement the client sees the shape of from now on.
  auto shown = [&](PgClient::Prepared& p, std::string_view name) {
    if (p.shown || p.described) {
      bool parsed_here = false;
      for (const auto& e : R.parses)
        parsed_here = parsed_here || (!e.added && e.client_name == name && e.key == p.key);
      if (!parsed_here) replayable = false;
    }
    p.shown = true;
  };
  for (const auto& f : R.frames) {
    const auto body = f.body(buf);
    switch (f.type) {
      case 'P': {
        relay::parse_parse(body, R.parse);
        auto p = c_.register_parse(R.parse, R.plain ? 1 : -1);
        const int tag = static_cast<int>(R.parses.size());
        // Replayed: the client has its ParseComplete from the first time.
        const bool told = parse_frames++ < swallowed;
        // The unnamed statement too becomes a named one on the server, kept
        // for the next client that sends the same text: the server parses
        // and plans it once, not once per execution (as the ordinary path's
        // statement cache does).
        const std::string* known = b.statements.relay_find(p->key);
        for (const auto& e : R.parses) {
          if (!known && e.key == p->key && !e.server_name.empty()) known = &e.server_name;
        }
        if (known) {
          cached = true;
          // The server has it: the client's ParseComplete comes from here.
          if (!told) R.tracker.expect(relay::Expect::emit_parse_complete, tag);
          R.parses.push_back({std::string(R.parse.name), p->key, "", false});
          break;
        }
        std::string evicted;
        std::string name = b.statements.relay_name(p->key, &evicted);
        if (!evicted.empty()) {
          relay::put_target(R.to_server, 'C', 'S', evicted);
          R.tracker.expect(relay::Expect::swallow_close);
        }
        relay::put_parse(R.to_server, name, p->sql, p->param_oids);
        R.tracker.expect(told ? relay::Expect::swallow_parse : relay::Expect::parse, tag);
        R.parses.push_back({std::string(R.parse.name), p->key, std::move(name), false});
        break;
      }
      case 'B': {
        relay::BindMsg m;
        relay::parse_bind(body, m);
        PgClient::Prepared& p = client_statement(m.statement);
        shown(p, m.statement);
        R.shape = pool::Pipeline::shape_add(R.shape, p.key);
        std::string name = server_name(p);
        relay::put_bind(R.to_server, m.portal, name, m.rest);
        R.tracker.expect(relay::Expect::bind);
        break;
      }
      case 'D': {
        relay::TargetMsg m;
        relay::parse_target(body, m);
        if (m.kind == 'S') {
          PgClient::Prepared& p = client_statement(m.name);
          shown(p, m.name);
          std::string name = server_name(p);
          relay::put_target(R.to_server, 'D', 'S', name);
        } else {
          R.to_server.append(f.whole(buf));
        }
        R.tracker.expect(m.kind == 'S' ? relay::Expect::describe_statement
                                       : relay::Expect::describe_portal);
        break;
      }
      case 'C': {
        replayable = false;
        relay::TargetMsg m;
        relay::parse_target(body, m);
        if (m.kind == 'S') {
          // The client's name goes; the server keeps its copy for the next
          // client that prepares the same statement.
          c_.ext().statements.erase(std::string(m.name));
          R.tracker.expect(relay::Expect::emit_close_complete);
        } else {
          R.to_server.append(f.whole(buf));
          R.tracker.expect(relay::Expect::close);
        }
        break;
      }
      case 'E':
        R.to_server.append(f.whole(buf));
        R.tracker.expect(relay::Expect::execute);
        ++R.executes;
        break;
      case 'S':
        R.to_server.append(f.whole(buf));
        R.tracker.expect(relay::Expect::sync);
        ++syncs;
        break;
      case 'Q':
        replayable = false;
        R.shape = pool::Pipeline::shape_add(R.shape, body);
        R.to_server.append(f.whole(buf));
        R.tracker.expect(relay::Expect::query);
        break;
    }
  }
  R.replayable = cached && replayable && syncs == 1 && R.frames.back().type == 'S';
}
bool PgRelay::start(Backend* joining, bool known) {
  State& R = *state_;
  Backend& b = joining ? *joining : *c_.session_->backend();
  const int fd = b.conn.impl()->relay_socket();
  if (fd < 0) return false;  // TLS, or work in flight: the ordinary path
  const auto buf = c_.in_.view();
  if (joining) {
    if (!known && !known_on(b)) return false;
    R.from_idle = true;
  } else {
    R.from_idle = c_.session_->tx_state() == db::TxState::idle;
  }
  c_.session_->statement_begin();

  build(b, buf, 0, {});
  // A batch that may meet a statement prepared before DDL keeps its bytes for
  // replay (`buf` goes with the consume).
  if (R.replayable) R.copy.assign(reinterpret_cast<const char*>(buf.data()), R.total);
  c_.in_.consume(R.total);  // `buf` and the frames are stale from here on

  // ---- 5. Sent, then the answers passed on until the batch's ReadyForQuery
  // (pump).
  if (c_.out_.capacity() < kFirstRead)
    c_.out_.reserve(kFirstRead);  // one allocation, not a doubling series
  c_.session_->relay_running(true);
  c_.session_->pool().metrics().relayed.fetch_add(1, std::memory_order_relaxed);
  R.tracker.emit_due(c_.out_);
  R.fd = fd;
  R.sent = 0;
  R.lost.clear();
  R.client_gone = false;
  R.discard = false;
  R.turn_started = RelayPath::now();
  R.relayed_before = c_.session_->pool().metrics().relayed.load(std::memory_order_relaxed);
  R.opened = false;
  R.stale = false;
  R.replayed = false;
  R.held_error.clear();
  R.held.clear();
  R.reading_ahead = false;
  R.status = 'I';
  R.done = false;
  R.passthrough = 0;
  R.drained = false;
  return true;
}

bool PgRelay::hold(char type, std::string_view msg, bool forward) {
  State& R = *state_;
  if (!R.replayed && R.held_error.empty() && msg.size() >= 5 &&
      msg.size() == size_t(be32(msg.data() + 1)) + 1) {
    if (type == 't') {
      // A Describe's ParameterDescription comes before the server checks the
      // statement's result type: held with the error that may follow.
      R.held.append(msg);
      return true;
    }
    if (type == 'E') {
      const auto body = msg.substr(5);
      if (relay::error_field(body, 'C') == "0A000" &&
          relay::error_field(body, 'M') == kCachedPlanChanged) {
        // Held until the batch's ReadyForQuery shows whether it can be sent
        // again (relay_replay); the server skips the rest meanwhile.
        R.held_error.assign(msg);
        return true;
      }
    }
  }
  if (!R.held.empty() && R.held_error.empty()) {
    c_.out_.append(R.held);  // the batch went on: what was held is its answer
    R.held.clear();
  }
  // The client has part of the answer: no replay, nothing more to hold.
  if (forward && R.held_error.empty()) R.replayable = false;
  return false;
}
bool PgRelay::replay() {
  State& R = *state_;
  Backend& b = *c_.session_->backend();
  // Followers' batches are on the wire behind this one, or the server is not
  // idle: the answer would come out of order.
  if (R.status != 'I' || RelayPath::of(c_.loop_).has_followers(b)) return false;
  const std::span<const uint8_t> buf(reinterpret_cast<const uint8_t*>(R.copy.data()),
                                     R.copy.size());
  // Every server statement the batch uses is closed and prepared afresh.
  std::vector<std::string> stale;
  auto drop = [&](const std::string& key) {
    if (auto name = b.statements.relay_drop(key); !name.empty()) stale.push_back(std::move(name));
  };
  for (const auto& f : R.frames) {
    const auto body = f.body(buf);
    if (f.type == 'P') {
      relay::parse_parse(body, R.parse);
      drop(cache_key_of(R.parse.sql, R.parse.oids));
    } else if (f.type == 'B' || f.type == 'D') {
      std::string_view name;
      if (f.type == 'B') {
        relay::BindMsg m;
        relay::parse_bind(body, m);
        name = m.statement;
      } else {
        relay::TargetMsg m;
        relay::parse_target(body, m);
        if (m.kind != 'S') continue;
        name = m.name;
      }
      if (auto it = c_.ext().statements.find(std::string(name)); it != c_.ext().statements.end()) {
        drop(it->second->key);
      }
    }
  }
  spdlog::debug("client {}: a statement prepared before DDL is prepared again", c_.peer_);
  R.replayed = true;
  R.held_error.clear();
  build(b, buf, R.tracker.emitted_parses(), stale);
  b.relay_resending = true;  // nobody joins until it is through
  R.sent = 0;
  R.done = false;
  return true;
}
PgRelay::Wait PgRelay::pump() {
  State& R = *state_;
  switch (send_rest(R.fd, R.to_server, R.sent)) {
    case 0:
      return Wait::write;
    case -1:
      R.lost = std::string("could not send to the server: ") + std::strerror(errno);
      return Wait::none;
    default:
      break;
  }
  if (R.plain && R.from_idle && !R.opened && c_.session_->pool().config().pool.pipeline) {
    R.opened = true;
    RelayPath::of(c_.loop_).turn_began(c_, *c_.session_->backend());
  }
  InBuffer& in = R.from_server;
  const size_t flush_at =
      R.reading_ahead ? RelayPath::of(c_.loop_).pipeline().limits().max_read_ahead : kFlushBytes;
  while (R.lost.empty() && !R.done && (!R.client_gone || R.discard)) {
    // What is buffered first.
    while (!R.done) {
      auto v = in.view();
      const char* data = reinterpret_cast<const char*>(v.data());
      if (R.passthrough > 0) {
        if (v.empty()) break;
        size_t n = std::min(R.passthrough, v.size());
        c_.out_.append(data, n);
        in.consume(n);
        R.passthrough -= n;
        continue;
      }
      if (v.size() < 5) break;
      const char type = data[0];
      const uint32_t len = be32(data + 1);
      if (len < 4) {
        R.lost = "a malformed message from the server";
        break;
      }
      const size_t whole = size_t(len) + 1;
      if (v.size() < whole && type != 'D') break;  // the rest is on its way
      auto step = R.tracker.on_message(type);
      if (step.unexpected) {
        R.lost = fmt::format("an unexpected message ('{}') from the server", type);
        break;
      }
      if (R.replayable &&
          hold(type, std::string_view(data, std::min(whole, v.size())), step.forward)) {
        in.consume(whole);
        R.done = step.done;
        continue;
      }
      if (v.size() < whole) {  // a DataRow larger than what has arrived: pass it on as it comes
        c_.out_.append(data, v.size());
        R.passthrough = whole - v.size();
        in.consume(v.size());
      } else {
        std::string_view msg(data, whole);
        std::string_view body = msg.substr(5);
        if (type == 'E') {
          auto state = relay::error_field(body, 'C');
          metrics().sqlstate(state.size() == 5 ? state : std::string_view("XX000"));
          if (state == "26000") R.stale = true;
          if (state == "0A000" && relay::error_field(body, 'M') == kCachedPlanChanged) {
            c_.session_->mark_dirty();  // its statements predate DDL: DISCARD ALL before reuse
          }
          auto severity = relay::error_field(body, 'V');
          if (severity.empty()) severity = relay::error_field(body, 'S');
          db::Error e;
          e.sqlstate = std::string(state);
          c_.session_->explain_cancel(e);  // 57014: why wirepool cancelled it, if it did
          if (severity == "FATAL" || severity == "PANIC" || !e.message.empty()) {
            relay::put_error_as_error(c_.out_, body, e.message);
          } else {
            c_.out_.append(msg);
          }
        } else if (type == 'S') {
          size_t nul = body.find('\0');
          if (nul != std::string_view::npos) {
            auto rest = body.substr(nul + 1);
            db::ParameterChange c{std::string(body.substr(0, nul)),
                                  std::string(rest.substr(0, rest.find('\0')))};
            c_.session_->on_parameter(c);
            (void)c_.session_->take_events();  // passed on below, as the server sent it
          }
          c_.out_.append(msg);
        } else {
          if (type == 'Z') {
            R.status = body.empty() ? 'I' : body[0];
            if (!R.held_error.empty()) {
              if (step.done && replay()) {
                R.held.clear();
                in.consume(whole);
                R.tracker.emit_due(c_.out_);
                switch (send_rest(R.fd, R.to_server, R.sent)) {
                  case 0:
                    return Wait::write;
                  case -1:
                    R.lost = std::string("could not send to the server: ") + std::strerror(errno);
                    return Wait::none;
                  default:
                    continue;
                }
              }
              // Not sent again: the client gets the error after all.
              metrics().sqlstate("0A000");
              c_.session_->mark_dirty();
              c_.out_.append(R.held);
              c_.out_.append(R.held_error);
              R.held.clear();
              R.held_error.clear();
            }
            c_.answered_ = c_.answered_ || step.forward;
          }
          if (step.forward) c_.out_.append(msg);
        }
        in.consume(whole);
      }
      R.tracker.emit_due(c_.out_);
      R.done = step.done;
      if (R.discard) c_.out_.clear();  // its client left; the followers' answers come next
      if (c_.out_.size() >= flush_at) return Wait::flush;
    }
    if (R.done || !R.lost.empty()) break;
    // The last read emptied the socket, so the next one may wait: the rows
    // so far go to the client while the server works on the rest.
    if (R.drained && !c_.out_.empty() && !R.reading_ahead) {
      R.drained = false;
      return Wait::flush;
    }
    // The answer is often there already (the server ran while this thread
    // waited for the CPU): taken without a wait.
    in.reserve_tail(kReadChunk);
    const size_t space = in.space();
    ssize_t got = ::recv(R.fd, in.tail(), space, MSG_DONTWAIT);
    if (got > 0) {
      took(static_cast<size_t>(got), space, {});
    } else if (got == 0) {
      took(0, space, asio::error::eof);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      c_.session_->relay_interrupt_if_cancelled();
      // An earlier batch's whole answer goes out before this one waits.
      if (c_.answered_ && !c_.out_.empty() && !R.reading_ahead) return Wait::flush;
      return Wait::read;
    } else if (errno != EINTR) {
      took(0, space, boost::system::error_code(errno, boost::system::system_category()));
    }
  }
  return Wait::none;
}

void PgRelay::took(size_t n, size_t space, boost::system::error_code ec) {
  State& R = *state_;
  R.drained = n < space;
  if (n > 0) {
    R.from_server.commit(n);
  } else if (ec == asio::error::eof) {
    R.lost = "the server closed the connection";
  } else if (ec) {
    R.lost = "could not receive from the server: " + ec.message();
  }
}

awaitable<PgRelay::Relayed> PgRelay::rest(bool flush_first) {
  State& R = *state_;
  if (flush_first) co_await flush();
  while (!R.client_gone || R.discard) {
    const Wait wait = pump();
    if (wait == Wait::none) break;
    if (wait == Wait::flush) {
      co_await flush();
    } else if (wait == Wait::write) {
      co_await wait_writable(*c_.session_->backend(), R.fd);
    } else {
      InBuffer& in = R.from_server;
      boost::system::error_code ec;
      const size_t space = in.space();
      size_t n = co_await read_some(*c_.session_->backend(), R.fd, in.tail(), space, ec);
      took(n, space, ec);
    }
  }
  co_return finish();
}

awaitable<void> PgRelay::flush() {
  State& R = *state_;
  Backend* b = c_.session_->backend();
  RelayPath& path = RelayPath::of(c_.loop_);
  switch (b ? path.head_flush(*b, R.reading_ahead, c_.out_.size()) : pool::HeadFlush::wait) {
    case pool::HeadFlush::disconnect:
      spdlog::warn(
          "client {}: disconnected: it stopped reading its result while {} other "
          "client(s) waited behind it",
          c_.peer_, path.pipeline().followers(b->lease));
      client_left();
      co_return;
    case pool::HeadFlush::wait:
      if (!co_await c_.flush()) client_left();
      co_return;
    case pool::HeadFlush::with_patience:
      break;
  }
  switch (co_await c_.flush_for(path.pipeline().limits().head_patience)) {
    case PgClient::Flushed::all:
      break;
    case PgClient::Flushed::gone:
      client_left();
      break;
    case PgClient::Flushed::blocked:
      R.reading_ahead = true;  // the rest comes into memory; the followers go on
      spdlog::debug("client {}: slow to read: its answer is read ahead for those behind it",
                    c_.peer_);
      break;
  }
}

void PgRelay::client_left() {
  State& R = *state_;
  R.client_gone = true;
  // Batches of other clients were sent behind this one: its answers are read
  // to the end (and dropped) so that theirs follow on a usable connection.
  if (!R.done && R.lost.empty() && RelayPath::of(c_.loop_).has_followers(*c_.session_->backend())) {
    R.discard = true;
    c_.out_.clear();
  }
}

PgRelay::Relayed PgRelay::finish() {
  State& R = *state_;
  Backend& b = *c_.session_->backend();
  InBuffer& in = R.from_server;
  const bool mid_row = R.passthrough > 0;  // a DataRow was half passed on
  c_.session_->relay_running(false);
  b.relay_resending = false;

  // ---- The pipeline. The batch ended idle at a message boundary: the lease
  // and what the server sent behind the batch's ReadyForQuery go to the first
  // follower. Otherwise the followers' batches are lost with the connection.
  RelayPath& path = RelayPath::of(c_.loop_);
  DatabasePool& pool = c_.session_->pool();
  const auto now = RelayPath::now();
  pool::TurnReport turn;
  turn.clean = R.lost.empty() && R.done && R.status == 'I' && !mid_row;
  turn.answered = !R.client_gone && R.lost.empty();
  turn.plain = R.plain;
  turn.shape = R.shape;
  turn.turn_started = R.turn_started;
  turn.progress = pool.metrics().relayed.load(std::memory_order_relaxed) - R.relayed_before;
  std::shared_ptr<PgClient> next =
      path.turn_end(c_, b, turn, now,
                    R.lost.empty() ? std::string_view("the batch ahead of it broke off mid-answer")
                                   : std::string_view(R.lost));
  if (next) {
    InBuffer& to = next->relay_.state().from_server;
    const auto rest = in.view();
    to.consume(to.size());
    if (!rest.empty()) {
      to.reserve_tail(rest.size());
      std::memcpy(to.tail(), rest.data(), rest.size());
      to.commit(rest.size());
    }
    next->relay_.state().drained = false;
  }
  in.consume(in.size());
  if (in.capacity() > kReadChunk) in.release();  // a large answer's buffer goes at once

  if (!next && (R.client_gone || !R.lost.empty())) {
    // The backend's stream is mid-answer: nobody can use it again.
    // A pipeline of several Executes ran in one implicit transaction.
    const bool had_transaction =
        c_.session_->in_transaction() || R.status == 'T' || R.status == 'E' || R.executes > 1;
    b.conn.impl()->relay_done(db::TxState::idle, true);
    if (!R.lost.empty()) {
      spdlog::warn("client {}: backend of database \"{}\" lost: {}", c_.peer_,
                   c_.session_->pool().config().name, R.lost);
      c_.session_->backend_lost();
    } else {
      c_.session_->drop_backend();
    }
    c_.session_->statement_end();
    if (R.client_gone || mid_row) return Relayed::closed;
    if (had_transaction) {
      // Its transaction is gone with the backend: as PostgreSQL and PgBouncer,
      // the client is told (FATAL) and disconnected.
      if (!R.tracker.failed()) {
        c_.send_error("08006", "server connection lost: " + R.lost, "FATAL");
      }
      c_.backend_gone_ = true;
      return Relayed::yes;
    }
    // Between transactions: an error and its ReadyForQuery, nothing was lost.
    if (!R.tracker.failed()) {
      c_.send_error("08006", "server connection lost: " + R.lost);
    }
    pg::Encoder(c_.out_).ready_for_query('I');
    return Relayed::yes;
  }

  const db::TxState state = R.status == 'T'   ? db::TxState::in_transaction
                            : R.status == 'E' ? db::TxState::failed
                                              : db::TxState::idle;
  b.conn.impl()->relay_done(state, false);
  if (R.stale) {
    // A statement the cache names is gone from the server: none is trusted.
    b.statements.forget();
  }
  std::vector<bool> ok(R.parses.size(), false);
  for (int tag : R.tracker.confirmed()) {
    if (tag < 0 || static_cast<size_t>(tag) >= R.parses.size()) continue;
    ok[tag] = true;
    auto& e = R.parses[tag];
    if (!e.server_name.empty()) b.statements.relay_add(e.key, std::move(e.server_name));
  }
  if (R.tracker.failed()) {
    // A Parse the server refused (or never reached) leaves no statement behind.
    for (size_t i = 0; i < R.parses.size(); ++i) {
      const auto& e = R.parses[i];
      if (ok[i] || e.added || !c_.ext_) continue;
      auto it = c_.ext_->statements.find(e.client_name);
      if (it != c_.ext_->statements.end() && it->second->key == e.key)
        c_.ext_->statements.erase(it);
    }
  }
  c_.session_->statement_end();
  c_.session_->sync_tx_state();
  // The transaction ended: its portals (none reading: check() saw to that) went
  // with it on the server, cursors among them, as at the ordinary path's Sync.
  if (state == db::TxState::idle && c_.ext_ && !c_.ext_->portals.empty()) c_.ext_->portals.clear();
  if (next) {
    next->relay_.state().turn_started = now;
    next->relay_.state().relayed_before = pool.metrics().relayed.load(std::memory_order_relaxed);
    c_.session_->hand_over(*next->session_);
    if (path.pipeline().is_open(b.lease)) path.pull(*next, b);  // a place behind it is free again
    // Its answers are read on its own turn of the loop, not inside this one.
    asio::post(c_.loop_.io, [next] { next->relay_loop(PgClient::LoopEntry::reading); });
    return R.client_gone ? Relayed::closed : Relayed::yes;
  }
  c_.session_->release_if_idle(false);
  return Relayed::yes;
}

// ---- The pipeline (docs/protocol-postgres.md, "Pipelining"). A backend whose
// running batch leaves it idle takes other clients' batches behind it when no
// backend is idle: PostgreSQL then reads several transactions with one wake-up
// instead of one each. pool/pipeline.hpp decides; RelayPath, one per event
// loop, carries its decisions out. All of a train's clients are on the loop of
// the session that holds its backend.

bool PgRelay::train_wait_begin() {
  if (!c_.session_->pool().config().pool.pipeline) return false;
  RelayPath::of(c_.loop_).wait_begin(c_);
  return state_->plain;
}

void PgRelay::train_wait_end() {
  RelayPath::of(c_.loop_).wait_end(c_);
}

bool PgRelay::send_behind(Backend& b, bool known) {
  State& R = *state_;
  if (!start(&b, known)) return false;
  // Sent now, behind what is already on the way; a send that would block
  // leaves the rest for this client's turn, and nobody may follow it.
  // (A broken connection is found by the batch ahead.)
  const bool sent_all = send_rest(R.fd, R.to_server, R.sent) == 1;
  R.opened = false;
  RelayPath::of(c_.loop_).joined(c_, b, sent_all);
  c_.session_->pool().metrics().pipelined.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool PgRelay::read_only_ahead() {
  Session& s = *c_.session_;
  s.note_movable_begin({});
  if (s.routes_transactions() && s.default_read_only()) return true;
  // The first message decides: a Query or a Parse that opens a read-only transaction.
  const auto buf = c_.in_.view();
  if (buf.size() < 5 || (buf[0] != 'Q' && buf[0] != 'P')) return false;
  c_.route_mark_.reset();
  auto length_at = [&buf](size_t at) {
    return size_t{buf[at + 1]} << 24 | size_t{buf[at + 2]} << 16 | size_t{buf[at + 3]} << 8 |
           buf[at + 4];
  };
  const size_t len = length_at(0);
  if (len < 4 || buf.size() - 1 < len) return false;
  const std::string_view body(reinterpret_cast<const char*>(buf.data()) + 5, len - 4);
  std::string_view text;
  relay::ParseMsg parse;
  if (buf[0] == 'Q') {
    text = body.substr(0, body.find('\0'));
  } else {
    if (!relay::parse_parse(body, parse)) return false;
    text = parse.sql;
  }
  const bool bq = s.settings().backslash_quotes();
  // The lexer only for a text that may begin a transaction (a comment may come first).
  size_t b = 0;
  while (b < text.size() && std::isspace(static_cast<unsigned char>(text[b])))
    ++b;
  const char first = b < text.size() ? static_cast<char>(std::toupper(text[b])) : '\0';
  const bool opener = first == 'B' || first == 'S' || first == '/' || first == '-';
  bool ro = s.routes_transactions() && opener && begins_read_only(text, bq);
  // A plain BEGIN alone: a SET TRANSACTION READ ONLY right after it may move it.
  if (!ro && opener && buf[0] == 'Q' && s.routes_transactions() && begins_movable(text, bq)) {
    s.note_movable_begin(text);
  }
  bool statement = false;
  if (!ro && s.routes_statements() && !s.default_read_only() && reads_only(text, bq)) {
    // read_only.route_statements. A Query runs as one autocommit batch; an
    // extended-query block only when it is complete in in_ and executes that
    // one reading statement once before its Sync (a retry repeats only it).
    statement = buf[0] == 'Q';
    if (!statement) {
      int executes = 0;
      for (size_t at = 0; at + 5 <= buf.size();) {
        const size_t n = length_at(at);
        if (n < 4 || buf.size() - at - 1 < n) break;
        const uint8_t type = buf[at];
        if (type == 'S') {
          statement = executes == 1;
          break;
        }
        if ((type == 'P' && at != 0) || type == 'Q' || type == 'H' || type == 'd' ||
            (type == 'E' && ++executes > 1)) {
          break;
        }
        at += 1 + n;
      }
    }
    ro = statement;
    if (statement) c_.route_mark_ = c_.out_sent_ + c_.out_.size();
  }
  s.lease_read_only(ro, statement);
  return ro;
}

bool PgRelay::join() {
  if (!state_->plain) return false;
  return RelayPath::of(c_.loop_).join(c_);
}

void PgRelay::post_abandoned(std::shared_ptr<PgClient> f, std::string why) {
  auto& io = f->loop_.io;
  asio::post(io, [f = std::move(f), why = std::move(why)] { f->relay_.abandoned(why); });
}

void PgRelay::abandoned(const std::string& why) {
  c_.session_->unqueued();
  c_.session_->statement_end();
  if (!state_->tracker.failed()) c_.send_error("08006", "server connection lost: " + why);
  pg::Encoder(c_.out_).ready_for_query('I');
  c_.relay_loop(PgClient::LoopEntry::fresh);
}

void PgRelay::give_back() {
  if (state_) RelayPath::of(c_.loop_).give_state(std::move(state_));
}

pool::PoolView RelayPath::view(DatabasePool& pool) {
  pool::PoolView v;
  v.pipeline = pool.config().pool.pipeline;
  v.paused_until = pool.pipeline_paused_until();
  v.clients_waiting = pool.metrics().clients_waiting.load(std::memory_order_relaxed) != 0;
  return v;
}

pool::BatchId RelayPath::id_of(const PgClient& c) {
  return c.relay_.state().batch;
}

std::unique_ptr<PgRelay::State> RelayPath::take_state() {
  std::unique_ptr<PgRelay::State> s;
  if (states_.empty()) {
    s = std::make_unique<PgRelay::State>();
  } else {
    s = std::move(states_.back());
    states_.pop_back();
  }
  s->batch = ++next_batch_;
  return s;
}

void RelayPath::give_state(std::unique_ptr<PgRelay::State> s) {
  if (states_.size() >= kRelayStateCache) return;  // freed here
  s->from_server.consume(s->from_server.size());
  if (s->from_server.capacity() > kReadChunk) s->from_server.release();
  if (s->to_server.capacity() > kRelayKeepBytes) std::string().swap(s->to_server);
  if (s->copy.capacity() > kRelayKeepBytes) std::string().swap(s->copy);
  s->parses.clear();
  s->tracker.clear();
  states_.push_back(std::move(s));
}

void RelayPath::track(Backend& b) {
  if (b.train == this) return;
  b.train = this;
  backends_[b.lease] = &b;
}

void RelayPath::turn_began(PgClient& head, Backend& b) {
  const PgRelay::State& R = head.relay_.state();
  DatabasePool& pool = head.session_->pool();
  const bool opened =
      pipeline_.handle_turn_began(b.lease, key(pool), R.shape, b.dirty, R.turn_started);
  track(b);
  if (opened) pull(head, b);
}

bool RelayPath::join(PgClient& c) {
  DatabasePool& pool = c.session_->pool();
  pipeline_.join_order(key(pool), view(pool), now(), trains_scratch_);
  for (pool::TrainId t : trains_scratch_) {
    Backend* const* tracked = backends_.find(t);
    if (!tracked) continue;  // not opened on this loop (every train opened here is tracked)
    Backend& b = **tracked;
    if (b.cancelling || b.relay_resending || !c.session_->settings_match(b)) continue;
    if (!c.relay_.send_behind(b)) return false;
    c.session_->queued();
    return true;
  }
  return false;
}

void RelayPath::joined(PgClient& c, Backend& b, bool sent_all) {
  const pool::BatchId id = id_of(c);
  pipeline_.handle_joined(b.lease, id, c.relay_.state().shape, sent_all);
  followers_[id] = c.shared_from_this();
}

void RelayPath::pull(PgClient& head, Backend& b) {
  if (!pipeline_.has_waiters()) return;  // the usual case: no view, no clock read
  DatabasePool& pool = head.session_->pool();
  pipeline_.pull_order(b.lease, view(pool), now(), batches_scratch_);
  for (pool::BatchId w : batches_scratch_) {
    // Each one taken may leave the pool's queue empty, and the train's limit higher.
    if (b.cancelling || b.relay_resending || !pipeline_.has_room(b.lease, view(pool))) break;
    const std::weak_ptr<PgClient>* waiter = waiters_.find(w);
    std::shared_ptr<PgClient> c = waiter ? waiter->lock() : nullptr;
    if (!c) {
      pipeline_.handle_wait_end(w);
      waiters_.erase(w);
      continue;
    }
    // One that cannot go behind this batch keeps its place in the pool's queue.
    if (!c->relay_.has_state() || !c->relay_.state().plain || !c->session_->settings_match(b) ||
        !c->relay_.known_on(b)) {
      continue;
    }
    pipeline_.handle_wait_end(w);
    waiters_.erase(w);
    if (!c->session_->leave_wait_for_train()) continue;  // granted meanwhile, or cancelled
    if (!c->relay_.send_behind(b, true)) {               // its statements were just checked
      // Not relayable after all (the backend's socket): back to the pool's queue.
      const bool pipelined = c->relay_.train_wait_begin();
      c->session_->wait_backend(
          c->loop_.io.get_executor(),
          [c](std::variant<Backend*, AcquireError> got) { c->on_granted(std::move(got)); },
          pipelined);
      return;
    }
  }
}

void RelayPath::wait_begin(PgClient& c) {
  const pool::BatchId id = id_of(c);
  pipeline_.handle_wait_begin(id, key(c.session_->pool()));
  waiters_[id] = c.weak_from_this();
}

void RelayPath::wait_end(PgClient& c) {
  if (waiters_.empty() || !c.relay_.has_state()) return;
  const pool::BatchId id = id_of(c);
  if (!waiters_.erase(id)) return;
  pipeline_.handle_wait_end(id);
}

std::shared_ptr<PgClient> RelayPath::turn_end(PgClient& head, Backend& b, const pool::TurnReport& r,
                                              pool::TimePoint now, std::string_view why) {
  DatabasePool& pool = head.session_->pool();
  const auto next = pipeline_.handle_turn_end(b.lease, key(pool), r, view(pool), now);
  act(&pool, why);
  if (!next) return nullptr;
  std::shared_ptr<PgClient> c = std::move(*followers_.find(*next));
  followers_.erase(*next);
  return c;
}

bool RelayPath::has_followers(const Backend& b) const {
  return b.train == this && pipeline_.followers(b.lease) != 0;
}

pool::HeadFlush RelayPath::head_flush(const Backend& b, bool reading_ahead, size_t buffered) const {
  return pipeline_.head_flush(b.lease, reading_ahead, buffered);
}

bool RelayPath::may_cancel(const Backend& b) const {
  return pipeline_.may_cancel(b.lease);
}

bool RelayPath::release(Backend& b, std::string_view why) {
  const bool clean = pipeline_.handle_released(b.lease);
  act(nullptr, why);
  backends_.erase(b.lease);
  b.train = nullptr;
  return clean;
}

void RelayPath::act(DatabasePool* pool, std::string_view why) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  if (!pipeline_.has_actions()) return;
  while (auto a = pipeline_.poll_action()) {
    if (auto* f = std::get_if<pool::Fail>(&*a)) {
      std::shared_ptr<PgClient>* follower = followers_.find(f->batch);
      if (!follower) continue;
      auto c = std::move(*follower);
      followers_.erase(f->batch);
      PgRelay::post_abandoned(std::move(c), std::string(why));
    } else if (auto* p = std::get_if<pool::Pause>(&*a)) {
      if (!pool) continue;
      pool->pause_pipeline(p->until);
      spdlog::info(
          "database {}: pipelining paused for {} s: a batch took {} ms while others ran",
          pool->config().name,
          std::chrono::duration_cast<std::chrono::seconds>(pipeline_.limits().slow_pause).count(),
          duration_cast<milliseconds>(p->took).count());
    } else if (auto* slow = std::get_if<pool::ShapeSlow>(&*a)) {
      if (!pool) continue;
      spdlog::info(
          "database {}: a batch took {} ms while others ran: no batch is sent behind its "
          "statements while they stay slow",
          pool->config().name, duration_cast<milliseconds>(slow->took).count());
    }
  }
}

}  // namespace wirepool::server
