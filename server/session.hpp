#pragma once
// The session layer between protocols and drivers: one Session per client,
// whatever protocol it speaks. It holds the client's settings, its backend lease
// (acquired on demand and released by the pool mode's rule), its transaction,
// and runs driver calls on the bounded executor so that a cancel request or a
// statement timeout can interrupt them.
//
// Pool modes (DESIGN.md): session keeps the lease until the client leaves;
// transaction releases it whenever the backend is idle after a statement (or a
// Sync) and no portal is open; statement does the same and refuses explicit
// transactions.

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "backends/db.hpp"
#include "server/backend_pool.hpp"
#include "server/blocking.hpp"
#include "server/metrics.hpp"
#include "session/auth.hpp"
#include "session/settings.hpp"
#include "session/statement.hpp"

namespace wirepool::server {

class Session : public db::EventSink {
 public:
  Session(DatabasePoolPtr pool, const UserRecord& user, BlockingExecutor& blocking,
          config::Duration query_timeout);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// The pool of the lease held or being taken: the read-write database's, or
  /// the read-only one's for a routed read-only transaction.
  DatabasePool& pool() { return *pool_; }
  const DatabasePoolPtr& pool_ptr() const { return pool_ == primary_.get() ? primary_ : reads_; }
  const UserRecord& user() const { return user_; }
  Settings& settings() { return settings_; }
  config::PoolMode mode() const { return pool_->config().pool.mode; }
  /// Where this client's protocol counts sessions waiting for and holding a
  /// backend (/metrics). Set once, right after construction.
  void set_client_metrics(ProtocolMetrics* m) { client_metrics_ = m; }
  /// Waiting for a backend now (SHOW CLIENTS' state).
  bool waiting() const { return waiting_ || queued_; }
  /// Since when it waits (meaningful while waiting()).
  std::chrono::steady_clock::time_point wait_started() const {
    return work_ ? work_->wait_started : std::chrono::steady_clock::time_point();
  }
  /// When the last statement began (SHOW CLIENTS' request_time).
  std::chrono::system_clock::time_point request_time() const { return request_time_; }

  // ---- the backend lease

  /// read_only.route_transactions: read-only transactions lease from `reads`
  /// (the read-only database's pool of this user), everything else from the
  /// session's own pool.
  void set_read_pool(DatabasePoolPtr reads) { reads_ = std::move(reads); }
  bool routes_reads() const { return reads_ != nullptr; }
  /// The next lease (the client's next transaction) is a read-only one;
  /// `statement`: for an autocommit batch of reads (read_only.route_statements).
  void lease_read_only(bool on, bool statement = false) {
    read_only_next_ = on;
    statement_next_ = on && statement;
  }
  /// Which of read_only.route_transactions and route_statements are on.
  void set_routes(bool transactions, bool statements) {
    route_transactions_ = transactions;
    route_statements_ = statements;
  }
  bool routes_transactions() const { return route_transactions_ && reads_ != nullptr; }
  bool routes_statements() const { return route_statements_ && reads_ != nullptr; }
  /// The backend held was leased from the read-only pool for a routed
  /// autocommit batch (lease_read_only(true, true)).
  bool routed_statement() const { return routed_statement_ && backend_ != nullptr; }
  /// The standby refused the routed batch as a write: its backend goes back
  /// (any transaction on it rolled back) and the next lease is the primary's.
  boost::asio::awaitable<void> leave_standby();
  /// default_transaction_read_only is on: every transaction leases from `reads`.
  bool default_read_only() const;
  /// default_transaction_isolation is serializable, which a hot standby
  /// refuses: nothing is routed to `reads`.
  bool default_serializable() const;
  /// read_only.route_transactions: the next batch, which takes the lease, is
  /// `begin` alone (session/statement.hpp begins_movable); empty: it is not.
  void note_movable_begin(std::string_view begin);
  /// The lease held is the primary's, in the transaction of note_movable_begin's
  /// BEGIN and nothing after it: a SET TRANSACTION READ ONLY sent now may move
  /// it to a standby (move_to_reads). Asked before the batch's statement_begin.
  bool transaction_movable() const;
  /// Moves the transaction_movable() transaction to a backend of `reads`: the
  /// primary's empty transaction is rolled back and its backend given back,
  /// then the client's BEGIN runs on the new backend. When `reads` grants none
  /// (no standby within the lag bound, fallback refuse) the transaction stays
  /// where it is. A cancel (the client's, statement_timeout) ends the wait for
  /// `reads`: the transaction stays on the primary, failed there by the
  /// server's own cancel, whose 57014 is returned. An error: the client's
  /// statement is answered with it and not sent.
  boost::asio::awaitable<std::optional<db::Error>> move_to_reads();

