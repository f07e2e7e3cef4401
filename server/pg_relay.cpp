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
//
// This file runs a batch on the backend's socket; pg_relay_batch.cpp decides
// which batches the relay takes and builds what the server gets;
// relay_path.cpp carries out the pipeline's decisions.

#include <sys/socket.h>

#include <spdlog/spdlog.h>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "server/pg/client.hpp"
#include "server/pg/client_detail.hpp"
#include "server/pg_relay.hpp"
#include "server/pg_relay_detail.hpp"

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
namespace relay = pg::relay;
using relay_detail::cache_key_of;
using relay_detail::send_rest;

namespace {

uint32_t be32(const char* p) {
  auto u = [p](int i) { return uint32_t(static_cast<unsigned char>(p[i])); };
  return (u(0) << 24) | (u(1) << 16) | (u(2) << 8) | u(3);
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

}  // namespace

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
      if (auto it = c_.ext().statements.find(name); it != c_.ext().statements.end()) {
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
  const auto patience = path.pipeline().limits().head_patience;
  bool stalled = false;  // a round of patience passed with the answer not all taken
  std::chrono::steady_clock::time_point progress;  // set when a patience starts
  for (;;) {
    const pool::HeadFlush how =
        b ? path.head_flush(*b, c_.session_->pool(), R.reading_ahead, c_.out_.size())
          : pool::HeadFlush::wait;
    switch (how) {
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
      case pool::HeadFlush::watch:
        break;
    }
    if (how == pool::HeadFlush::with_patience && stalled) break;  // its patience is spent
    const size_t before = c_.out_.size();
    if (!stalled) progress = std::chrono::steady_clock::now();
    const PgClient::Flushed f = co_await c_.flush_for(patience);
    if (f == PgClient::Flushed::all) co_return;
    if (f == PgClient::Flushed::gone) {
      client_left();
      co_return;
    }
    if (how == pool::HeadFlush::with_patience) break;
    // Nobody waited: ask again, and give up on a client that takes nothing
    // for kIoTimeout, as c_.flush() does.
    stalled = true;
    const auto now = std::chrono::steady_clock::now();
    if (c_.out_.size() < before) {
      progress = now;
    } else if (now - progress >= kIoTimeout) {
      c_.out_.clear();
      client_left();
      co_return;
    }
  }
  R.reading_ahead = true;  // the rest comes into memory; the others go on
  spdlog::debug("client {}: slow to read: its answer is read ahead for those waiting for it",
                c_.peer_);
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
  std::vector<bool>& ok = R.confirmed;  // kept with the state: no allocation per batch
  ok.assign(R.parses.size(), false);
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

}  // namespace wirepool::server
