#include "server/client_connection.hpp"

#include "protocol/pg/types.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <cstring>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;

// ---------------------------------------------------------------------------
// InBuffer

InBuffer::~InBuffer() {
  if (wipe_ && data_) OPENSSL_cleanse(data_.get(), cap_);
}

void InBuffer::set_wipe(bool on) {
  if (wipe_ && !on && data_) {
    OPENSSL_cleanse(data_.get(), begin_);
    OPENSSL_cleanse(data_.get() + end_, cap_ - end_);
  }
  wipe_ = on;
}

void InBuffer::consume(size_t n) {
  begin_ += n;
  if (begin_ == end_) begin_ = end_ = 0;
}

void InBuffer::reserve_tail(size_t n) {
  if (cap_ - end_ >= n) return;
  size_t used = end_ - begin_;
  if (begin_ > 0 && cap_ - used >= n) {
    std::memmove(data_.get(), data_.get() + begin_, used);
  } else {
    size_t cap = std::max({cap_ * 2, used + n, kReadChunk});
    auto fresh = std::make_unique_for_overwrite<uint8_t[]>(cap);
    if (used) std::memcpy(fresh.get(), data_.get() + begin_, used);
    if (wipe_ && data_) OPENSSL_cleanse(data_.get(), cap_);
    data_ = std::move(fresh);
    cap_ = cap;
  }
  begin_ = 0;
  end_ = used;
}

void InBuffer::release() {
  if (!empty()) return;
  if (wipe_ && data_) OPENSSL_cleanse(data_.get(), cap_);
  data_.reset();
  begin_ = end_ = cap_ = 0;
}

// ---------------------------------------------------------------------------
// ClientConnection

ClientConnection::ClientConnection(Loop& loop, ClientSocket socket, ProtocolIndex protocol,
                                   Admission::TicketPtr ticket)
    : loop_(loop),
      counters_(metrics().protocol(protocol)),
      socket_(std::move(socket)),
      ticket_(std::move(ticket)) {
  counters_.accepted.fetch_add(1, std::memory_order_relaxed);
  counters_.connected.fetch_add(1, std::memory_order_relaxed);
  boost::system::error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  if (!ec) {
    peer_ = ep.address().to_string() + ":" + std::to_string(ep.port());
    address_ = address_key(ep.address());
    v6_ = ep.address().is_v6();
  }
  socket_.non_blocking(true, ec);
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  fd_ = socket_.native_handle();
  loop_.clients.push_back(*this);
}

ClientConnection::~ClientConnection() {
  if (parked_) {
    loop_.park->unpark(fd_);
    ::close(fd_);
  }
  counters_.connected.fetch_sub(1, std::memory_order_relaxed);
}

void ClientConnection::count_in(size_t n) {
  counters_.bytes_in.fetch_add(n, std::memory_order_relaxed);
  if (db_counters_) db_counters_->bytes_in.fetch_add(n, std::memory_order_relaxed);
}

void ClientConnection::count_out(size_t n) {
  counters_.bytes_out.fetch_add(n, std::memory_order_relaxed);
  if (db_counters_) db_counters_->bytes_out.fetch_add(n, std::memory_order_relaxed);
}

size_t ClientConnection::io_read(uint8_t* data, size_t size, boost::system::error_code& ec) {
  ec.clear();
  if (!ssl_) {
    want_write_ = false;
    size_t n = socket_.read_some(asio::buffer(data, size), ec);
    count_in(n);
    return n;
  }
  size_t got = 0;
  int r = SSL_read_ex(ssl_.get(), data, size, &got);
  if (r == 1) {
    count_in(got);
    return got;
  }
  return tls_error(r, ec);
}