  /// Acquires a backend if the session holds none. On failure, an error for the
  /// client (53300 pool timeout; a failed open's own SQLSTATE, else 08006;
  /// 57P01 shutdown).
  /// A PostgreSQL backend then gets the client's settings (see sync_settings).
  /// `pipelined`: as DatabasePool::acquire_async's.
  boost::asio::awaitable<std::optional<db::Error>> ensure_backend(bool pipelined = false);
  /// ensure_backend()'s fast path, with no coroutine: true when the session
  /// holds a backend ready for the client (an idle one granted at once, its
  /// settings already the client's). False: call ensure_backend(), which
  /// waits, or brings the backend it took here to the client's settings.
  bool try_backend_now();
  /// ensure_backend()'s wait for a caller that is not a coroutine, when
  /// try_backend_now() left the session without a backend and can_wait_now():
  /// `done` runs on `executor` with what the pool granted, for take_granted().
  bool can_wait_now() const;
  /// `pipelined`: the relay's pipeline may take the client out of the wait.
  void wait_backend(boost::asio::any_io_executor executor, DatabasePool::AcquireHandler done,
                    bool pipelined = false);
  /// The relay's pipeline takes this client out of wait_backend()'s wait, to
  /// send its batch behind another's: true when its pool waiter was still
  /// waiting (now gone, the client queued() since its wait began) and no
  /// cancel came meanwhile.
  bool leave_wait_for_train();
  /// `ready`: the session holds the backend, in the client's settings;
  /// `later`: ensure_backend() finishes the job (a dead backend to replace,
  /// settings to bring in line); `error`: `err` is for the client.
  enum class Granted : uint8_t { ready, later, error };
  /// `probe`: a backend idle for a while is checked first (dead: given back,
  /// `later`).
  Granted take_granted(std::variant<Backend*, AcquireError> got, db::Error& err, bool probe = true);
  /// True (and the backend marked as this session's) when it already holds
  /// the client's settings; sync_settings() otherwise.
  bool settings_in_sync();
  /// The backend (held by another session) already holds this client's
  /// settings: nothing would be sent before its statements.
  bool settings_match(const Backend& b) const;
  /// The relay's pipeline: the lease moves to `next` as it is (idle, in
  /// `next`'s settings), without the pool, and `next`'s statement runs on it.
  void hand_over(Session& next);
  /// The client's batch was sent behind another's on a backend it does not
  /// hold yet (the relay's pipeline): its wait starts now.
  void queued() {
    queued_ = true;
    work().wait_started = std::chrono::steady_clock::now();
  }
  /// The relay waits for the server's answer: a cancel that came while the
  /// client queued for its turn (hand_over) is sent now, once.
  void relay_interrupt_if_cancelled();
  /// Its queue's backend was lost before its turn.
  void unqueued() { queued_ = false; }
  /// PostgreSQL backends: make the backend's session settings the client's
  /// (SET / RESET of what differs from what was last applied to it), so
  /// settings follow a client to whichever backend serves its next transaction.
  boost::asio::awaitable<db::Status> sync_settings();
  /// PostgreSQL backends: the client ran SET or RESET for `names`; read what the
  /// backend now holds once its transaction is over (a rolled-back SET is undone).
  /// The transaction's own settings (transaction_read_only, ...) are not kept.
  void note_set(std::vector<std::string> names);
  /// Settings were noted and not yet read back.
  bool settings_noted() const { return work_ && !work_->noted.empty(); }
  /// Re-reads the noted settings if the backend is idle. Call after statements.
  boost::asio::awaitable<void> settle_settings();
  /// The client's statement left session state on the backend that the
  /// session cannot follow (sql::SessionEffects::opaque): outside session
  /// mode the backend is reset before another client gets it.
  void mark_dirty() {
    if (backend_ && mode() != config::PoolMode::session) backend_->dirty = true;
  }
  /// Runs SQL text and discards its results (replays, resets, a cursor
  /// declared with the client's parameters). The session must hold a backend.
  boost::asio::awaitable<db::Status> execute_text(std::string_view sql, db::Params params = {});

