#include "server/session.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <charconv>

namespace wirepool::server {

namespace asio = boost::asio;

Classified classify(std::string_view stmt, sql::Dialect dialect, bool backend_keeps_settings) {
  Classified c;
  c.verb = sql::command_verb(stmt, dialect);
  auto words = sql::leading_words(stmt, dialect, 3);
  if (words.empty()) return c;
  const std::string& w0 = words[0];
  const std::string w1 = words.size() > 1 ? words[1] : "";
  if (w0 == "BEGIN" || (w0 == "START" && w1 == "TRANSACTION")) {
    c.kind = StatementKind::begin;
  } else if ((w0 == "COMMIT" || w0 == "END") && w1 != "PREPARED") {
    c.kind = StatementKind::commit;
  } else if ((w0 == "ROLLBACK" || w0 == "ABORT") && w1 != "PREPARED" && w1 != "TO") {
    // ROLLBACK [WORK|TRANSACTION] TO [SAVEPOINT] x goes to the backend
    bool to = words.size() > 2 && words[2] == "TO";
    if (!to) c.kind = StatementKind::rollback;
  }
  if (c.kind != StatementKind::backend || backend_keeps_settings) return c;
  if (w0 == "SET" || w0 == "RESET" || (w0 == "SHOW" && dialect != sql::Dialect::mysql)) {
    c.kind = StatementKind::setting;
  } else if (w0 == "DISCARD") {
    c.kind = StatementKind::discard;
  } else if (w0 == "DEALLOCATE") {
    c.kind = StatementKind::deallocate;
  } else if (w0 == "LISTEN" || w0 == "UNLISTEN" || w0 == "NOTIFY") {
    c.kind = StatementKind::listen;
  }
  return c;
}

namespace {
std::atomic<uint64_t> next_session_id{1};
}  // namespace

Session::Session(DatabasePoolPtr pool, const UserRecord& user, BlockingExecutor& blocking,
                 config::Duration query_timeout)
    : pool_(std::move(pool)),
      user_(user),
      blocking_(blocking),
      query_timeout_(query_timeout),
      id_(next_session_id.fetch_add(1)) {}

Session::~Session() {
  // finish() is the orderly path; this only runs when the event loop is torn
  // down under a session (shutdown). The pool is told the backend is unusable.
  if (backend_) pool_->release(backend_, false);
}

asio::awaitable<std::optional<db::Error>> Session::ensure_backend() {
  if (backend_) co_return std::nullopt;
  auto got = co_await pool_->acquire();
  if (auto* b = std::get_if<Backend*>(&got)) {
    backend_ = *b;
    co_return std::nullopt;
  }
  const auto& e = std::get<AcquireError>(got);
  db::Error err;
  err.message = e.message;
  switch (e.reason) {
    case pool::RejectReason::timeout:
      err.code = db::Errc::busy;
      err.sqlstate = "53300";
      break;
    case pool::RejectReason::open_failed:
      err.code = db::Errc::connection;
      err.sqlstate = "08006";
      break;
    case pool::RejectReason::shutdown:
    case pool::RejectReason::paused:
      err.code = db::Errc::connection;
      err.sqlstate = "57P01";
      break;
  }
  co_return err;
}

void Session::release_if_idle(bool portals_open) {
  if (!backend_ || portals_open) return;
  if (mode() == config::PoolMode::session) return;
  if (tx_state() != db::TxState::idle) return;
  tx_ = db::Transaction();
  pool_->release(backend_, true);
  backend_ = nullptr;
}

asio::awaitable<void> Session::finish() {
  if (!backend_) co_return;
  bool healthy = true;
  if (tx_state() != db::TxState::idle) {
    auto st = co_await run([](Backend& b) { return b.conn.impl()->rollback(); });
    if (!st.ok()) healthy = false;
  }
  tx_ = db::Transaction();
  pool_->release(backend_, healthy);
  backend_ = nullptr;
}

void Session::backend_lost() {
  if (!backend_) return;
  tx_ = db::Transaction();
  pool_->release(backend_, false);
  backend_ = nullptr;
}

namespace {
/// statement_timeout as PostgreSQL reads it: a bare number is milliseconds;
/// "5s", "250ms", "1min", "1h" too. Anything else counts as 0 (none).
config::Duration parse_statement_timeout(const std::string& st) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(st.data(), st.data() + st.size(), v);
  if (ec != std::errc() || v <= 0) return config::Duration(0);
  std::string_view unit(p, st.data() + st.size() - p);
  while (!unit.empty() && unit.front() == ' ')
    unit.remove_prefix(1);
  if (unit == "s")
    v *= 1000;
  else if (unit == "min")
    v *= 60000;
  else if (unit == "h")
    v *= 3600000;
  else if (!unit.empty() && unit != "ms")
    return config::Duration(0);
  return config::Duration(v);
}
}  // namespace