size_t ClientConnection::io_write(const uint8_t* data, size_t size, boost::system::error_code& ec) {
  ec.clear();
  if (!ssl_) {
    want_write_ = true;
    size_t n = 0;
    if (parked_) {
      // Out of Asio while parked: a LISTEN client's notifications go out meanwhile.
      const ssize_t r = ::send(fd_, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (r >= 0) {
        n = static_cast<size_t>(r);
      } else {
        ec = boost::system::error_code(errno, asio::error::get_system_category());
      }
    } else {
      n = socket_.write_some(asio::buffer(data, size), ec);
    }
    count_out(n);
    return n;
  }
  size_t put = 0;
  int r = SSL_write_ex(ssl_.get(), data, size, &put);
  if (r == 1) {
    count_out(put);
    return put;
  }
  return tls_error(r, ec);
}

size_t ClientConnection::tls_error(int result, boost::system::error_code& ec) {
  switch (SSL_get_error(ssl_.get(), result)) {
    case SSL_ERROR_WANT_READ:
      want_write_ = false;
      ec = asio::error::would_block;
      break;
    case SSL_ERROR_WANT_WRITE:
      want_write_ = true;
      ec = asio::error::would_block;
      break;
    case SSL_ERROR_ZERO_RETURN:
      ec = asio::error::eof;
      break;
    default:
      spdlog::debug("client {}: TLS: {}", peer_, tls::last_error(ssl_.get()));
      ec = asio::error::connection_reset;
  }
  ERR_clear_error();
  return 0;
}

void ClientConnection::login_done() {
  in_.set_wipe(false);
  if (ssl_) SSL_clear_options(ssl_.get(), SSL_OP_CLEANSE_PLAINTEXT);
}

bool ClientConnection::tls_pending() const {
  return ssl_ && (SSL_has_pending(ssl_.get()) || BIO_pending(SSL_get_rbio(ssl_.get())) > 0);
}

awaitable<bool> ClientConnection::tls_accept(const tls::ServerContextPtr& context) {
  tls_ctx_ = context;
  ssl_.reset(tls::new_server_ssl(*tls_ctx_, socket_.native_handle()));
  if (!ssl_) {
    spdlog::error("client {}: cannot start TLS: {}", peer_, tls::last_error());
    counters_.tls_failures.fetch_add(1, std::memory_order_relaxed);
    co_return false;
  }
  // Every early return below is a failed handshake; success is counted after the loop.
  struct FailureCount {
    ProtocolMetrics& m;
    bool ok = false;
    ~FailureCount() {
      if (!ok) m.tls_failures.fetch_add(1, std::memory_order_relaxed);
    }
  } failure{counters_};
  for (;;) {
    int r = SSL_accept(ssl_.get());
    if (r == 1) break;
    boost::system::error_code ec;
    int e = SSL_get_error(ssl_.get(), r);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
      spdlog::warn("client {}: TLS handshake failed: {}", peer_, tls::last_error(ssl_.get()));
      ERR_clear_error();
      ssl_.reset();
      co_return false;
    }
    co_await socket_.async_wait(
        e == SSL_ERROR_WANT_WRITE ? ClientSocket::wait_write : ClientSocket::wait_read,
        asio::redirect_error(use_awaitable, ec));
    if (timed_out_) {
      spdlog::info("client {}: closed at login_timeout during the TLS handshake", peer_);
      ssl_.reset();
      co_return false;
    }
    if (ec && ec != asio::error::operation_aborted) {
      ssl_.reset();
      co_return false;
    }
  }
  spdlog::debug("client {}: {} with {}", peer_, tls::tls_version(ssl_.get()),
                SSL_get_cipher_name(ssl_.get()));
  failure.ok = true;
  counters_.tls_handshakes.fetch_add(1, std::memory_order_relaxed);
  co_return true;
}

bool ClientConnection::adopt_tls(const tls::ServerContextPtr& context, tls::SslPtr ssl,
                                 std::string prefix) {
  if (!tls::attach_socket(ssl.get(), socket_.native_handle(), std::move(prefix))) return false;
  tls_ctx_ = context;
  ssl_ = std::move(ssl);
  // TDS 7.x: the handshake ran inside PRELOGIN packets (tds_client counts failures there).
  counters_.tls_handshakes.fetch_add(1, std::memory_order_relaxed);
  return true;
}

awaitable<bool> ClientConnection::read_more(size_t want) {
  for (;;) {
    auto n = read_now(std::max(want, in_.capacity() == 0 ? kFirstRead : kReadChunk));
    if (!n) co_return false;
    if (*n > 0) co_return true;
    boost::system::error_code ec;
    // The login deadline, when armed, bounds the wait; else the I/O timeout.
    const bool bounded_here = !io_deadline_;
    if (bounded_here) io_deadline_ = std::chrono::steady_clock::now() + kIoTimeout;
    co_await socket_.async_wait(want_write_ ? ClientSocket::wait_write : ClientSocket::wait_read,
                                asio::redirect_error(use_awaitable, ec));
    if (bounded_here) io_deadline_.reset();
    if (timed_out_) co_return false;
    if (ec && ec != asio::error::operation_aborted) co_return false;
  }
}

