#include "server/pg/client.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <cstring>

#include "protocol/pg/scram.hpp"
#include "server/admin.hpp"
#include "server/pg/client_detail.hpp"
#include "server/pg_relay.hpp"
#include "tls/tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using namespace pg_detail;

bool PgClient::to_backend(const Classified& c) const {
  if (c.kind == StatementKind::backend) return true;
  // A PostgreSQL backend runs transaction control itself (and reports the
  // state, and COMMIT of a failed transaction answers ROLLBACK as it should);
  // statement mode refuses BEGIN in the session layer.
  return is_transaction_control(c) && session_->pool().pg_native() &&
         !(c.kind == StatementKind::begin && session_->mode() == config::PoolMode::statement);
}

PgClient::PgClient(Server& server, Loop& loop, ClientSocket socket,
                   const config::Listener& listener, Admission::TicketPtr ticket)
    : ClientConnection(loop, std::move(socket), ProtocolIndex::postgres, std::move(ticket)),
      server_(server),
      listener_(listener) {}

PgClient::~PgClient() {
  if (pid_) server_.cancels().remove(pid_);
}

void PgClient::cancel_request() {
  // Any thread, under the registry's lock (so ~PgClient's remove() waits); a
  // client being destroyed has no owner left and is not reached. The session is
  // only touched on its own loop.
  auto self = weak_from_this().lock();
  if (!self) return;
  asio::post(loop_.io, [self = std::move(self)] {
    if (self->session_) self->session_->cancel(CancelReason::user);
  });
}

void PgClient::send_error(const db::Error& e, std::string_view severity) {
  metrics().sqlstate(e.sqlstate.size() == 5 ? e.sqlstate : "XX000");
  pg::ErrorFields f;
  f.severity = severity;
  f.sqlstate = e.sqlstate.size() == 5 ? std::string_view(e.sqlstate) : std::string_view("XX000");
  f.message = e.message;
  f.detail = e.detail;
  f.hint = e.hint;
  f.more = e.fields;
  pg::Encoder(out_).error_response(f);
}

void PgClient::send_error(std::string_view sqlstate, std::string_view message,
                          std::string_view severity) {
  metrics().sqlstate(sqlstate);
  // 08P01: the client broke the protocol (bad message, message out of place).
  if (sqlstate == "08P01") metrics().error(ErrorReason::protocol_error);
  pg::ErrorFields f;
  f.severity = severity;
  f.sqlstate = sqlstate;
  f.message = message;
  pg::Encoder(out_).error_response(f);
}

void PgClient::send_notice(std::string_view sqlstate, std::string_view message,
                           std::string_view severity) {
  pg::ErrorFields f;
  f.severity = severity;
  f.sqlstate = sqlstate;
  f.message = message;
  pg::Encoder(out_).notice_response(f);
}

void PgClient::send_parameter_changes() {
  // A transaction that ended takes its SET LOCALs with it.
  if (!session_->in_transaction()) session_->settings().end_transaction();
  for (const auto& [name, value] : session_->settings().take_reported_changes()) {
    pg::Encoder(out_).parameter_status(name, value);
  }
}

void PgClient::ready_for_query() {
  if (backend_gone_) return;  // a FATAL went out: nothing follows it
  pg::Encoder(out_).ready_for_query(rfq_status(session_->tx_state()));
  answered_ = true;
}

awaitable<void> PgClient::fatal(std::string_view sqlstate, std::string_view message) {
  send_error(sqlstate, message, "FATAL");
  co_await flush();
}

bool PgClient::describe(ClientInfo& out) const {
  if (!session_ && !admin_user_) return false;
  describe_connection(out, session_.get());
  out.protocol = "postgres";
  out.key = pid_;
  if (session_) {
    out.application_name = session_->settings().get("application_name").value_or("");
  } else {
    out.user = admin_user_->name;
    out.database = std::string(kAdminDatabase);
    out.state = "active";
  }
  return true;
}