  // ---- what the backend reports besides results (db::EventSink)

  void on_notice(const db::Notice& n) override;
  void on_parameter(const db::ParameterChange& c) override;
  void on_notification(const db::Notification& n) override;
  struct Events {
    std::vector<db::Notice> notices;
    std::vector<db::ParameterChange> parameters;
    std::vector<db::Notification> notifications;
  };
  /// Reported since the last call (nullptr when nothing was).
  std::unique_ptr<Events> take_events() { return work_ ? std::move(work_->events) : nullptr; }
  Backend* backend() const { return backend_; }
  /// Releases the lease if the pool mode allows it now (`portals_open`: a reader
  /// is still open on the backend, so it must be kept).
  void release_if_idle(bool portals_open);
  /// The client is leaving: roll back an open transaction, then release.
  boost::asio::awaitable<void> finish();
  /// A driver call answered Errc::connection: the backend is gone. Drops the
  /// lease (the pool closes it) and the transaction with it.
  void backend_lost();
  /// Gives the backend back as unusable (its state is unknown: a client left
  /// in the middle of its answer). The pool closes it.
  void drop_backend() { give_back(false); }

  // ---- running driver calls

  /// Runs `f(Backend&)` on the bounded executor with cancel registration. The
  /// session must hold a backend.
  ///
  /// GCC 12 destroys a lambda's captures twice when the lambda is a temporary
  /// in a co_await expression (a double free). Callers therefore pass lambdas
  /// that capture by reference only (trivially destructible), and wrappers
  /// like this one keep their own lambdas in named locals.
  ///
  /// Non-blocking drivers run `f` right here on the event loop: when it answers
  /// would_block (is_would_block(result), found by ADL), the session waits for
  /// the backend socket and calls `f` again, so `f` must resume where it
  /// stopped (it keeps its progress in state outside itself).
  template <class F>
  boost::asio::awaitable<std::invoke_result_t<F&, Backend&>> run(F f) {
    Backend* b = backend_;
    set_running(*b, true);
    if (cancel_reason_ != CancelReason::none) interrupt(*b);
    if (b->caps.blocking) {
      auto job = [b, fn = std::move(f)]() mutable { return fn(*b); };
      auto result = co_await blocking_.run(std::move(job));
      set_running(*b, false);
      co_return result;
    }
    for (;;) {
      auto result = f(*b);
      if (!is_would_block(result)) {
        set_running(*b, false);
        co_return result;
      }
      co_await wait_backend_io(*b);
    }
  }

  /// The PostgreSQL relay writes to and reads from the backend's socket
  /// itself: marks the backend as running this session's statement (so that a
  /// cancel reaches it) or no longer.
  void relay_running(bool running);