std::optional<size_t> ClientConnection::read_now(size_t reserve) {
  in_.reserve_tail(reserve);
  boost::system::error_code ec;
  size_t n = io_read(in_.tail(), in_.space(), ec);
  if (!ec) {
    in_.commit(n);
    return n;
  }
  if (ec == asio::error::would_block || ec == asio::error::try_again) return 0;
  return std::nullopt;
}

ClientConnection::Flushed ClientConnection::write_out(size_t& off) {
  while (off < out_.size()) {
    boost::system::error_code ec;
    size_t n = io_write(reinterpret_cast<const uint8_t*>(out_.data()) + off, out_.size() - off, ec);
    if (!ec) {
      off += n;
      out_sent_ += n;
      continue;
    }
    if (ec != asio::error::would_block && ec != asio::error::try_again) {
      out_.clear();
      answered_ = false;
      return Flushed::gone;
    }
    return Flushed::blocked;
  }
  out_.clear();
  answered_ = false;
  return Flushed::all;
}

ClientConnection::Flushed ClientConnection::try_flush() {
  size_t off = 0;
  const Flushed f = write_out(off);
  if (f == Flushed::blocked) out_.erase(0, off);  // what flush() is left to write
  return f;
}

awaitable<bool> ClientConnection::flush() {
  size_t off = 0;
  for (;;) {
    switch (write_out(off)) {
      case Flushed::all:
        co_return true;
      case Flushed::gone:
        co_return false;
      case Flushed::blocked:
        break;
    }
    boost::system::error_code ec;
    auto saved = io_deadline_;
    io_deadline_ = std::chrono::steady_clock::now() + kIoTimeout;
    co_await socket_.async_wait(want_write_ ? ClientSocket::wait_write : ClientSocket::wait_read,
                                asio::redirect_error(use_awaitable, ec));
    io_deadline_ = saved;
    if (timed_out_ || (ec && ec != asio::error::operation_aborted)) {
      out_.clear();
      co_return false;
    }
  }
}

awaitable<ClientConnection::Flushed> ClientConnection::flush_for(
    std::chrono::milliseconds patience) {
  size_t off = 0;
  const auto until = std::chrono::steady_clock::now() + patience;
  for (;;) {
    const Flushed f = write_out(off);
    if (f != Flushed::blocked) co_return f;
    if (std::chrono::steady_clock::now() >= until) break;
    boost::system::error_code ec;
    auto saved = io_deadline_;
    io_deadline_ = until;  // the loop's sweep ends the wait
    co_await socket_.async_wait(want_write_ ? ClientSocket::wait_write : ClientSocket::wait_read,
                                asio::redirect_error(use_awaitable, ec));
    io_deadline_ = saved;
    if (timed_out_) {
      if (terminating_) {
        out_.clear();
        co_return Flushed::gone;
      }
      timed_out_ = false;  // only the patience ran out
      break;
    }
    if (ec && ec != asio::error::operation_aborted) {
      out_.clear();
      co_return Flushed::gone;
    }
  }
  out_.erase(0, off);
  co_return Flushed::blocked;
}

void ClientConnection::sweep(TimePoint now) {
  expire_io(now);
  if (idle_wait_ && !parked_ && !cooling_ && ++hot_sweeps_ >= kHotSweeps) {
    cooling_ = true;  // the wait's handler parks the client
    boost::system::error_code ec;
    socket_.cancel(ec);
  }
  if (session_) {
    if (auto d = session_->statement_deadline(); d && now >= *d) {
      session_->cancel(CancelReason::timeout);
    }
    if (session_->statement_running() && session_->cancel_reason() == CancelReason::none &&
        hung_up()) {
      // Nobody will read the answer: the backend is freed now, not when the
      // statement ends (PostgreSQL's client_connection_check_interval does the same).
      spdlog::info("client {}: left while its statement ran: cancelling it", peer_);
      session_->cancel(CancelReason::client_gone);
    }
  }
}

