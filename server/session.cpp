#include "server/session.hpp"

#include <spdlog/spdlog.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <utility>

namespace wirepool::server {

namespace asio = boost::asio;

namespace {
std::atomic<uint64_t> next_session_id{1};
}  // namespace

Session::Session(DatabasePoolPtr pool, const UserRecord& user, BlockingExecutor& blocking,
                 config::Duration query_timeout)
    : pool_(pool.get()),
      primary_(std::move(pool)),
      user_(user),
      blocking_(blocking),
      query_timeout_(query_timeout),
      id_(next_session_id.fetch_add(1)) {
  pool_->metrics().clients.fetch_add(1, std::memory_order_relaxed);
}

Session::~Session() {
  // finish() is the orderly path; this only runs when the event loop is torn
  // down under a session (shutdown). The pool is told the backend is unusable.
  give_back(false);
  primary_->metrics().clients.fetch_sub(1, std::memory_order_relaxed);
}

void Session::adopt(Backend* b, std::chrono::steady_clock::duration waited) {
  pool_->metrics().acquire_wait.observe(waited);
  queued_ = false;
  routed_statement_ = statement_next_ && reads_ && pool_ == reads_.get();
  read_only_next_ = false;
  statement_next_ = false;
  backend_ = b;
  if (client_metrics_) client_metrics_->active.fetch_add(1, std::memory_order_relaxed);
  spdlog::trace("session {}: holds backend {} of database {}", id_, backend_->id,
                pool_->config().name);
  (void)backend_->conn.set_event_sink(this);  // Unsupported where there are no events
}

db::Error Session::acquire_error(const AcquireError& e) {
  db::Error err;
  err.message = e.message;
  switch (e.reason) {
    case pool::RejectReason::timeout:
      metrics().error(ErrorReason::pool_timeout);
      err.code = db::Errc::busy;
      err.sqlstate = "53300";
      break;
    case pool::RejectReason::open_failed:
      // The backend's own code where it gave one (57P03 starting up, 3D000,
      // 28P01, 08001 unreachable); 08006 from a driver that has none.
      err.code = db::Errc::connection;
      err.sqlstate = e.sqlstate.size() == 5 && e.sqlstate != "XX000" ? e.sqlstate : "08006";
      break;
    case pool::RejectReason::shutdown:
    case pool::RejectReason::paused:
      err.code = db::Errc::connection;
      err.sqlstate = "57P01";
      break;
  }
  return err;
}

bool Session::default_read_only() const {
  auto v = settings_.get("default_transaction_read_only");
  return v && (*v == "on" || *v == "true" || *v == "1" || *v == "yes");
}

bool Session::default_serializable() const {
  auto v = settings_.get("default_transaction_isolation");
  return v && v->size() == 12 &&
         std::equal(v->begin(), v->end(), "serializable", [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == b;
         });
}

void Session::note_movable_begin(std::string_view begin) {
  Work& w = work();
  w.movable_begin.assign(begin);
  w.movable_at = begin.empty() ? 0 : w.batches + 1;  // the batch about to run
}

bool Session::transaction_movable() const {
  return routes_transactions() && backend_ && pool_ == primary_.get() && work_ &&
         work_->movable_at != 0 && work_->movable_at == work_->batches &&
         tx_state() == db::TxState::in_transaction && !implicit_ && !settings_noted();
}

asio::awaitable<std::optional<db::Error>> Session::move_to_reads() {
  Work& w = work();
  const std::string begin = std::move(w.movable_begin);
  w.movable_at = 0;
  if (reads_->paused()) co_return std::nullopt;
  // The standby's backend first: when none is granted nothing has changed.
  const auto started = std::chrono::steady_clock::now();
  auto executor = co_await asio::this_coro::executor;
  struct Wait {
    explicit Wait(const asio::any_io_executor& ex) : wake(ex) {}
    std::optional<std::variant<Backend*, AcquireError>> got;
    asio::steady_timer wake;
  };
  auto wait = std::make_shared<Wait>(executor);
  const pool::WaiterId waiter =
      reads_->acquire_async(executor, [wait](std::variant<Backend*, AcquireError> got) {
        wait->got = std::move(got);
        wait->wake.cancel();
      });
  // As ensure_backend's wait under PAUSE, a cancel (the client's, the
  // statement's timeout, the drain's) ends it; polled, off the hot path.
  boost::system::error_code ec;
  while (!wait->got && cancel_reason_ == CancelReason::none) {
    wait->wake.expires_after(std::chrono::milliseconds(50));
    co_await wait->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  if (!wait->got) {
    // Cancelled while it waited, as PostgreSQL cancels a statement waiting
    // for a lock: the transaction stays on the primary and fails there, by
    // the server's own cancel (57014, then 25P02 until the client's ROLLBACK).
    if (!reads_->cancel_acquire(waiter)) {
      while (!wait->got) {  // granted or refused meanwhile: the answer is posted
        wait->wake.expires_after(std::chrono::milliseconds(50));
        co_await wait->wake.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
      if (auto* b = std::get_if<Backend*>(&*wait->got)) reads_->release(*b, true);
    }
    // No second cancel from run() meanwhile: the reason is kept aside.
    const CancelReason why = std::exchange(cancel_reason_, CancelReason::none);
    auto st = co_await execute_text("SELECT pg_cancel_backend(pg_backend_pid())");
    cancel_reason_ = why;
    if (st.ok()) co_return std::nullopt;  // not cancelled: a cancel that came too late
    db::Error e = st.take_error();
    explain_cancel(e);
    co_return e;
  }
  auto got = std::move(*wait->got);
  if (auto* e = std::get_if<AcquireError>(&got)) {
    spdlog::debug("session {}: SET TRANSACTION READ ONLY stays on the primary: {}", id_,
                  e->message);
    co_return std::nullopt;
  }
  Backend* standby = std::get<Backend*>(got);
  // Nothing ran in the primary's transaction: its rollback leaves it clean.
  auto rolled = co_await run([](Backend& b) { return b.conn.impl()->rollback(); });
  give_back(rolled.ok());
  pool_ = reads_.get();
  read_only_next_ = true;  // ensure_backend's pool if that backend was dead
  (void)settle(standby, std::chrono::steady_clock::now() - started, true);
  db::BeginOptions options;
  options.native_sql = begin;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto refused = co_await ensure_backend();
    if (refused) {
      if (attempt == 1) co_return refused;
    } else {
      auto st = co_await run([&options](Backend& b) { return b.conn.impl()->begin(options); });
      if (st.ok()) {
        spdlog::debug("session {}: transaction moved to backend {} of database {}", id_,
                      backend_->id, pool_->config().name);
        co_return std::nullopt;
      }
      if (attempt == 1) co_return st.take_error();
      co_await finish();
    }
    // Back to the primary, where the client's BEGIN ran first.
    read_only_next_ = false;
  }
  co_return std::nullopt;
}

void Session::choose_pool() {
  if (!reads_ || backend_ || waiting_ || queued_) return;
  const bool reads =
      read_only_next_ || (route_transactions_ && default_read_only() && !default_serializable());
  pool_ = reads ? reads_.get() : primary_.get();
}

bool Session::can_wait_now() const {
  return !backend_ && !waiting_ && cancel_reason_ == CancelReason::none && !pool_->paused();
}

Session::Granted Session::settle(Backend* b, std::chrono::steady_clock::duration waited,
                                 bool probe) {
  // An idle pooled connection may have died meanwhile (the server restarted,
  // an administrator terminated it, even a moment after its last use): it is
  // discarded here, so that clients do not pay for it with errors, and the
  // caller acquires again. alive() is a zero-timeout readability check of the
  // socket (the server's FATAL or EOF), no round trip.
  if (probe && !b->conn.alive()) {
    spdlog::info("database {}: backend connection {} was closed by the server; replacing it",
                 pool_->config().name, b->id);
    pool_->release(b, false);
    return Granted::later;
  }
  adopt(b, waited);
  if (pool_->pg_native() && !settings_in_sync()) {
    settings_pending_ = true;
    return Granted::later;
  }
  return Granted::ready;
}

void Session::wait_begin() {
  if (client_metrics_) client_metrics_->waiting.fetch_add(1, std::memory_order_relaxed);
  pool_->metrics().clients_waiting.fetch_add(1, std::memory_order_relaxed);
  waiting_ = true;
  work().wait_started = std::chrono::steady_clock::now();
}

void Session::wait_backend(asio::any_io_executor executor, DatabasePool::AcquireHandler done,
                           bool pipelined) {
  choose_pool();
  wait_begin();
  work().waiter = pool_->acquire_async(std::move(executor), std::move(done), pipelined);
}

bool Session::leave_wait_for_train() {
  if (!waiting_ || !work_ || work_->waiter == 0 || cancel_reason_ != CancelReason::none ||
      !pool_->cancel_acquire(work_->waiter)) {
    return false;
  }
  if (client_metrics_) client_metrics_->waiting.fetch_sub(1, std::memory_order_relaxed);
  pool_->metrics().clients_waiting.fetch_sub(1, std::memory_order_relaxed);
  waiting_ = false;
  work_->waiter = 0;
  queued_ = true;  // wait_started stays: the wait goes on, in the train
  return true;
}

Session::Granted Session::take_granted(std::variant<Backend*, AcquireError> got, db::Error& err,
                                       bool probe) {
  if (client_metrics_) client_metrics_->waiting.fetch_sub(1, std::memory_order_relaxed);
  pool_->metrics().clients_waiting.fetch_sub(1, std::memory_order_relaxed);
  waiting_ = false;
  Work& w = work();
  w.waiter = 0;
  const auto waited = std::chrono::steady_clock::now() - w.wait_started;
  if (auto* b = std::get_if<Backend*>(&got)) return settle(*b, waited, probe);
  pool_->metrics().acquire_wait.observe(waited);
  cancelled_waiting_ = false;  // its statement is answered with the error
  err = acquire_error(std::get<AcquireError>(got));
  return Granted::error;
}

bool Session::try_backend_now() {
  if (backend_) return !settings_pending_;
  choose_pool();
  if (cancel_reason_ != CancelReason::none || pool_->paused()) return false;
  Backend* b = pool_->try_acquire();
  return b && settle(b, {}, true) == Granted::ready;
}

asio::awaitable<std::optional<db::Error>> Session::ensure_backend(bool pipelined) {
  if (!backend_ && try_backend_now()) co_return std::nullopt;
  for (int tries = 0; !backend_; ++tries) {
    choose_pool();
    wait_begin();
    // PAUSE: wait for RESUME. Polled (a paused pool is a maintenance window, not
    // the hot path); a cancel, the drain's termination or the pool's shutdown
    // ends the wait.
    while (pool_->paused() && cancel_reason_ == CancelReason::none && !pool_->is_shut_down()) {
      auto executor = co_await asio::this_coro::executor;
      asio::steady_timer pause_timer(executor, std::chrono::milliseconds(50));
      boost::system::error_code ec;
      co_await pause_timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    auto got = co_await pool_->acquire(pipelined);
    db::Error err;
    // Past `max` dead ones in a row, the next is taken as it is.
    switch (
        take_granted(std::move(got), err, tries <= static_cast<int>(pool_->config().pool.max))) {
      case Granted::error:
        co_return err;
      case Granted::ready:
        co_return std::nullopt;
      case Granted::later:  // a dead backend replaced, or settings to bring in line
        break;
    }
  }
  if (!settings_pending_) co_return std::nullopt;
  settings_pending_ = false;
  if (pool_->pg_native() && !settings_in_sync()) {
    auto st = co_await sync_settings();
    if (!st.ok()) {
      db::Error e = st.take_error();
      if (e.code == db::Errc::connection) {
        backend_lost();
      } else {
        give_back(true);
      }
      co_return e;
    }
  }
  co_return std::nullopt;
}

void Session::give_back(bool healthy) {
  if (!backend_) return;
  if (backend_->train) {
    healthy = backend_->train->release(*backend_, "the session ahead of it ended") && healthy;
  }
  spdlog::trace("session {}: gives backend {} back{}", id_, backend_->id,
                healthy ? "" : " (unusable)");
  if (work_ && !work_->noted.empty()) {
    // Settings the client changed and nobody read back: the next client's
    // sync starts with RESET ALL.
    backend_->settings_unknown = true;
    work_->noted.clear();
  }
  (void)backend_->conn.set_event_sink(nullptr);
  settings_pending_ = false;
  tx_ = db::Transaction();
  implicit_ = false;
  pool_->release(backend_, healthy);
  backend_ = nullptr;
  routed_statement_ = false;
  if (reads_) pool_ = primary_.get();  // a routed read-only transaction's lease is over
  if (client_metrics_) client_metrics_->active.fetch_sub(1, std::memory_order_relaxed);
}

void Session::release_if_idle(bool portals_open) {
  if (!backend_ || portals_open) return;
  if (mode() == config::PoolMode::session) return;
  if (tx_state() != db::TxState::idle) return;
  if (settings_noted()) return;  // settle_settings() first
  give_back(true);
}

asio::awaitable<void> Session::finish() {
  if (!backend_) co_return;
  bool healthy = true;
  if (tx_state() != db::TxState::idle) {
    auto st = co_await run([](Backend& b) { return b.conn.impl()->rollback(); });
    if (!st.ok()) healthy = false;
  }
  give_back(healthy);
}

asio::awaitable<void> Session::leave_standby() {
  read_only_next_ = false;
  statement_next_ = false;
  co_await finish();
}

void Session::backend_lost() {
  if (backend_) metrics().error(ErrorReason::backend_lost);
  give_back(false);
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
  if (!cancelled_waiting_) cancel_reason_ = CancelReason::none;
  cancelled_waiting_ = false;
  interrupted_ = false;
  const auto now = std::chrono::steady_clock::now();
  Work& w = work();
  w.statement_started = now;
  if (!w.xact_started) w.xact_started = now;
  request_time_ = std::chrono::system_clock::now();
  ++w.batches;
  pool_->metrics().statements.fetch_add(1, std::memory_order_relaxed);
  arm_deadline(now);
}

void Session::prepare_begin() {
  if (statement_running()) return;  // inside a statement: its deadline holds
  if (!cancelled_waiting_) cancel_reason_ = CancelReason::none;
  cancelled_waiting_ = false;
  interrupted_ = false;
  arm_deadline(std::chrono::steady_clock::now());
}

void Session::prepare_end() {
  if (work_ && !work_->statement_started) work_->deadline.reset();
}

void Session::arm_deadline(std::chrono::steady_clock::time_point now) {
  Work& w = work();
  if (w.timeout_version != settings_.version()) {
    w.timeout_version = settings_.version();
    w.statement_timeout = parse_statement_timeout(settings_.get("statement_timeout").value_or("0"));
  }
  config::Duration timeout = w.statement_timeout.count() > 0 ? w.statement_timeout : query_timeout_;
  if (timeout.count() > 0) {
    w.deadline = now + timeout;
  } else {
    w.deadline.reset();
  }
}

void Session::statement_end() {
  cancelled_waiting_ = false;
  if (!work_) return;
  Work& w = *work_;
  w.deadline.reset();
  if (!w.statement_started) return;
  auto& m = pool_->metrics();
  const auto now = std::chrono::steady_clock::now();
  m.statement_duration.observe(now - *w.statement_started);
  w.statement_started.reset();
  // A statement that leaves the backend idle ended a transaction: its own
  // (autocommit) or the explicit one it committed or rolled back (PgBouncer's
  // xact_count counts the same way).
  if (tx_state() == db::TxState::idle) {
    m.transactions.fetch_add(1, std::memory_order_relaxed);
    if (w.xact_started) {
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - *w.xact_started);
      m.transaction_us.fetch_add(static_cast<uint64_t>(us.count()), std::memory_order_relaxed);
    }
    w.xact_started.reset();
  }
}

void Session::cancel(CancelReason why) {
  if (cancel_reason_ == CancelReason::none) cancel_reason_ = why;
  if (waiting_ && !backend_) cancelled_waiting_ = true;
  if (backend_) interrupt(*backend_);
}

CancelReason Session::cancel_reason() const {
  return cancel_reason_;
}

void Session::set_running(Backend& b, bool running) {
  std::lock_guard lock(b.cancel_mu);
  b.running_session = running ? id_ : 0;
  b.cancelling = false;
}

void Session::interrupt(Backend& b) {
  if (b.caps.blocking) {
    interrupted_ = true;
    // sqlite3_interrupt and the like return at once: do it here.
    std::lock_guard lock(b.cancel_mu);
    if (b.running_session == id_) b.conn.cancel();
    return;
  }
  // PostgreSQL's cancel names the connection, not the statement: with other
  // clients' batches pipelined behind this one (the relay's train), the
  // server may be on theirs when it lands. Not sent then; the statement ends
  // as if the cancel came too late.
  if (b.train && !b.train->may_cancel(b)) {
    spdlog::debug("session {}: cancel not sent: other clients' batches follow on backend {}", id_,
                  b.id);
    return;
  }
  interrupted_ = true;
  b.cancelling = true;  // and none joins behind it until its answer is in
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
  co_await wait_fd(b, io.fd, io.write);
}

asio::awaitable<void> Session::wait_fd(Backend& b, int fd, bool write) {
  auto ex = co_await asio::this_coro::executor;
  auto& watcher = b.watch(fd, ex);
  boost::system::error_code ec;
  // A waiting statement may be cancelled or time out: the sweep calls cancel(),
  // the backend answers, and the socket becomes readable.
  co_await watcher.async_wait(write ? asio::socket_base::wait_write : asio::socket_base::wait_read,
                              asio::redirect_error(asio::use_awaitable, ec));
}

void Session::relay_running(bool running) {
  if (!backend_) return;
  set_running(*backend_, running);
  if (running && cancel_reason_ != CancelReason::none) interrupt(*backend_);
}

void Session::explain_cancel(db::Error& e) const {
  if (e.sqlstate != "57014") return;
  switch (cancel_reason()) {
    case CancelReason::timeout:
      e.message = "canceling statement due to statement timeout";
      break;
    case CancelReason::user:
    case CancelReason::client_gone:
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
  if (tx_state() != db::TxState::idle) return;
  if (tx_.is_open()) tx_ = db::Transaction();
  implicit_ = false;
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
  implicit_ = false;
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

asio::awaitable<db::Status> Session::begin_implicit() {
  auto st = co_await begin("BEGIN");
  implicit_ = st.ok();
  co_return st;
}

asio::awaitable<db::Status> Session::end_implicit(bool failed) {
  if (!implicit()) {
    implicit_ = false;
    co_return db::Status{};
  }
  implicit_ = false;
  db::Status st;  // if/else, not ?: (GCC 12 and co_await in ?:)
  if (failed || tx_state() == db::TxState::failed) {
    st = co_await rollback();
  } else {
    st = co_await commit();
  }
  sync_tx_state();
  co_return st;
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
  std::vector<db::Statement> evicted;
  db::Statement* stmt = backend_->statements.insert(key, std::move(prepared.value()), &evicted);
  for (auto& old : evicted) {
    auto st = co_await run([&old](Backend&) { return old.close(); });
    if (!st.ok() && st.error().code == db::Errc::connection) co_return st.take_error();
  }
  co_return stmt;
}

}  // namespace wirepool::server

namespace wirepool::server {

// ---- events -----------------------------------------------------------------

Session::Events& Session::events() {
  Work& w = work();
  if (!w.events) w.events = std::make_unique<Events>();
  return *w.events;
}

void Session::on_notice(const db::Notice& n) {
  events().notices.push_back(n);
}

void Session::on_parameter(const db::ParameterChange& c) {
  events().parameters.push_back(c);
  // What the backend reports is what the client now has: keep it to replay.
  static constexpr std::string_view kSettable[] = {"application_name",
                                                   "client_encoding",
                                                   "DateStyle",
                                                   "IntervalStyle",
                                                   "TimeZone",
                                                   "default_transaction_read_only",
                                                   "standard_conforming_strings"};
  for (auto name : kSettable) {
    if (c.name == name) {
      (void)settings_.set(c.name, c.value);
      if (backend_) {
        backend_->applied_settings = settings_.overrides();
        backend_->applied_version = settings_.version();
        backend_->applied_session = id_;
      }
    }
  }
}

void Session::on_notification(const db::Notification& n) {
  events().notifications.push_back(n);
}

// ---- settings that follow the client (PostgreSQL backends) -------------------

namespace {

std::string quote_literal(std::string_view v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'') out += '\'';
    out += c;
  }
  out += '\'';
  return out;
}

std::string quote_name(std::string_view n) {
  bool plain = !n.empty();
  for (char c : n) {
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.');
  }
  if (plain) return std::string(n);
  std::string out = "\"";
  for (char c : n) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

bool Session::settings_in_sync() {
  Backend& b = *backend_;
  if (b.applied_session == id_ && b.applied_version == settings_.version()) return true;
  // Usually another session left the same settings (the same application's
  // startup values): nothing to send, and nothing to allocate to find out.
  if (b.settings_unknown || !settings_.overrides_equal(b.applied_settings)) return false;
  b.applied_session = id_;
  b.applied_version = settings_.version();
  return true;
}

bool Session::settings_match(const Backend& b) const {
  if (b.applied_session == id_ && b.applied_version == settings_.version()) return true;
  return !b.settings_unknown && settings_.overrides_equal(b.applied_settings);
}

void Session::hand_over(Session& next) {
  Backend* b = backend_;
  set_running(*b, false);
  (void)b->conn.set_event_sink(nullptr);
  tx_ = db::Transaction();
  backend_ = nullptr;
  routed_statement_ = false;
  if (reads_) pool_ = primary_.get();  // as give_back
  if (client_metrics_) client_metrics_->active.fetch_sub(1, std::memory_order_relaxed);
  spdlog::trace("session {}: hands backend {} to session {}", id_, b->id, next.id_);
  b->applied_session = next.id_;
  b->applied_version = next.settings_.version();
  next.adopt(b, std::chrono::steady_clock::now() - next.wait_started());
  // A cancel that came while it queued is sent only if its statement is still
  // at work when its turn comes (relay_cancel_pending): its answer may be in
  // already, and the server may be running the next client's statement.
  next.set_running(*b, true);
}

void Session::relay_interrupt_if_cancelled() {
  if (backend_ && cancel_reason_ != CancelReason::none && !interrupted_) interrupt(*backend_);
}

asio::awaitable<db::Status> Session::sync_settings() {
  if (settings_in_sync()) co_return db::Status{};
  Backend& b = *backend_;
  auto desired = settings_.overrides();
  // After a failed replay nobody knows what the backend holds: start over.
  std::string sql = b.settings_unknown ? "RESET ALL;" : "";
  if (b.settings_unknown) b.applied_settings.clear();
  // set_config() takes a value in the form current_setting() reads it back in,
  // which SET would not for lists ("SET search_path TO 'a, b'" names one schema).
  std::string sets;
  for (const auto& [name, value] : desired) {
    bool same = false;
    for (const auto& [n, v] : b.applied_settings)
      same = same || (n == name && v == value);
    if (same) continue;
    sets += sets.empty() ? "SELECT " : ", ";
    sets += "set_config(" + quote_literal(name) + ", " + quote_literal(value) + ", false)";
  }
  if (!sets.empty()) sql += sets + ";";
  for (const auto& [name, value] : b.applied_settings) {
    bool kept = false;
    for (const auto& [n, v] : desired)
      kept = kept || n == name;
    if (!kept) sql += "RESET " + quote_name(name) + ";";
  }
  if (!sql.empty()) {
    auto st = co_await execute_text(sql);
    if (!st.ok()) {
      // The backend may now hold some of them: replay everything next time.
      b.applied_session = 0;
      b.settings_unknown = true;
      co_return st;
    }
  }
  b.applied_settings = std::move(desired);
  b.settings_unknown = false;
  b.applied_session = id_;
  b.applied_version = settings_.version();
  co_return db::Status{};
}

void Session::note_set(std::vector<std::string> names) {
  for (auto& n : names) {
    // PostgreSQL sets these anew at each transaction's start: they end with
    // it, and a standby refuses transaction_read_only = off.
    if (n == "transaction_read_only" || n == "transaction_isolation" ||
        n == "transaction_deferrable") {
      continue;
    }
    auto& noted = work().noted;
    if (std::find(noted.begin(), noted.end(), n) == noted.end()) noted.push_back(std::move(n));
  }
}

asio::awaitable<void> Session::settle_settings() {
  if (!settings_noted() || !backend_ || tx_state() != db::TxState::idle) co_return;
  auto& noted = work_->noted;
  // One round trip after the transaction that ran SET: what the backend holds
  // now is right whether the transaction committed or not.
  std::string sql = "SELECT ";
  for (size_t i = 0; i < noted.size(); ++i) {
    if (i) sql += ", ";
    sql += "current_setting(" + quote_literal(noted[i]) + ", true)";
  }
  struct Read {
    db::Rows rows;
    int phase = 0;
    std::vector<std::optional<std::string>> values;
    std::optional<db::Error> err;
  } st;
  const db::QueryOptions text;
  auto result = co_await run([&](Backend& b) -> db::Status {
    for (;;) {
      if (st.phase == 0) {
        auto r = b.conn.query(sql, {}, text);
        if (db::is_would_block(r)) return r.take_error();
        if (!r.ok()) {
          st.err = r.take_error();
          st.phase = 2;
          continue;
        }
        st.rows = std::move(r.value());
        st.phase = 1;
      } else if (st.phase == 1) {
        std::vector<db::Value> row(st.rows.columns().size());
        auto r = st.rows.next(row);
        if (db::is_would_block(r)) return r.take_error();
        if (!r.ok()) {
          st.err = r.take_error();
          st.phase = 2;
          continue;
        }
        if (!r.value()) {
          st.phase = 2;
          continue;
        }
        for (auto& v : row) {
          st.values.push_back(v.is_null() ? std::nullopt : std::optional<std::string>(v.str));
        }
      } else if (st.phase == 2) {
        if (st.rows.is_open()) {
          auto c = st.rows.close();
          if (db::is_would_block(c)) return c;
        }
        st.phase = 3;
      } else {
        if (st.err) return *st.err;
        return {};
      }
    }
  });
  if (result.ok() && st.values.size() == noted.size()) {
    for (size_t i = 0; i < noted.size(); ++i) {
      if (st.values[i]) {
        (void)settings_.set(noted[i], *st.values[i]);
      } else {
        (void)settings_.reset(noted[i]);
      }
    }
    backend_->applied_settings = settings_.overrides();
    backend_->applied_session = id_;
    backend_->applied_version = settings_.version();
  } else {
    spdlog::warn("database {}: could not read back session settings: {}", pool_->config().name,
                 result.ok() ? "unexpected answer" : result.error().message);
  }
  noted.clear();
}

asio::awaitable<db::Status> Session::execute_text(std::string_view sql, db::Params params) {
  struct Exec {
    db::Rows rows;
    int phase = 0;
    std::optional<db::Error> err;
  } st;
  const db::QueryOptions text;
  co_return co_await run([&](Backend& b) -> db::Status {
    for (;;) {
      switch (st.phase) {
        case 0: {
          auto r = b.conn.query(sql, params, text);
          if (db::is_would_block(r)) return r.take_error();
          if (!r.ok()) {
            st.err = r.take_error();
            st.phase = 3;
            break;
          }
          st.rows = std::move(r.value());
          st.phase = 1;
          break;
        }
        case 1: {
          std::vector<db::ValueView> row(st.rows.columns().size());
          auto r = st.rows.next_borrowed(row);
          if (db::is_would_block(r)) return r.take_error();
          if (!r.ok()) {
            st.err = r.take_error();
            st.phase = 2;
          } else if (!r.value()) {
            st.phase = 4;
          }
          break;
        }
        case 4: {
          auto r = st.rows.next_result();
          if (db::is_would_block(r)) return r.take_error();
          if (!r.ok()) st.err = r.take_error();
          st.phase = (r.ok() && r.value()) ? 1 : 2;
          break;
        }
        case 2: {
          if (st.rows.is_open()) {
            auto c = st.rows.close();
            if (db::is_would_block(c)) return c;
          }
          st.phase = 3;
          break;
        }
        default:
          if (st.err) return *st.err;
          return {};
      }
    }
  });
}

}  // namespace wirepool::server