std::string_view PgClient::database() const {
  if (session_) return session_->pool_ptr()->config().name;
  return admin_user_ ? kAdminDatabase : std::string_view();
}

awaitable<void> PgClient::serve_logged_in() {
  if (admin_user_) {
    co_await serve_admin();
  } else {
    co_await serve(false);
  }
}

awaitable<void> PgClient::resume(boost::system::error_code ec) {
  auto self = shared_from_this();
  bool close = false;
  try {
    switch (idle_end(ec)) {
      case IdleEnd::request:
        break;
      case IdleEnd::timeout:
        if (session_->in_transaction()) {
          co_await fatal("25P03", "terminating connection due to idle-in-transaction timeout");
        } else {
          co_await fatal("57P05", "terminating connection due to idle-session timeout");
        }
        close = true;
        break;
      case IdleEnd::shutdown:
        co_await fatal("57P01", "terminating connection due to administrator command");
        close = true;
        break;
      case IdleEnd::error:
        close = true;
        break;
    }
  } catch (const std::exception& e) {
    spdlog::error("client {}: {}", peer_, e.what());
    close = true;
  }
  if (close) {
    co_await end();
  } else {
    co_await serve(true);  // the socket said it has something
  }
}

void PgClient::go_idle(bool hot, bool park_now) {
  hot = hot && !ssl_;  // a TLS client waits cold (wait_idle): its buffers go now
  // A hot client keeps both buffers (no free and malloc per transaction)
  // unless a large message or answer grew them; the cold wait frees them.
  if (!hot || in_.capacity() > kReadChunk) in_.release();
  if (!hot || out_.capacity() > kReadChunk) {
    std::string().swap(out_);  // move-assigning an empty string keeps the capacity
  }
  if (ext_ && ext_->statements.empty() && ext_->portals.empty()) ext_.reset();
  relay_.give_back();
  arm_idle_deadline(server_.config().server);
  // Readability: everything was written, so TLS wants nothing else.
  wait_idle(shared_from_this(), hot, park_now);
  if (listening_) watch_notifications();
}

void PgClient::watch_notifications() {
  Backend* b = session_ ? session_->backend() : nullptr;
  if (!b || watching_backend_) return;
  const int fd = b->conn.impl()->socket_fd();
  if (fd < 0) return;
  watching_backend_ = true;
  b->watch(fd, loop_.io.get_executor())
      .async_wait(asio::socket_base::wait_read,
                  [self = shared_from_this()](boost::system::error_code ec) {
                    self->on_backend_readable(ec);
                  });
}

void PgClient::stop_watching_backend() {
  Backend* b = session_ ? session_->backend() : nullptr;
  if (!watching_backend_ || !b || !b->watcher) return;
  // Its handler holds this client: it ends here, not when the backend next
  // turns readable, which may never be seen (the pool's reset reads the
  // backend's answer on another thread) and then the drain waits forever.
  boost::system::error_code ec;
  b->watcher->cancel(ec);
}

void PgClient::on_backend_readable(boost::system::error_code ec) {
  watching_backend_ = false;
  // Not idle: the client's own statement reads the backend now.
  if (ec || !idle_wait_ || !session_ || !session_->backend()) return;
  // A backend gone while idle is told to the client at its next statement.
  if (!session_->backend()->conn.alive()) return;
  forward_events();
  if (!out_.empty() && try_flush() == Flushed::gone) return;  // the idle wait sees the end
  watch_notifications();
}

bool PgClient::resume_now(boost::system::error_code ec) {
  // What resume() and serve() do for a wake-up, for the case that dominates
  // transaction pooling: relayed batches, each waiting (if at all) for a
  // backend and finding the server's answer in when it looks. Each step that
  // would wait otherwise hands the rest to a coroutine (serve_on), which picks
  // it up where this left it.
  if (ec || timed_out_ || terminating_ || draining_ || !session_ || skip_until_sync_ ||
      !session_->pool().pg_native() || session_->mode() != config::PoolMode::transaction) {
    return false;
  }
  if (!take_hot_read()) {
    auto n = read_now(kFirstRead);
    if (!n || *n == 0) return false;  // EOF, an error, or nothing after all: resume() sees to it
  }
  relay_loop(LoopEntry::fresh);
  return true;
}