bool ClientConnection::hung_up() {
  pollfd p{native_fd(), POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

void ClientConnection::drain() {
  draining_ = true;
  if (idle_wait_ && (!session_ || !session_->in_transaction())) cancel_waits();
}

void ClientConnection::terminate() {
  draining_ = true;
  terminating_ = true;
  cancel_waits();
  if (session_) session_->cancel(CancelReason::user);
}

void ClientConnection::arm_idle_deadline(const config::Server& server) {
  auto now = std::chrono::steady_clock::now();
  if (session_->in_transaction()) {
    if (server.idle_in_transaction_timeout.count() > 0) {
      io_deadline_ = now + server.idle_in_transaction_timeout;
    }
  } else if (server.client_idle_timeout.count() > 0) {
    io_deadline_ = now + server.client_idle_timeout;
  }
}

ClientConnection::IdleEnd ClientConnection::idle_end(boost::system::error_code ec) {
  if (timed_out_) {
    timed_out_ = false;
    spdlog::info(
        "client {}: closed by {}", peer_,
        session_->in_transaction() ? "idle_in_transaction_timeout" : "client_idle_timeout");
    return IdleEnd::timeout;
  }
  if (terminating_ || (draining_ && !session_->in_transaction())) return IdleEnd::shutdown;
  if (ec && ec != asio::error::operation_aborted) return IdleEnd::error;
  return IdleEnd::request;
}

void ClientConnection::on_readable(boost::system::error_code ec) {
  idle_wait_ = false;
  io_deadline_.reset();
  if (resume_now(ec)) return;
  asio::co_spawn(loop_.io, resume(ec), asio::detached);
}

namespace {

/// The idle wait's allocator: its operation lives as long as the client is
/// idle, so it gets a block of its own size. Asio's default recycles blocks
/// per thread and hands the wait whichever cached block fits, often one made
/// for a larger operation of the login (224 B held per idle client, not 128).
template <class T>
struct ExactAllocator {
  using value_type = T;
  ExactAllocator() = default;
  template <class U>
  ExactAllocator(const ExactAllocator<U>&) {}
  T* allocate(size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, size_t n) { std::allocator<T>().deallocate(p, n); }
  template <class U>
  bool operator==(const ExactAllocator<U>&) const {
    return true;
  }
};

}  // namespace

void ClientConnection::wait_idle(std::shared_ptr<ClientConnection> self, bool hot, bool park_now) {
  idle_wait_ = true;
  if (park_now) {
    park(std::move(self));
    return;
  }
  if (hot && !ssl_) {
    hot_wait_ = true;
    hot_sweeps_ = 0;
    in_.reserve_tail(kFirstRead);
    const size_t space = in_.space();
    // Asio's recycling allocator: a hot wait ends within a statement or two
    // (a malloc and free per statement otherwise); one that cools waits again
    // below with a block of its own size.
    socket_.async_receive(
        asio::buffer(in_.tail(), space),
        [self = std::move(self), space](boost::system::error_code ec, size_t n) mutable {
          ClientConnection& c = *self;
          c.hot_wait_ = false;
          if (!ec) {
            c.in_.commit(n);
            c.count_in(n);
            c.hot_read_ = n < space;  // a full buffer: read_now looks for more
          }
          const bool cool = std::exchange(c.cooling_, false);
          if (cool && ec == asio::error::operation_aborted && !c.draining_ && !c.terminating_ &&
              !c.timed_out_) {
            spdlog::debug("client {}: idle wait turns cold", c.peer_);
            c.in_.release();
            std::string().swap(c.out_);
            c.park(std::move(self));
            return;
          }
          c.on_readable(ec);
        });
    return;
  }
  // The byte stays in the socket (read_now takes it); EOF and errors end the
  // wait with their error code, a cancel (drain, KILL, a deadline) with
  // operation_aborted.
  hot_sweeps_ = 0;
  socket_.async_receive(
      asio::buffer(&peeked_, 1), ClientSocket::message_peek,
      asio::bind_allocator(ExactAllocator<void>(),
                           [self = std::move(self)](boost::system::error_code ec, size_t) {
                             ClientConnection& c = *self;
                             const bool cool = std::exchange(c.cooling_, false);
                             if (cool && ec == asio::error::operation_aborted && !c.draining_ &&
                                 !c.terminating_ && !c.timed_out_) {
                               c.park(std::move(self));
                               return;
                             }
                             c.on_readable(ec);
                           }));
}

void ClientConnection::park(std::shared_ptr<ClientConnection> self) {
  if (!loop_.park) loop_.park = std::make_unique<IdlePark>(loop_.io, &on_park_ready);
  boost::system::error_code ec;
  const int fd = socket_.release(ec);
  if (ec) {
    on_readable(ec);
    return;
  }
  if (!loop_.park->park(fd, this)) {
    // The kernel refused (out of memory): wait in Asio's reactor as before.
    socket_.assign(v6_ ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), fd, ec);
    socket_.non_blocking(true, ec);
    wait_idle(std::move(self));
    return;
  }
  parked_ = true;
  park_self_ = std::move(self);
}

void ClientConnection::on_park_ready(void* who) {
  static_cast<ClientConnection*>(who)->unpark({});
}

void ClientConnection::unpark(boost::system::error_code ec) {
  parked_ = false;
  const int fd = fd_;
  loop_.park->unpark(fd);
  boost::system::error_code e;
  socket_.assign(v6_ ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), fd, e);
  if (e) {
    ::close(fd);
    ec = e;
  } else {
    socket_.non_blocking(true, e);
  }
  if (!ec) {
    // What the cold wait's one-byte peek would have ended with: EOF and
    // socket errors as its error code.
    const ssize_t n = ::recv(fd, &peeked_, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) {
      ec = asio::error::eof;
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      ec = boost::system::error_code(errno, asio::error::get_system_category());
    }
  }
  // Posted, as a cancelled operation's handler is: the sweep, drain and the
  // park's own wake-up may be walking the loop's clients.
  asio::post(loop_.io, [self = std::move(park_self_), ec] { self->on_readable(ec); });
}