  /// Brackets one client statement: sets the statement deadline (statement_timeout
  /// setting, else server.query_timeout) and clears a stale cancel.
  void statement_begin();
  /// Brackets a prepare outside a statement (a Parse, a Describe): the same
  /// deadline, so a driver that runs the statement there (the SQLite
  /// drivers' expression-column probe) is cancelled by it; not counted as a
  /// statement. Inside a statement both do nothing.
  void prepare_begin();
  void prepare_end();
  void statement_end();
  /// Interrupts the running statement. On the session's own event loop (a
  /// CancelRequest from another connection is posted there first).
  void cancel(CancelReason why);
  /// Why the current statement was cancelled, if it was.
  CancelReason cancel_reason() const;
  /// Called by the sweeper on the session's thread.
  std::optional<std::chrono::steady_clock::time_point> statement_deadline() const {
    return work_ ? work_->deadline.get() : std::nullopt;
  }
  /// Between statement_begin and statement_end.
  bool statement_running() const { return work_ && work_->statement_started.has_value(); }
  /// Rewrites a 57014 error with PostgreSQL's message for the cancel's reason.
  void explain_cancel(db::Error& e) const;

  // ---- transactions

  /// An implicit transaction: opened on the backend by the session layer for
  /// statements that must commit or fail together although the client began
  /// no transaction block (the messages up to a Sync, several statements in
  /// one simple query, a batch). At most one; it ends with end_implicit(), or
  /// with the client's own COMMIT/ROLLBACK, or when the client leaves (rolled
  /// back by finish()).
  boost::asio::awaitable<db::Status> begin_implicit();
  /// Commits it, or rolls it back when `failed` or the backend's transaction
  /// failed. Nothing when none is open.
  boost::asio::awaitable<db::Status> end_implicit(bool failed);
  /// True while the open transaction is an implicit one.
  bool implicit() const { return implicit_ && in_transaction(); }
  /// An implicit transaction was begun and not ended, whatever a backend that
  /// failed under it now reports.
  bool implicit_begun() const { return implicit_; }
  /// The client's BEGIN inside an implicit transaction turns it into its own.
  void make_explicit() { implicit_ = false; }

  db::TxState tx_state() const;
  bool in_transaction() const { return tx_state() != db::TxState::idle; }
  /// BEGIN: acquires a backend and starts a transaction on it.
  boost::asio::awaitable<db::Status> begin(std::string_view native_sql);
  boost::asio::awaitable<db::Status> commit();
  boost::asio::awaitable<db::Status> rollback();
  /// The transaction handle, when one is open.
  db::Transaction* transaction() { return tx_.is_open() ? &tx_ : nullptr; }
  /// After any driver call: drop the handle if the backend ended the transaction itself.
  void sync_tx_state();

  // ---- prepared statements on the leased backend

  /// The backend's prepared statement for `key` (SQL text and parameter types),
  /// preparing it on demand. Runs on the executor. The session must hold a backend.
  boost::asio::awaitable<db::Result<db::Statement*>> backend_statement(
      const std::string& key, const std::string& sql, const std::vector<db::ParamInfo>& hints);

 private:
  /// A time point or none, in one word: std::optional would take two, and a
  /// Session lives as long as its client, idle or not.
  class OptionalTime {
   public:
    using T = std::chrono::steady_clock::time_point;
    bool has_value() const { return t_ != T::min(); }
    explicit operator bool() const { return has_value(); }
    T operator*() const { return t_; }
    OptionalTime& operator=(T t) {
      t_ = t;
      return *this;
    }
    void reset() { t_ = T::min(); }
    std::optional<T> get() const { return has_value() ? std::optional<T>(t_) : std::nullopt; }

   private:
    T t_ = T::min();
  };

  DatabasePool* pool_;       ///< the lease's pool (primary_'s or reads_')
  DatabasePoolPtr primary_;  ///< the client's database's pool
  DatabasePoolPtr reads_;    ///< set_read_pool's, or none
  const UserRecord& user_;
  BlockingExecutor& blocking_;
  config::Duration query_timeout_;
  Settings settings_;
  Backend* backend_ = nullptr;
  db::Transaction tx_;