void PgClient::relay_loop(LoopEntry entry) {
  auto self = shared_from_this();
  auto spawn = [&](bool mid_relay, bool flush_first) {
    asio::co_spawn(loop_.io, serve_on(self, mid_relay, flush_first), asio::detached);
  };
  // The completion handler keeps the client alive while end() runs.
  auto spawn_end = [&] { asio::co_spawn(loop_.io, end(), [self](std::exception_ptr) {}); };
  // out_ written without a wait; false when the rest went to a coroutine
  // (serve writes what is left) or the client is gone.
  auto flushed = [&] {
    switch (try_flush()) {
      case Flushed::all:
        return true;
      case Flushed::blocked:
        spawn(false, false);
        return false;
      case Flushed::gone:
        spawn_end();
        return false;
    }
    return false;
  };
  try {
    for (;; entry = LoopEntry::fresh) {
      if (entry == LoopEntry::fresh) {
        if (in_.empty()) break;
        switch (relay_.check()) {
          case PgRelay::Check::answered:
            continue;
          case PgRelay::Check::no:  // the ordinary path, or the rest of a message
            spawn(false, false);
            return;
          case PgRelay::Check::go:
            break;
        }
        if (!session_->try_backend_now()) {
          if (!session_->can_wait_now()) {  // PAUSE, a cancel, settings: ensure_backend's
            spawn(false, false);
            return;
          }
          // What is answered goes out before the wait (a pipelining client
          // gets each answer as PostgreSQL would send it).
          if (!flushed()) return;
          if (relay_.join()) return;  // queued behind another client's batch
          const bool pipelined = relay_.train_wait_begin();
          session_->wait_backend(
              loop_.io.get_executor(),
              [self](std::variant<Backend*, AcquireError> got) {
                self->on_granted(std::move(got));
              },
              pipelined);
          return;
        }
      }
      if (entry != LoopEntry::reading && !relay_.start()) {
        spawn(false, false);
        return;
      }
      for (;;) {
        const PgRelay::Wait wait = relay_.pump();
        if (wait == PgRelay::Wait::none) break;
        if (wait == PgRelay::Wait::flush) {
          const Flushed f = try_flush();
          if (f == Flushed::all) continue;
          if (f == Flushed::gone) {
            relay_.client_left();
            if (relay_.state().discard) continue;
            break;
          }
          spawn(true, true);
          return;
        }
        if (wait == PgRelay::Wait::read) {
          // The server is still at it: its answer completes a read on the
          // backend's socket (PgRelay::pump made room for it), and the loop goes
          // on from there.
          InBuffer& in = relay_.state().from_server;
          const size_t space = in.space();
          session_->backend()
              ->watch(relay_.state().fd, loop_.io.get_executor())
              .async_receive(asio::buffer(in.tail(), space),
                             [self, space](boost::system::error_code ec, size_t n) {
                               self->relay_.took(n, space, ec);
                               self->relay_loop(LoopEntry::reading);
                             });
          return;
        }
        spawn(true, false);  // a write that would block: rare, and the coroutine's
        return;
      }
      if (relay_.finish() == PgRelay::Relayed::closed) {
        spawn_end();
        return;
      }
      if (backend_gone_) {
        spawn(false, false);  // serve writes the FATAL, then ends the client
        return;
      }
    }
    if (!flushed()) return;
    if (draining_ || tls_pending()) {
      spawn(false, false);
      return;
    }
    go_idle(true);
  } catch (const std::exception& e) {
    spdlog::error("client {}: closed after an internal error: {}", peer_, e.what());
    spawn_end();
  }
}