std::shared_ptr<ClientConnection> ClientConnection::leave_park_for_exit() {
  if (!parked_) return nullptr;
  parked_ = false;
  loop_.park->unpark(fd_);
  ::close(fd_);
  return std::move(park_self_);
}

void ClientConnection::cancel_waits() {
  if (parked_) {
    unpark(asio::error::operation_aborted);
    return;
  }
  boost::system::error_code ec;
  socket_.cancel(ec);
}

void ClientConnection::expire_io(TimePoint now) {
  if (now == TimePoint::max() || (io_deadline_ && now >= *io_deadline_)) {
    timed_out_ = true;
    io_deadline_.reset();
    cancel_waits();
  }
}

void ClientConnection::start(std::shared_ptr<ClientConnection> client) {
  client->watch_displacement(client);
  auto& io = client->loop_.io;
  auto* c = client.get();
  boost::asio::co_spawn(io, c->run(std::move(client)), boost::asio::detached);
}

boost::asio::awaitable<void> ClientConnection::run(
    [[maybe_unused]] std::shared_ptr<ClientConnection> self) {
  bool ok = false;
  try {
    ok = co_await login();
  } catch (const std::exception& e) {
    spdlog::error("client {}: login failed: {}", peer_, e.what());
  }
  if (ok) {
    co_await serve_logged_in();
  } else {
    co_await end();
  }
}

void ClientConnection::watch_displacement(const std::shared_ptr<ClientConnection>& self) {
  if (!ticket_) return;
  ticket_->on_displaced([&io = loop_.io, weak = std::weak_ptr<ClientConnection>(self)] {
    asio::post(io, [weak] {
      auto c = weak.lock();
      if (!c || !c->ticket_ || c->ticket_->logged_in()) return;
      metrics().refused(RefusedReason::displaced);
      spdlog::info(
          "client {}: closed before logging in: it took more than 1 s (5 s against a waiting "
          "one) and a newer connection needed its slot (max_pending_logins)",
          c->peer_);
      c->expire_io(TimePoint::max());
    });
  });
}

awaitable<void> ClientConnection::wait_until(TimePoint t) {
  const auto now = std::chrono::steady_clock::now();
  if (t <= now) co_return;
  asio::steady_timer timer(socket_.get_executor(), std::min<TimePoint>(t, now + kIoTimeout));
  boost::system::error_code ec;
  co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
}

awaitable<void> ClientConnection::login_failure(Server& server, const std::string& user,
                                                const std::string& reason, TimePoint answer_at) {
  server.login_failed();
  server.throttle().failed(address(), user);
  spdlog::warn("client {}: authentication failed for user \"{}\": {}", peer_, user, reason);
  co_await wait_until(answer_at + kLoginFailureDelay);
}

std::optional<std::string> passthrough_user_refusal(std::string_view user) {
  // PostgreSQL cuts longer names to this (NAMEDATALEN - 1): another role.
  constexpr size_t kMaxRoleName = 63;
  if (user.size() > kMaxRoleName) {
    return "the user name is longer than " + std::to_string(kMaxRoleName) + " bytes";
  }
  size_t bad = 0;
  if (!pg::valid_utf8(user, bad)) return "the user name is not valid UTF-8";
  for (unsigned char c : user) {
    if (c < 0x20 || c == 0x7f) return "the user name holds a control character";
  }
  return std::nullopt;
}