void Session::statement_begin() {
  cancel_reason_ = CancelReason::none;
  if (timeout_version_ != settings_.version()) {
    timeout_version_ = settings_.version();
    statement_timeout_ = parse_statement_timeout(settings_.get("statement_timeout").value_or("0"));
  }
  config::Duration timeout = statement_timeout_.count() > 0 ? statement_timeout_ : query_timeout_;
  if (timeout.count() > 0) {
    deadline_ = std::chrono::steady_clock::now() + timeout;
  } else {
    deadline_.reset();
  }
}

void Session::statement_end() {
  deadline_.reset();
}

void Session::cancel(CancelReason why) {
  if (cancel_reason_ == CancelReason::none) cancel_reason_ = why;
  if (backend_) interrupt(*backend_);
}

CancelReason Session::cancel_reason() const {
  return cancel_reason_;
}

void Session::set_running(Backend& b, bool running) {
  std::lock_guard lock(b.cancel_mu);
  b.running_session = running ? id_ : 0;
}

void Session::interrupt(Backend& b) {
  if (b.caps.blocking) {
    // sqlite3_interrupt and the like return at once: do it here.
    std::lock_guard lock(b.cancel_mu);
    if (b.running_session == id_) b.conn.cancel();
    return;
  }
  // PQcancel opens a connection to the server: off the event loop. The backend
  // outlives the job: the pool closes backends on the same executor, after
  // this job, and never while a session holds them.
  blocking_.post([&b, id = id_] {
    std::lock_guard lock(b.cancel_mu);
    if (b.running_session == id) b.conn.cancel();
  });
}

asio::awaitable<void> Session::wait_backend_io(Backend& b) {
  db::IoInterest io = b.conn.impl()->io_interest();
  if (io.none()) co_return;  // nothing named: call again
  auto ex = co_await asio::this_coro::executor;
  if (!b.watcher || b.watched_fd != io.fd || b.watcher->get_executor() != ex) {
    if (b.watcher) (void)b.watcher->release();
    b.watcher = std::make_unique<asio::posix::stream_descriptor>(ex, io.fd);
    b.watched_fd = io.fd;
  }
  boost::system::error_code ec;
  // A waiting statement may be cancelled or time out: the sweep calls cancel(),
  // the backend answers, and the socket becomes readable.
  co_await b.watcher->async_wait(io.write ? asio::posix::stream_descriptor::wait_write
                                          : asio::posix::stream_descriptor::wait_read,
                                 asio::redirect_error(asio::use_awaitable, ec));
}

void Session::explain_cancel(db::Error& e) const {
  if (e.sqlstate != "57014") return;
  switch (cancel_reason()) {
    case CancelReason::timeout:
      e.message = "canceling statement due to statement timeout";
      break;
    case CancelReason::user:
      e.message = "canceling statement due to user request";
      break;
    case CancelReason::none:
      break;
  }
}

db::TxState Session::tx_state() const {
  if (!backend_) return db::TxState::idle;
  return backend_->conn.tx_state();
}

void Session::sync_tx_state() {
  if (tx_.is_open() && tx_state() == db::TxState::idle) tx_ = db::Transaction();
}

asio::awaitable<db::Status> Session::begin(std::string_view native_sql) {
  if (mode() == config::PoolMode::statement) {
    db::Error e;
    e.code = db::Errc::unsupported;
    e.sqlstate = "0A000";
    e.message = "transaction blocks are not allowed in statement pool mode (database \"" +
                pool_->config().name + "\")";
    co_return e;
  }
  if (auto err = co_await ensure_backend()) co_return std::move(*err);
  db::BeginOptions options;
  options.native_sql = std::string(native_sql);
  auto result = co_await run([&options](Backend& b) { return b.conn.begin(options); });
  if (!result.ok()) {
    co_return result.take_error();
  }
  tx_ = std::move(result.value());
  co_return db::Status{};
}

asio::awaitable<db::Status> Session::commit() {
  // The backend may be in a transaction the session did not open through
  // begin() (a SAVEPOINT-less driver edge case): commit it on the connection.
  auto st = co_await run(
      [this](Backend& b) { return tx_.is_open() ? tx_.commit() : b.conn.impl()->commit(); });
  co_return st;
}

asio::awaitable<db::Status> Session::rollback() {
  auto st = co_await run(
      [this](Backend& b) { return tx_.is_open() ? tx_.rollback() : b.conn.impl()->rollback(); });
  co_return st;
}

asio::awaitable<db::Result<db::Statement*>> Session::backend_statement(
    const std::string& key, const std::string& sql, const std::vector<db::ParamInfo>& hints) {
  if (auto* s = backend_->statements.find(key)) co_return s;
  auto prepared = co_await run([&sql, &hints](Backend& b) { return b.conn.prepare(sql, hints); });
  if (!prepared.ok()) co_return prepared.take_error();
  co_return backend_->statements.insert(key, std::move(prepared.value()));
}

}  // namespace wirepool::server