void PgClient::on_granted(std::variant<Backend*, AcquireError> got) {
  relay_.train_wait_end();
  db::Error err;
  switch (session_->take_granted(std::move(got), err)) {
    case Session::Granted::ready:
      relay_loop(LoopEntry::granted);
      return;
    case Session::Granted::error:
      send_error(err);
      in_.consume(relay_.state().total);
      ready_for_query();
      relay_loop(LoopEntry::fresh);
      return;
    case Session::Granted::later:
      asio::co_spawn(loop_.io, serve_on(shared_from_this(), false, false), asio::detached);
      return;
  }
}

awaitable<void> PgClient::serve_on([[maybe_unused]] std::shared_ptr<PgClient> self, bool mid_relay,
                                   bool flush_first) {
  if (mid_relay) {
    bool closed = false;
    try {
      closed = co_await relay_.rest(flush_first) == PgRelay::Relayed::closed;
    } catch (const std::exception& e) {
      spdlog::error("client {}: closed after an internal error: {}", peer_, e.what());
      closed = true;
    }
    if (closed) {
      co_await end();
      co_return;
    }
  }
  co_await serve(false);
}

awaitable<void> PgClient::serve(bool readable) {
  const size_t max_msg = server_.config().server.max_message_size;
  bool served = false;  // a message was handled: the idle wait starts hot
  try {
    for (;;) {
      if (backend_gone_) {  // the relay's loop saw the loss: its FATAL is in out_
        spdlog::info("client {}: disconnected: its backend session was lost", peer_);
        (void)co_await flush();
        break;
      }
      if (readable) {
        readable = false;
        // Nothing read (the bytes were gone) leaves the client idle, under its
        // idle deadline; read_more would wait under the 60 s timeout of a
        // message half read, and a client idle past client_idle_timeout
        // stayed open.
        if (!take_hot_read() && !read_now(kFirstRead)) break;  // EOF or an error: the client left
      }
      // Handle every complete message in the buffer.
      bool open = true;
      for (;;) {
        if (session_ && !skip_until_sync_ && !in_.empty() && session_->pool().pg_native() &&
            session_->mode() == config::PoolMode::transaction) {
          // PostgreSQL backends in transaction mode: batches the relay takes
          // go to the server as bytes (pg_relay.cpp).
          served = true;
          auto r = co_await relay_.run();
          if (r == PgRelay::Relayed::closed) {
            open = false;
            break;
          }
          if (backend_gone_) break;  // flushed below, then the client ends
          if (r == PgRelay::Relayed::yes) continue;
        }
        auto d = pg::decode_frontend(in_.view(), max_msg);
        if (d.status == pg::DecodeStatus::need_more) break;
        if (d.status == pg::DecodeStatus::error) {
          spdlog::warn("client {}: protocol error: {}", peer_, d.error);
          co_await fatal("08P01", d.error);
          open = false;
          break;
        }
        unconsumed_ = static_cast<uint32_t>(d.consumed);
        served = true;
        open = co_await handle(d.message);
        in_.consume(unconsumed_);  // zero if the handler consumed it (COPY)
        unconsumed_ = 0;
        if (!open || backend_gone_) break;
        // An answer is complete and more messages wait: it goes out before
        // they run, so a slow one after it does not hold it back.
        if (answered_ && !in_.empty() && !out_.empty() && !co_await flush()) {
          open = false;
          break;
        }
      }
      if (!open) break;
      if (!out_.empty() && !co_await flush()) break;
      if (backend_gone_) {
        spdlog::info("client {}: disconnected: its backend session was lost", peer_);
        break;
      }
      if (draining_ && in_.empty() && !session_->in_transaction()) {
        co_await fatal("57P01", "terminating connection due to administrator command");
        break;
      }
      if (in_.empty()) {
        // Between messages. Wait for readability outside any coroutine: an
        // idle client holds no frame, no buffer and no timer, only this small
        // wait operation. (No read first: a client that waits for its answer
        // has sent nothing yet, and the wait sees data that is already there.)
        if (tls_pending()) {
          // decrypted bytes buffered in TLS: the socket would not say so
          auto n = read_now();
          if (!n) break;
          if (*n > 0) continue;  // else a partial record: wait for the rest
        }
        // Served nothing (just logged in, or a wake-up without a request):
        // likely to stay idle, so it leaves Asio's reactor at once.
        go_idle(served, !served);
        co_return;
      }
      // Part of a message is here: wait for the rest (bounded by the I/O timeout).
      auto len = pg::peek_length(in_.view());
      size_t want = len ? std::min<size_t>(*len + 1, max_msg + 1) : 5;
      if (!co_await read_more(want > in_.size() ? want - in_.size() : 1)) {
        if (timed_out_) spdlog::warn("client {}: closed: stalled mid-message", peer_);
        break;
      }
    }
  } catch (const ClientGone&) {
    spdlog::info("client {}: connection lost in the middle of a result", peer_);
  } catch (const std::exception& e) {
    spdlog::error("client {}: closed after an internal error: {}", peer_, e.what());
  }
  co_await end();
}