awaitable<ClientConnection::BackendCheck> ClientConnection::check_on_backend(
    Server& server, const std::string& user, const std::string& database,
    const std::string& password) {
  using Verdict = BackendCheck::Verdict;
  BackendCheck c;
  if (password.empty()) {
    c.reason = "empty password";
  } else if (password.find('\0') != std::string::npos) {
    c.reason = "the password holds a NUL byte";
  } else if (password.size() > kMaxPassthroughPassword) {
    c.reason = "the password is longer than " + std::to_string(kMaxPassthroughPassword) + " bytes";
  }
  if (!c.reason.empty()) co_return c;
  if (!server.has_database(database)) {
    c.verdict = Verdict::no_database;
    co_return c;
  }
  // A pool (and the password it holds) only for a name the backend accepted:
  // a stream of failed logins leaves nothing behind.
  auto pool = server.find_pool(database, user);
  std::optional<db::Error> err;
  if (!pool || !pool->credentials_match(password)) {
    // A statement of its own (GCC 12: no co_await inside an if condition).
    err = co_await server.verify_login(database, user, password);
    if (!err) pool = server.pool_for(database, user);
  }
  if (!err && !pool) {
    c.verdict = Verdict::no_database;  // removed by a reload meanwhile
  } else if (!err) {
    c.verdict = Verdict::ok;
    credentials_hold_ = pool->hold_credentials(password);
  } else if (err->sqlstate.starts_with("28") || err->sqlstate == "42501") {
    // 28P01, or 28000 (no such role, no pg_hba.conf entry), or no right to
    // this database (42501: PostgreSQL's CONNECT, MariaDB's 1044): a failed login.
    c.reason = "the backend refused the login (" + err->sqlstate + ")";
  } else if (err->sqlstate == "22021") {
    // Not UTF-8 where the driver needs it (ODBC's wide strings): a password it cannot pass.
    c.reason = "the driver cannot pass the name or password: " + err->message;
  } else {
    // Not a verdict on the password: said as such, not counted as a failed login.
    c.verdict = Verdict::unavailable;
    c.sqlstate = "08006";
    if (err->sqlstate.starts_with("57P") || err->sqlstate.starts_with("53")) {
      c.sqlstate = err->sqlstate;  // starting, stopping, too many connections: as the server said
    }
    c.reason = err->message;
  }
  co_return c;
}

db::Error make_error(std::string_view sqlstate, std::string message, db::Errc code) {
  db::Error e;
  e.code = code;
  e.sqlstate = std::string(sqlstate);
  e.message = std::move(message);
  return e;
}

std::optional<std::string> ClientConnection::certificate_refusal(const UserRecord& user,
                                                                 const config::Tls& tls) const {
  if (user.client_cert_pins.empty()) return std::nullopt;
  if (!ssl_) return server::certificate_refusal(user, tls, nullptr);
  const tls::PeerCertificate peer = tls::peer_certificate(ssl_.get());
  return server::certificate_refusal(user, tls, &peer);
}

void ClientConnection::close_transport() {
  if (ssl_) {
    (void)SSL_shutdown(ssl_.get());  // close_notify, best effort: never waits
    ERR_clear_error();
    ssl_.reset();
  }
  boost::system::error_code ec;
  socket_.shutdown(ClientSocket::shutdown_both, ec);
  socket_.close(ec);
  unlink();  // leaves the loop's client list
}

}  // namespace wirepool::server

namespace wirepool::server {

void ClientConnection::describe_connection(ClientInfo& out, const Session* session) const {
  // From the descriptor: a parked client's socket_ is closed meanwhile.
  asio::ip::tcp::endpoint remote, local;
  socklen_t len = remote.capacity();
  if (::getpeername(native_fd(), remote.data(), &len) == 0) {
    remote.resize(len);
    out.address = remote.address().to_string();
    out.port = remote.port();
  }
  len = local.capacity();
  if (::getsockname(native_fd(), local.data(), &len) == 0) {
    local.resize(len);
    out.local_address = local.address().to_string();
    out.local_port = local.port();
  }
  out.connect_time = connected_at_;
  out.id = id_;
  if (ssl_) {
    out.tls = std::string(tls::tls_version(ssl_.get())) + "/" + SSL_get_cipher_name(ssl_.get());
  }
  if (!session) return;
  out.user = session->user().name;
  out.database = session->pool_ptr()->config().name;
  out.request_time = session->request_time();
  if (session->backend()) {
    out.state = "active";
    out.backend = session->backend()->id;
  } else if (session->waiting()) {
    out.state = "waiting";
    out.wait = std::chrono::steady_clock::now() - session->wait_started();
  } else {
    out.state = "idle";
  }
}

}  // namespace wirepool::server
