// The relay: a PostgreSQL client of a PostgreSQL backend in transaction mode
// has its batches (messages up to a Sync, or one Query) sent to the server as
// bytes and the server's answers sent back as bytes, with only the names of
// prepared statements rewritten. The ordinary path (pg_client.cpp) decodes
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

#include <cerrno>
#include <cstring>
#include <optional>
#include <unordered_map>

#include "server/pg_client.hpp"
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

std::string cache_key_of(std::string_view sql, std::span<const uint32_t> oids) {
  std::string key(sql);
  key += '\0';
  for (auto o : oids) {
    key += std::to_string(o);
    key += ',';
  }
  return key;
}

/// At most this many idle RelayStates per event-loop thread (each about
/// 9 KiB with its read buffer).
constexpr size_t kRelayStateCache = 64;
/// The statements' and buffers' capacity a cached RelayState may keep.
constexpr size_t kRelayKeepBytes = 16 * 1024;

// The pipeline (relay_join).
/// At most this many batches wait behind the running one.
constexpr size_t kMaxFollowers = 3;
/// A client that takes nothing of its answer for this long while others'
/// batches wait behind it has the rest read ahead into memory, up to
/// kMaxReadAhead; past that it is disconnected.
constexpr auto kHeadPatience = std::chrono::milliseconds(1000);
constexpr size_t kMaxReadAhead = 16 * 1024 * 1024;
/// A running batch older than this may be a long one: nobody joins it.
constexpr auto kJoinWithin = std::chrono::milliseconds(1);
/// After this many batches in a row the backend goes back to the pool, so that
/// RECONNECT and a lowered max get their turn; after kBusyTrainBatches while
/// clients wait in the pool's queue (a transaction to begin, every train full
/// or too old), so that they do not wait long behind trains (measured: -M
/// simple p99 6.1 ms with 4 against 7.5 with 16, and more throughput).
constexpr uint32_t kMaxTrainBatches = 16;
constexpr uint32_t kBusyTrainBatches = 4;
/// A batch whose turn took longer than this while at least kSlowProgress
/// other batches of its pool started turns joining off in the pool for
/// kSlowPause: a workload with long statements would otherwise queue short
/// ones behind them. (The others' progress tells a long statement from the
/// machine stalling everything, which this one does for 0.1-4 s at times.)
constexpr auto kSlowBatch = std::chrono::seconds(1);
constexpr uint64_t kSlowProgress = 64;
constexpr auto kSlowPause = std::chrono::seconds(1);
/// Statements that run long (or return large results) get no batches sent
/// behind them, so that they do not hold up short ones each time they run.
/// Each event loop keeps, per pool and RelayState::shape, the average turn of
/// statements seen slow (a weight of 1/16 per turn): a shape enters when a turn
/// took longer than kSlowStatement while kSlowProgress other batches started
/// (not a stall of the machine), counts as slow while its average is above
/// kSlowStatement (a 500 ms report from its first run on; a 0.2 ms lookup with
/// a few turns delayed by the scheduler never), and leaves below 1 ms.
constexpr auto kSlowStatement = std::chrono::milliseconds(20);
constexpr auto kFastAgain = std::chrono::milliseconds(1);
constexpr size_t kSlowShapes = 4096;
using Micros = std::chrono::microseconds;

uint64_t shape_key(const DatabasePool& pool, uint64_t shape) {
  return shape ^
         (static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&pool)) * 0x9E3779B97F4A7C15ULL);
}
std::unordered_map<uint64_t, Micros>& slow_shapes() {
  thread_local std::unordered_map<uint64_t, Micros> shapes;  // key -> average turn
  return shapes;
}
bool shape_slow(const DatabasePool& pool, uint64_t shape) {
  auto& m = slow_shapes();
  if (m.empty()) return false;
  auto it = m.find(shape_key(pool, shape));
  return it != m.end() && it->second > kSlowStatement;
}
/// A plain batch's turn took `took`; true when its shape has just become slow.
bool note_turn(const DatabasePool& pool, uint64_t shape, Micros took, bool others_ran) {
  auto& m = slow_shapes();
  const bool slow_turn = took > kSlowStatement;
  if (m.empty() && !slow_turn) return false;
  const uint64_t key = shape_key(pool, shape);
  auto it = m.find(key);
  if (it == m.end()) {
    if (!slow_turn || !others_ran) return false;
    if (m.size() >= kSlowShapes) m.clear();  // rare: many slow shapes; they come back
    it = m.emplace(key, Micros(0)).first;
  } else if (slow_turn && !others_ran) {
    return false;  // everything stalled: says nothing of the statement
  }
  const bool was = it->second > kSlowStatement;
  it->second += (took - it->second) / 16;
  if (it->second < kFastAgain) {
    m.erase(it);
    return false;
  }
  return !was && it->second > kSlowStatement;
}
uint64_t shape_add(uint64_t shape, std::string_view text) {
  return (shape ^ std::hash<std::string_view>{}(text)) * 0x100000001B3ULL;
}
}  // namespace