awaitable<void> PgClient::end() {
  // Orderly teardown: close readers and give the backend back.
  if (session_) {
    stop_watching_backend();
    try {
      co_await close_portals();
      co_await session_->finish();
    } catch (const std::exception& e) {
      spdlog::error("client {}: teardown: {}", peer_, e.what());
    }
    spdlog::debug("client {}: disconnected", peer_);
  }
  if (pid_) {
    server_.cancels().remove(pid_);
    pid_ = 0;
  }
  close_transport();
}

awaitable<bool> PgClient::handle(const pg::FrontendMessage& msg) {
  bool keep = true;
  // After an extended-query error PostgreSQL ignores every message until Sync.
  if (skip_until_sync_ &&
      (std::holds_alternative<pg::Query>(msg) || std::holds_alternative<pg::FunctionCall>(msg))) {
    co_return true;
  }
  if (bind_mark_ && !std::holds_alternative<pg::Describe>(msg) &&
      !std::holds_alternative<pg::Execute>(msg)) {
    bind_mark_.reset();
  }
  co_await std::visit(
      overloaded{
          [&](const pg::Query& m) -> awaitable<void> { co_await simple_query(m.sql); },
          [&](const pg::Parse& m) -> awaitable<void> { co_await on_parse(m); },
          [&](const pg::Bind& m) -> awaitable<void> { co_await on_bind(m); },
          [&](const pg::Describe& m) -> awaitable<void> { co_await on_describe(m); },
          [&](const pg::Execute& m) -> awaitable<void> { co_await on_execute(m); },
          [&](const pg::Close& m) -> awaitable<void> { co_await on_close(m); },
          [&](const pg::Sync&) -> awaitable<void> { co_await on_sync(); },
          [&](const pg::Flush&) -> awaitable<void> {
            if (!co_await flush()) keep = false;
          },
          [&](const pg::Terminate&) -> awaitable<void> {
            keep = false;
            co_return;
          },
          [&](const pg::PasswordMessage&) -> awaitable<void> {
            spdlog::warn("client {}: password message after authentication", peer_);
            co_await fatal("08P01", "unexpected password message");
            keep = false;
          },
          // COPY messages outside COPY are ignored, as PostgreSQL does.
          [&](const pg::CopyData&) -> awaitable<void> { co_return; },
          [&](const pg::CopyDone&) -> awaitable<void> { co_return; },
          [&](const pg::CopyFail&) -> awaitable<void> { co_return; },
          [&](const pg::FunctionCall&) -> awaitable<void> {
            send_error("0A000", "the function call protocol is not supported by wirepool");
            ready_for_query();
            co_return;
          },
      },
      msg);
  co_return keep;
}

}  // namespace wirepool::server