  void set_running(Backend& b, bool running);
  /// Sets the deadline from statement_timeout (else query_timeout), from `now`.
  void arm_deadline(std::chrono::steady_clock::time_point now);
  /// Interrupts `b`'s running call if it is still this session's (the check and
  /// the interrupt happen under the backend's lock, off the event loop when the
  /// driver's cancel blocks), so a late cancel never reaches another client.
  void interrupt(Backend& b);
  boost::asio::awaitable<void> wait_backend_io(Backend& b);
  boost::asio::awaitable<void> wait_fd(Backend& b, int fd, bool write);

  void give_back(bool healthy);
  /// Before a lease: pool_ becomes the pool the next transaction reads from.
  void choose_pool();
  /// The client's error for a failed acquire (53300; the open's SQLSTATE or
  /// 08006; 57P01).
  db::Error acquire_error(const AcquireError& e);
  /// A backend the pool gave: probed (`probe`), adopted, its settings checked.
  Granted settle(Backend* b, std::chrono::steady_clock::duration waited, bool probe);
  /// The waiting gauges and wait_started, for a wait that take_granted ends.
  void wait_begin();
  /// Makes `b` the session's backend (`waited`: for the acquire_wait histogram).
  void adopt(Backend* b, std::chrono::steady_clock::duration waited);
  Events& events();

  /// What a session needs once it runs statements or waits for a backend:
  /// made at the first, so that a client that has only logged in holds none.
  struct Work {
    std::unique_ptr<Events> events;
    std::vector<std::string> noted;  ///< settings SET/RESET since they were last read
    OptionalTime deadline;
    config::Duration statement_timeout{0};
    pool::WaiterId waiter = 0;  ///< wait_backend()'s, while waiting_
    std::chrono::steady_clock::time_point wait_started{};
    /// When the transaction in progress began (its first statement).
    OptionalTime xact_started;
    /// When the statement in progress began (statement_begin), for its duration.
    OptionalTime statement_started;
    /// statement_timeout parsed once per settings change, not per statement.
    uint32_t timeout_version = UINT32_MAX;
    /// statement_begin calls: which batch of the lease ran last.
    uint64_t batches = 0;
    /// note_movable_begin's: the BEGIN that moves with its transaction, and
    /// the batch it ran as (0: none).
    std::string movable_begin;
    uint64_t movable_at = 0;
  };
  Work& work() {
    if (!work_) work_ = std::make_unique<Work>();
    return *work_;
  }

  const uint64_t id_;  ///< unique per session: identifies its calls on a backend
  std::unique_ptr<Work> work_;
  ProtocolMetrics* client_metrics_ = nullptr;
  std::chrono::system_clock::time_point request_time_{};
  // The small members together, so that they share one padded word: a
  // Session lives as long as its client, idle or not.
  CancelReason cancel_reason_ = CancelReason::none;
  bool implicit_ = false;     ///< the open transaction is an implicit one (begin_implicit)
  bool interrupted_ = false;  ///< interrupt() was done for the current statement
  bool waiting_ = false;
  bool queued_ = false;  ///< its batch waits behind another's on a busy backend (queued())
  /// A cancel came while its statement waited in the pool's queue: it applies
  /// to that statement once it runs (statement_begin keeps it).
  bool cancelled_waiting_ = false;
  bool settings_pending_ = false;    ///< try_backend_now took a backend sync_settings must finish
  bool read_only_next_ = false;      ///< lease_read_only's, until a lease is taken
  bool statement_next_ = false;      ///< lease_read_only's `statement`, likewise
  bool routed_statement_ = false;    ///< the lease held is a routed statement's
  bool route_transactions_ = false;  ///< set_routes'
  bool route_statements_ = false;    ///< set_routes'
};

}  // namespace wirepool::server