std::vector<std::unique_ptr<PgClient::RelayState>>& PgClient::relay_state_cache() {
  thread_local std::vector<std::unique_ptr<RelayState>> cache;
  return cache;
}

std::unique_ptr<PgClient::RelayState> PgClient::take_relay_state() {
  auto& cache = relay_state_cache();
  if (cache.empty()) return std::make_unique<RelayState>();
  auto s = std::move(cache.back());
  cache.pop_back();
  return s;
}

void PgClient::give_relay_state(std::unique_ptr<RelayState> s) {
  auto& cache = relay_state_cache();
  if (cache.size() >= kRelayStateCache) return;  // freed here
  s->from_server.consume(s->from_server.size());
  if (s->from_server.capacity() > kReadChunk) s->from_server.release();
  if (s->to_server.capacity() > kRelayKeepBytes) std::string().swap(s->to_server);
  s->parses.clear();
  s->tracker.clear();
  cache.push_back(std::move(s));
}

PgClient::RelayCheck PgClient::relay_check() {
  if (!session_ || skip_until_sync_ || in_.empty()) return RelayCheck::no;
  if (!session_->pool().pg_native() || session_->mode() != config::PoolMode::transaction) {
    return RelayCheck::no;
  }
  // Open portals, or an implicit transaction of messages before this batch
  // (the ordinary path ends it at their Sync).
  if (portals_open() || session_->implicit()) return RelayCheck::no;
  // Settings SET in the transaction are read back at its end (settle_settings).
  if (session_->settings_noted()) return RelayCheck::no;
  const size_t max_msg = server_.config().server.max_message_size;
  if (!relay_) relay_ = take_relay_state();
  RelayState& R = *relay_;
  const auto buf = in_.view();
  if (relay::scan_batch(buf, max_msg, R.frames) != relay::Scan::complete) return RelayCheck::no;
  const size_t total = R.frames.back().offset + R.frames.back().size;
  if (total > kMaxRelayBatchBytes) return RelayCheck::no;
  R.total = total;
  // The server splits statements as its standard_conforming_strings says.
  const bool bq = session_->settings().backslash_quotes();

  // ---- 1. Does the relay take this batch? Decided before anything changes.
  std::vector<std::string_view> named;  // client statement names this batch parses
  bool parsed_unnamed = false, bound = false, parse_only = true;
  bool plain = true;
  auto statement_ok = [&](std::string_view name) {
    if (name.empty() && parsed_unnamed) return true;
    for (auto n : named)
      if (n == name) return true;
    if (!ext_) return false;
    auto it = ext_->statements.find(std::string(name));
    if (it == ext_->statements.end()) return false;
    Prepared& p = *it->second;
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
        if (body.empty() || body.find('\0') != body.size() - 1) return RelayCheck::no;
        if (!sql::relay_may_send(body.substr(0, body.size() - 1), false, plain, bq))
          return RelayCheck::no;
        break;
      case 'P': {
        if (!relay::parse_parse(body, R.parse) ||
            !sql::relay_may_send(R.parse.sql, true, plain, bq)) {
          return RelayCheck::no;
        }
        if (R.parse.name.empty()) {
          parsed_unnamed = true;
        } else {
          // An existing name is an error the ordinary path reports (42P05).
          for (auto n : named)
            if (n == R.parse.name) return RelayCheck::no;
          if (ext_ && ext_->statements.count(std::string(R.parse.name))) return RelayCheck::no;
          named.push_back(R.parse.name);
        }
        break;
      }
      case 'B': {
        relay::BindMsg m;
        if (!relay::parse_bind(body, m) || !m.portal.empty() || !statement_ok(m.statement)) {
          return RelayCheck::no;
        }
        bound = true;
        break;
      }
      case 'D': {
        relay::TargetMsg m;
        if (!relay::parse_target(body, m)) return RelayCheck::no;
        if (m.kind == 'S' ? !statement_ok(m.name) : (!m.name.empty() || !bound)) {
          return RelayCheck::no;
        }
        break;
      }
      case 'E': {
        relay::ExecuteMsg m;
        // A row limit leaves a portal suspended for a later batch: not relayed.
        if (!relay::parse_execute(body, m) || !m.portal.empty() || !bound || m.max_rows != 0) {
          return RelayCheck::no;
        }
        break;
      }
      case 'C': {
        relay::TargetMsg m;
        if (!relay::parse_target(body, m) || (m.kind == 'P' && !m.name.empty())) {
          return RelayCheck::no;
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
  if (parse_only && !session_->backend()) {
    for (const auto& f : R.frames) {
      if (f.type != 'P') continue;
      relay::parse_parse(f.body(buf), R.parse);
      relay_register(R.parse, R.plain ? 1 : -1);
      pg::Encoder(out_).parse_complete();
    }
    in_.consume(total);
    ready_for_query();
    return RelayCheck::answered;
  }
  return RelayCheck::go;
}

std::shared_ptr<PgClient::Prepared> PgClient::relay_register(const relay::ParseMsg& m,
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

awaitable<PgClient::Relayed> PgClient::relay() {
  switch (relay_check()) {
    case RelayCheck::no:
      co_return Relayed::no;
    case RelayCheck::answered:
      co_return Relayed::yes;
    case RelayCheck::go:
      break;
  }
  // ---- 3. A backend, relayable now (an idle one without a wait when it can).
  if (!session_->try_backend_now()) {
    // What is answered goes out before a wait (a pipelining client gets each
    // answer as PostgreSQL would send it).
    if (!out_.empty() && !co_await flush()) co_return Relayed::closed;
    if (auto e = co_await session_->ensure_backend()) {
      send_error(*e);
      in_.consume(relay_->total);
      ready_for_query();
      co_return Relayed::yes;
    }
  }
  if (!relay_start()) co_return Relayed::no;
  co_return co_await relay_rest(false);
}

bool PgClient::relay_known_on(Backend& b) {
  // Only statements the server has confirmed: a Parse of one running ahead
  // could fail or be skipped (an error before it), and a Parse here could
  // evict one a batch ahead still uses.
  RelayState& R = *relay_;
  const auto buf = in_.view();
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
    if (!ext_) return false;
    auto it = ext_->statements.find(std::string(name));
    if (it == ext_->statements.end() || !b.statements.relay_find(it->second->key)) return false;
  }
  return true;
}

bool PgClient::relay_start(Backend* joining, bool known) {
  RelayState& R = *relay_;
  Backend& b = joining ? *joining : *session_->backend();
  const int fd = b.conn.impl()->relay_socket();
  if (fd < 0) return false;  // TLS, or work in flight: the ordinary path
  const auto buf = in_.view();
  if (joining) {
    if (!known && !relay_known_on(b)) return false;
    R.from_idle = true;
  } else {
    R.from_idle = session_->tx_state() == db::TxState::idle;
  }
  session_->statement_begin();

  // ---- 4. The batch as the server gets it.
  R.to_server.clear();
  R.tracker.clear();
  R.parses.clear();
  R.executes = 0;
  R.shape = 0;
  // The server's name for a client statement, preparing it first when the
  // server does not have it.
  auto server_name = [&](const Prepared& p) -> std::string {
    for (const auto& e : R.parses) {
      if (e.key == p.key && !e.server_name.empty()) return e.server_name;
    }
    if (const auto* n = b.statements.relay_find(p.key)) return *n;
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
  auto client_statement = [&](std::string_view name) -> const Prepared& {
    return *ext().statements.find(std::string(name))->second;
  };
  for (const auto& f : R.frames) {
    const auto body = f.body(buf);
    switch (f.type) {
      case 'P': {
        relay::parse_parse(body, R.parse);
        auto p = relay_register(R.parse, R.plain ? 1 : -1);
        const int tag = static_cast<int>(R.parses.size());
        // The unnamed statement too becomes a named one on the server, kept
        // for the next client that sends the same text: the server parses
        // and plans it once, not once per execution (as the ordinary path's
        // statement cache does).
        const std::string* known = b.statements.relay_find(p->key);
        for (const auto& e : R.parses) {
          if (!known && e.key == p->key && !e.server_name.empty()) known = &e.server_name;
        }
        if (known) {
          // The server has it: the client's ParseComplete comes from here.
          R.tracker.expect(relay::Expect::emit_parse_complete, tag);
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
        R.tracker.expect(relay::Expect::parse, tag);
        R.parses.push_back({std::string(R.parse.name), p->key, std::move(name), false});
        break;
      }
      case 'B': {
        relay::BindMsg m;
        relay::parse_bind(body, m);
        const Prepared& p = client_statement(m.statement);
        R.shape = shape_add(R.shape, p.key);
        std::string name = server_name(p);
        relay::put_bind(R.to_server, m.portal, name, m.rest);
        R.tracker.expect(relay::Expect::bind);
        break;
      }
      case 'D': {
        relay::TargetMsg m;
        relay::parse_target(body, m);
        if (m.kind == 'S') {
          std::string name = server_name(client_statement(m.name));
          relay::put_target(R.to_server, 'D', 'S', name);
        } else {
          R.to_server.append(f.whole(buf));
        }
        R.tracker.expect(m.kind == 'S' ? relay::Expect::describe_statement
                                       : relay::Expect::describe_portal);
        break;
      }
      case 'C': {
        relay::TargetMsg m;
        relay::parse_target(body, m);
        if (m.kind == 'S') {
          // The client's name goes; the server keeps its copy for the next
          // client that prepares the same statement.
          ext().statements.erase(std::string(m.name));
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
        break;
      case 'Q':
        R.shape = shape_add(R.shape, body);
        R.to_server.append(f.whole(buf));
        R.tracker.expect(relay::Expect::query);
        break;
    }
  }
  in_.consume(R.total);  // `buf` and the frames are stale from here on

  // ---- 5. Sent, then the answers passed on until the batch's ReadyForQuery
  // (relay_pump).
  if (out_.capacity() < kFirstRead)
    out_.reserve(kFirstRead);  // one allocation, not a doubling series
  session_->relay_running(true);
  session_->pool().metrics().relayed.fetch_add(1, std::memory_order_relaxed);
  R.tracker.emit_due(out_);
  R.fd = fd;
  R.sent = 0;
  R.lost.clear();
  R.client_gone = false;
  R.discard = false;
  R.turn_started = std::chrono::steady_clock::now();
  R.relayed_before = session_->pool().metrics().relayed.load(std::memory_order_relaxed);
  R.opened = false;
  R.stale = false;
  R.reading_ahead = false;
  R.status = 'I';
  R.done = false;
  R.passthrough = 0;
  R.drained = false;
  return true;
}

PgClient::RelayWait PgClient::relay_pump() {
  RelayState& R = *relay_;
  switch (send_rest(R.fd, R.to_server, R.sent)) {
    case 0:
      return RelayWait::write;
    case -1:
      R.lost = std::string("could not send to the server: ") + std::strerror(errno);
      return RelayWait::none;
    default:
      break;
  }
  if (R.plain && R.from_idle && !R.opened && session_->pool().config().pool.pipeline) {
    R.opened = true;
    train_may_open(*session_->backend());
  }
  InBuffer& in = R.from_server;
  while (R.lost.empty() && !R.done && (!R.client_gone || R.discard)) {
    // What is buffered first.
    while (!R.done) {
      auto v = in.view();
      const char* data = reinterpret_cast<const char*>(v.data());
      if (R.passthrough > 0) {
        if (v.empty()) break;
        size_t n = std::min(R.passthrough, v.size());
        out_.append(data, n);
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
      if (v.size() < whole) {  // a DataRow larger than what has arrived: pass it on as it comes
        out_.append(data, v.size());
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
            session_->mark_dirty();  // its statements predate DDL: DISCARD ALL before reuse
          }
          auto severity = relay::error_field(body, 'V');
          if (severity.empty()) severity = relay::error_field(body, 'S');
          db::Error e;
          e.sqlstate = std::string(state);
          session_->explain_cancel(e);  // 57014: why wirepool cancelled it, if it did
          if (severity == "FATAL" || severity == "PANIC" || !e.message.empty()) {
            relay::put_error_as_error(out_, body, e.message);
          } else {
            out_.append(msg);
          }
        } else if (type == 'S') {
          size_t nul = body.find('\0');
          if (nul != std::string_view::npos) {
            auto rest = body.substr(nul + 1);
            db::ParameterChange c{std::string(body.substr(0, nul)),
                                  std::string(rest.substr(0, rest.find('\0')))};
            session_->on_parameter(c);
            (void)session_->take_events();  // passed on below, as the server sent it
          }
          out_.append(msg);
        } else {
          if (type == 'Z') {
            R.status = body.empty() ? 'I' : body[0];
            answered_ = answered_ || step.forward;
          }
          if (step.forward) out_.append(msg);
        }
        in.consume(whole);
      }
      R.tracker.emit_due(out_);
      R.done = step.done;
      if (R.discard) out_.clear();  // its client left; the followers' answers come next
      if (out_.size() >= (R.reading_ahead ? kMaxReadAhead : kFlushBytes)) return RelayWait::flush;
    }
    if (R.done || !R.lost.empty()) break;
    // The last read emptied the socket, so the next one may wait: the rows
    // so far go to the client while the server works on the rest.
    if (R.drained && !out_.empty() && !R.reading_ahead) {
      R.drained = false;
      return RelayWait::flush;
    }
    // The answer is often there already (the server ran while this thread
    // waited for the CPU): taken without a wait.
    in.reserve_tail(kReadChunk);
    const size_t space = in.space();
    ssize_t got = ::recv(R.fd, in.tail(), space, MSG_DONTWAIT);
    if (got > 0) {
      relay_took(static_cast<size_t>(got), space, {});
    } else if (got == 0) {
      relay_took(0, space, asio::error::eof);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      session_->relay_interrupt_if_cancelled();
      // An earlier batch's whole answer goes out before this one waits.
      if (answered_ && !out_.empty() && !R.reading_ahead) return RelayWait::flush;
      return RelayWait::read;
    } else if (errno != EINTR) {
      relay_took(0, space, boost::system::error_code(errno, boost::system::system_category()));
    }
  }
  return RelayWait::none;
}

void PgClient::relay_took(size_t n, size_t space, boost::system::error_code ec) {
  RelayState& R = *relay_;
  R.drained = n < space;
  if (n > 0) {
    R.from_server.commit(n);
  } else if (ec == asio::error::eof) {
    R.lost = "the server closed the connection";
  } else if (ec) {
    R.lost = "could not receive from the server: " + ec.message();
  }
}

awaitable<PgClient::Relayed> PgClient::relay_rest(bool flush_first) {
  RelayState& R = *relay_;
  if (flush_first) co_await relay_flush();
  while (!R.client_gone || R.discard) {
    const RelayWait wait = relay_pump();
    if (wait == RelayWait::none) break;
    if (wait == RelayWait::flush) {
      co_await relay_flush();
    } else if (wait == RelayWait::write) {
      co_await session_->relay_wait(R.fd, true);
    } else {
      InBuffer& in = R.from_server;
      boost::system::error_code ec;
      const size_t space = in.space();
      size_t n = co_await session_->relay_read(R.fd, in.tail(), space, ec);
      relay_took(n, space, ec);
    }
  }
  co_return relay_finish();
}

awaitable<void> PgClient::relay_flush() {
  RelayState& R = *relay_;
  Backend* b = session_->backend();
  const bool others_behind = b && !b->train.empty();
  if (R.reading_ahead && out_.size() >= kMaxReadAhead && others_behind) {
    spdlog::warn(
        "client {}: disconnected: it stopped reading its result while {} other "
        "client(s) waited behind it",
        peer_, b->train.size());
    relay_client_left();
    co_return;
  }
  if (R.reading_ahead || !others_behind) {
    if (!co_await flush()) relay_client_left();
    co_return;
  }
  switch (co_await flush_for(kHeadPatience)) {
    case Flushed::all:
      break;
    case Flushed::gone:
      relay_client_left();
      break;
    case Flushed::blocked:
      R.reading_ahead = true;  // the rest comes into memory; the followers go on
      spdlog::debug("client {}: slow to read: its answer is read ahead for those behind it", peer_);
      break;
  }
}

void PgClient::relay_client_left() {
  RelayState& R = *relay_;
  R.client_gone = true;
  // Batches of other clients were sent behind this one: its answers are read
  // to the end (and dropped) so that theirs follow on a usable connection.
  if (!R.done && R.lost.empty() && !session_->backend()->train.empty()) {
    R.discard = true;
    out_.clear();
  }
}

PgClient::Relayed PgClient::relay_finish() {
  RelayState& R = *relay_;
  Backend& b = *session_->backend();
  InBuffer& in = R.from_server;
  const bool mid_row = R.passthrough > 0;  // a DataRow was half passed on
  session_->relay_running(false);

  // ---- The pipeline. The batch ended idle at a message boundary: the lease
  // and what the server sent behind the batch's ReadyForQuery go to the first
  // follower. Otherwise the followers' batches are lost with the connection.
  std::shared_ptr<PgClient> next;
  std::deque<std::shared_ptr<PgClient>> stranded;
  if (!b.train.empty()) {
    if (R.lost.empty() && R.done && R.status == 'I' && !mid_row) {
      next = std::move(b.train.front());
      b.train.pop_front();
      InBuffer& to = next->relay_->from_server;
      const auto rest = in.view();
      to.consume(to.size());
      if (!rest.empty()) {
        to.reserve_tail(rest.size());
        std::memcpy(to.tail(), rest.data(), rest.size());
        to.commit(rest.size());
      }
      next->relay_->drained = false;
    } else {
      stranded.swap(b.train);
    }
  }
  if (!next) train_close(b);
  in.consume(in.size());
  if (in.capacity() > kReadChunk) in.release();  // a large answer's buffer goes at once
  for (auto& f : stranded) {
    post_abandoned(std::move(f),
                   R.lost.empty() ? "the batch ahead of it broke off mid-answer" : R.lost);
  }

  if (!next && (R.client_gone || !R.lost.empty())) {
    // The backend's stream is mid-answer: nobody can use it again.
    // A pipeline of several Executes ran in one implicit transaction.
    const bool had_transaction =
        session_->in_transaction() || R.status == 'T' || R.status == 'E' || R.executes > 1;
    b.conn.impl()->relay_done(db::TxState::idle, true);
    if (!R.lost.empty()) {
      spdlog::warn("client {}: backend of database \"{}\" lost: {}", peer_,
                   session_->pool().config().name, R.lost);
      session_->backend_lost();
    } else {
      session_->drop_backend();
    }
    session_->statement_end();
    if (R.client_gone || mid_row) return Relayed::closed;
    if (had_transaction) {
      // Its transaction is gone with the backend: as PostgreSQL and PgBouncer,
      // the client is told (FATAL) and disconnected.
      if (!R.tracker.failed()) {
        send_error("08006", "server connection lost: " + R.lost, "FATAL");
      }
      backend_gone_ = true;
      return Relayed::yes;
    }
    // Between transactions: an error and its ReadyForQuery, nothing was lost.
    if (!R.tracker.failed()) {
      send_error("08006", "server connection lost: " + R.lost);
    }
    pg::Encoder(out_).ready_for_query('I');
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
      if (ok[i] || e.added || !ext_) continue;
      auto it = ext_->statements.find(e.client_name);
      if (it != ext_->statements.end() && it->second->key == e.key) ext_->statements.erase(it);
    }
  }
  session_->statement_end();
  session_->sync_tx_state();
  const auto now = std::chrono::steady_clock::now();
  DatabasePool& pool = session_->pool();
  const bool others_ran =
      pool.metrics().relayed.load(std::memory_order_relaxed) - R.relayed_before >= kSlowProgress;
  if (R.plain && pool.config().pool.pipeline &&
      note_turn(pool, R.shape, std::chrono::duration_cast<Micros>(now - R.turn_started),
                others_ran)) {
    spdlog::info(
        "database {}: a batch took {} ms while others ran: no batch is sent behind its "
        "statements while they stay slow",
        pool.config().name,
        std::chrono::duration_cast<std::chrono::milliseconds>(now - R.turn_started).count());
  }
  if (now - R.turn_started > kSlowBatch && pool.config().pool.pipeline && others_ran &&
      now >= pool.pipeline_paused_until()) {
    pool.pause_pipeline(now + kSlowPause);
    spdlog::info(
        "database {}: pipelining paused for {} s: a batch took {} ms while others ran",
        pool.config().name, std::chrono::duration_cast<std::chrono::seconds>(kSlowPause).count(),
        std::chrono::duration_cast<std::chrono::milliseconds>(now - R.turn_started).count());
  }
  if (next) {
    ++b.train_batches;
    b.train_since = now;
    next->relay_->turn_started = now;
    next->relay_->relayed_before = pool.metrics().relayed.load(std::memory_order_relaxed);
    session_->hand_over(*next->session_);
    if (b.train_open && shape_slow(pool, next->relay_->shape)) train_close(b);
    if (b.train_open) next->train_pull(b);  // a place behind it is free again
    // Its answers are read on its own turn of the loop, not inside this one.
    asio::post(loop_.io, [next] { next->relay_loop(LoopEntry::reading); });
    return R.client_gone ? Relayed::closed : Relayed::yes;
  }
  session_->release_if_idle(false);
  return Relayed::yes;
}

// ---- The pipeline (docs/protocol-postgres.md, "Pipelining"). A backend whose
// running batch leaves it idle takes other clients' batches behind it when no
// backend is idle: PostgreSQL then reads several transactions with one wake-up
// instead of one each, which is where most of a pooled transaction's time goes
// on a small machine. Open trains are listed per event loop; all of a train's
// clients are on the loop of the session that holds its backend.

namespace {
struct OpenTrain {
  const DatabasePool* pool;
  Backend* backend;
};
std::vector<OpenTrain>& open_trains() {
  thread_local std::vector<OpenTrain> trains;
  return trains;
}
}  // namespace

void PgClient::train_may_open(Backend& b) {
  if (b.train_open || b.dirty) return;
  if (shape_slow(session_->pool(), relay_->shape)) return;
  // (train_batches counts on from the pool's grant: a train closed and opened
  // again by its last batch does not start over, or the pool's queue would
  // wait behind it for good.)
  if (b.train.empty()) b.train_since = relay_->turn_started;
  if (b.train_batches >= kMaxTrainBatches) return;
  b.train_open = true;
  open_trains().push_back({&session_->pool(), &b});
  train_pull(b);
}

void PgClient::train_close(Backend& b) {
  if (!b.train_open) return;
  b.train_open = false;
  auto& v = open_trains();
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it->backend == &b) {
      *it = v.back();
      v.pop_back();
      break;
    }
  }
}

namespace {
/// Relayed clients of this loop waiting in their pool's queue (wait_backend)
/// with a checked batch, in arrival order: a train takes them before any
/// newcomer (train_pull), so that pipelining keeps the pool's first come,
/// first served. Without this, clients arriving while a train is open jumped
/// ahead of those already queued, and the tail grew (32 clients: p99 7.9 ms
/// against PgBouncer's 6.4; 500 clients: 109-129 ms against 67-77).
struct TrainWaiter {
  const DatabasePool* pool;
  PgClient* client;
  std::weak_ptr<PgClient> alive;
};
std::deque<TrainWaiter>& train_waiters() {
  thread_local std::deque<TrainWaiter> waiters;
  return waiters;
}
bool has_train_waiters(const DatabasePool* pool) {
  for (const auto& w : train_waiters())
    if (w.pool == pool) return true;
  return false;
}
/// How many batches a train may take in all: fewer while clients wait in the
/// pool's queue (kBusyTrainBatches).
uint32_t train_limit(DatabasePool& pool) {
  return pool.metrics().clients_waiting.load(std::memory_order_relaxed) != 0 ? kBusyTrainBatches
                                                                             : kMaxTrainBatches;
}
/// `b`'s train may take one more batch now (train_pull runs right as its
/// batch began: no need to look at the clock).
bool train_has_room(const Backend& b, uint32_t limit,
                    std::optional<std::chrono::steady_clock::time_point> now) {
  return b.train_open && !b.cancelling && b.train.size() < kMaxFollowers &&
         (!now || *now - b.train_since <= kJoinWithin) &&
         b.train_batches + b.train.size() + 1 < limit;
}
}  // namespace

bool PgClient::train_wait_begin() {
  if (!session_->pool().config().pool.pipeline) return false;
  train_waiters().push_back({&session_->pool(), this, weak_from_this()});
  return relay_->plain;
}

void PgClient::train_wait_end() {
  auto& v = train_waiters();
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it->client == this && !it->alive.expired()) {
      v.erase(it);
      return;
    }
  }
}

bool PgClient::relay_send_behind(Backend& b, bool known) {
  RelayState& R = *relay_;
  if (!relay_start(&b, known)) return false;
  // Sent now, behind what is already on the way; a send that would block
  // leaves the rest for this client's turn, and nobody may follow it.
  // (A broken connection is found by the batch ahead.)
  if (send_rest(R.fd, R.to_server, R.sent) != 1) train_close(b);
  R.opened = false;
  b.train.push_back(shared_from_this());
  session_->pool().metrics().pipelined.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void PgClient::train_pull(Backend& b) {
  DatabasePool& pool = session_->pool();
  auto& v = train_waiters();
  if (v.empty() || std::chrono::steady_clock::now() < pool.pipeline_paused_until()) return;
  for (size_t i = 0; i < v.size() && train_has_room(b, train_limit(pool), std::nullopt);) {
    if (v[i].pool != &pool) {
      ++i;
      continue;
    }
    auto c = v[i].alive.lock();
    if (!c) {
      v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    // One that cannot go behind this batch keeps its place in the pool's queue.
    if (!c->relay_ || !c->relay_->plain || !c->session_->settings_match(b) ||
        !c->relay_known_on(b)) {
      ++i;
      continue;
    }
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
    if (!c->session_->leave_wait_for_train()) continue;  // granted meanwhile, or cancelled
    if (!c->relay_send_behind(b, true)) {                // its statements were just checked
      // Not relayable after all (the backend's socket): back to the pool's queue.
      const bool pipelined = c->train_wait_begin();
      c->session_->wait_backend(
          c->loop_.io.get_executor(),
          [c](std::variant<Backend*, AcquireError> got) { c->on_granted(std::move(got)); },
          pipelined);
      return;
    }
  }
}

bool PgClient::relay_join() {
  RelayState& R = *relay_;
  DatabasePool& pool = session_->pool();
  if (!R.plain || !pool.config().pool.pipeline) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now < pool.pipeline_paused_until()) return false;
  auto& trains = open_trains();
  // Clients queued before this one go first (train_pull).
  if (trains.empty() || has_train_waiters(&pool)) return false;
  const uint32_t limit = train_limit(pool);
  Backend* best = nullptr;
  for (const auto& t : trains) {
    Backend& b = *t.backend;
    if (t.pool != &pool || !train_has_room(b, limit, now)) continue;
    if (best && best->train.size() <= b.train.size()) continue;
    if (!session_->settings_match(b)) continue;
    best = &b;
  }
  if (!best || !relay_send_behind(*best)) return false;
  session_->queued();
  return true;
}

bool abandon_train(Backend& b, const std::string& why) {
  PgClient::train_close(b);
  if (b.train.empty()) return true;
  std::deque<std::shared_ptr<PgClient>> stranded;
  stranded.swap(b.train);
  for (auto& f : stranded)
    PgClient::post_abandoned(std::move(f), why);
  return false;
}

void PgClient::post_abandoned(std::shared_ptr<PgClient> f, std::string why) {
  auto& io = f->loop_.io;
  asio::post(io, [f = std::move(f), why = std::move(why)] { f->relay_abandoned(why); });
}

void PgClient::relay_abandoned(const std::string& why) {
  session_->unqueued();
  session_->statement_end();
  if (!relay_->tracker.failed()) send_error("08006", "server connection lost: " + why);
  pg::Encoder(out_).ready_for_query('I');
  relay_loop(LoopEntry::fresh);
}

}  // namespace wirepool::server
