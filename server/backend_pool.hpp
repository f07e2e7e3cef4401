#pragma once
// The I/O side of one database entry's pool: it feeds the pure pool::Pool with
// events (under a mutex, with the clock read here), carries out its actions
// (opening, resetting and closing backends on the blocking executor, granting
// waiters on their own executors) and keeps the backend connections with their
// prepared-statement caches.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "backends/db.hpp"
#include "config/config.hpp"
#include "pool/budget.hpp"
#include "pool/pool.hpp"
#include "server/blocking.hpp"
#include "server/host_monitor.hpp"
#include "server/log_limiter.hpp"
#include "server/metrics.hpp"
#include "server/relay_train.hpp"
#include "session/startup_parameters.hpp"

namespace wirepool::server {

/// Prepared statements of one backend connection, keyed by SQL text and parameter
/// types, least recently used evicted first.
class StatementCache {
 public:
  explicit StatementCache(size_t capacity = 256) : capacity_(capacity) {}
  /// The cached statement for `key`, or nullptr.
  db::Statement* find(const std::string& key);
  /// Stores a statement. What it pushes out (the least recently used above
  /// capacity) goes to `evicted` for the caller to close: closing may need the
  /// backend (a non-blocking one waits for it).
  db::Statement* insert(const std::string& key, db::Statement stmt,
                        std::vector<db::Statement>* evicted);
  /// Drops every entry without closing it: the backend no longer has them
  /// (DISCARD ALL) or is about to close.
  void forget();
  size_t size() const { return map_.size(); }

  // Statements the PostgreSQL relay prepared on the server itself (names
  // wpr_<64 random bits>_N, apart from the driver's): its protocol bytes never
  // pass through a db::Statement. forget() drops them too.
  /// The server's name for `key`, or nullptr.
  const std::string* relay_find(const std::string& key) const;
  /// Names a statement for `key` about to be prepared. Above capacity one
  /// other is dropped and its name goes to `evicted` (the caller closes it).
  std::string relay_name(const std::string& key, std::string* evicted);
  /// The server has it now (its ParseComplete came).
  void relay_add(const std::string& key, std::string name);
  /// Drops `key`'s entry; its server name (for the caller to close), or "".
  std::string relay_drop(const std::string& key);

 private:
  using Entry = std::pair<std::string, db::Statement>;
  size_t capacity_;
  std::list<Entry> lru_;  // front = most recent
  std::unordered_map<std::string, std::list<Entry>::iterator> map_;
  std::unordered_map<std::string, std::string> relay_;  // key -> server name
  uint64_t relay_seq_ = 0;
  std::string relay_prefix_;  ///< random per connection (db::random_statement_prefix)
};

/// One pooled backend connection.
struct Backend {
  pool::ConnId id = 0;
  db::Connection conn;
  StatementCache statements;
  db::Capabilities caps;

  /// Which session's call is running on it (0 = none), for cancels that
  /// arrive from elsewhere: checked and acted on under the mutex.
  std::mutex cancel_mu;
  uint64_t running_session = 0;
  /// A cancel is on its way to the running statement: no other client's batch
  /// may be pipelined behind it until the statement's answer is in.
  bool cancelling = false;
  /// The relay sends a batch again (prepared afresh after DDL): nobody's batch
  /// may be sent behind it until it ends.
  bool relay_resending = false;

  /// Non-blocking drivers: the backend socket, watched on the event loop of the
  /// session that holds the backend (re-made when another loop leases it).
  /// A socket object, not a descriptor: its reads through the reactor skip
  /// the speculative read() after one that emptied the socket (the relay reads
  /// the backend right after writing to it, when nothing can be there yet).
  std::unique_ptr<boost::asio::generic::stream_protocol::socket> watcher;
  int watched_fd = -1;  ///< the driver's descriptor the watcher was made for

  /// `watcher`, made for the driver's descriptor `fd` on executor `ex` (again
  /// when the descriptor or the loop changed). The watcher owns a duplicate
  /// of `fd`, never `fd` itself: the driver closes its descriptor when it
  /// pleases (libpq on a lost connection, PQfinish), and the number is then
  /// free for the next accepted client. A watcher on the driver's number
  /// deregistered it from epoll afterwards by number (EPOLL_CTL_DEL), which
  /// took that client's registration instead: its reads were never woken
  /// (docs/architecture.md, "A reactor trap").
  boost::asio::generic::stream_protocol::socket& watch(int fd,
                                                       const boost::asio::any_io_executor& ex);

  /// PostgreSQL backends: the session settings applied to it beyond its own
  /// defaults, and by which session at which settings version (to skip work
  /// when the same client comes back unchanged).
  std::vector<std::pair<std::string, std::string>> applied_settings;
  uint64_t applied_session = 0;
  uint32_t applied_version = 0;
  bool settings_unknown = false;  ///< a replay failed half-way: RESET ALL next time
  /// A client left session state on it that wirepool cannot carry to its next
  /// backend nor undo statement by statement (sql::SessionEffects::opaque):
  /// reset with DISCARD ALL before another client gets it.
  bool dirty = false;
  /// For SHOW SERVERS: when it opened, and whether a session holds it (under the pool's mutex).
  std::chrono::system_clock::time_point opened_at{};
  bool leased = false;
  /// For SHOW SERVERS, read when it opened: the server's pid, the local end
  /// of its socket (empty / 0 when the driver has no socket), and the
  /// application_name the server reported.
  int64_t server_pid = 0;
  std::string local_addr;
  uint16_t local_port = 0;
  std::string application_name;
  /// Several hosts: the one it opened on (empty: the connection string's).
  std::string host;
  int port = 0;
  /// Several hosts: counts this connection on its host while it lives (HostMonitor::Target).
  std::shared_ptr<void> host_lease;

  /// Unique per grant of the pool (the relay's pipeline passes a lease on
  /// without one): the relay's train id.
  uint64_t lease = 0;
  /// The relay's pipeline while it has a train on this lease (set and read
  /// only on the event loop of the session that holds the backend).
  TrainOwner* train = nullptr;

  ~Backend();
};

/// Why an acquire failed, for the client's error message.
struct AcquireError {
  pool::RejectReason reason;
  std::string message;  ///< client-facing, e.g. the backend's open error
  /// open_failed: the failed open's SQLSTATE (the server's own, as 57P03 or
  /// 3D000, or 08001), empty for the other reasons.
  std::string sqlstate = {};
};

/// The pool's pipeline_max (pool::Config) for `d`: 0 (no limit) unless pipelining
/// applies (postgresql, transaction mode, `pipeline`); `pool.pipeline_max` as
/// written, or for 0 (auto) 2 x `cores` + 1 when every host of the connection
/// string is on this machine (a Unix socket, localhost, 127.0.0.0/8, ::1): the
/// server then runs on the cores wirepool and its clients use, and PostgreSQL's
/// rule of thumb for busy connections (twice the cores, plus one) holds; no
/// limit for a server elsewhere, whose cores wirepool does not know.
size_t pipeline_max(const config::Database& d, size_t cores);
/// The hosts a libpq connection string (key=value or URI) names, `host` or
/// `hostaddr` ("" where it names none: the default Unix socket).
std::vector<std::string> conninfo_hosts(std::string_view conninfo);
/// The CPUs this process may run on (its affinity mask: a container's cpuset).
size_t usable_cores();

/// What the pools of one database entry share, whichever user each serves.
struct DatabaseShared {
  /// PAUSE: the database's pools, present and future, grant nothing new.
  std::atomic<bool> paused{false};
  /// The outcome of the last attempt, by any of its pools or the readiness
  /// probe, to open a backend connection (readiness: /readyz).
  void note_open(bool ok, std::string error = {});
  /// Unknown (never tried) counts as reachable.
  bool reachable(std::string* error = nullptr) const;
  bool tried() const;
  std::atomic<bool> probing{false};
  /// A database with several hosts: which is the primary (nullptr: one host).
  /// Reload may replace it; the pools read it at each open.
  HostMonitorPtr monitor() const;
  void set_monitor(HostMonitorPtr m);

  /// max_db_connections: a pool's connection is counted before it opens;
  /// `open` runs now or once a place is free (never under a lock).
  void request_open(uint64_t pool, pool::ConnId conn, std::function<void()> open);
  /// A counted connection closed, or failed to open.
  void connection_gone();
  /// A pool going away: its requests still waiting are dropped.
  void withdraw(uint64_t pool);
  void resize_budget(size_t max);
  size_t connections_counted() const;
  size_t opens_waiting() const;
  /// Cheap (no lock): some pool waits for a place (its connections released
  /// to idle then close instead of staying: yield_idle).
  bool opens_wanted() const { return waiting_.load(std::memory_order_relaxed) > 0; }
  /// The pools of the database that can give up an idle connection when
  /// another waits for a place: `yield` closes one (false: none idle).
  void join(uint64_t pool, std::function<bool()> yield);
  void leave(uint64_t pool);

 private:
  void run_grants(std::unique_lock<std::mutex>& lock);
  std::atomic<size_t> waiting_{0};
  std::map<uint64_t, std::function<bool()>> members_;  ///< under budget_mu_

  mutable std::mutex mu_;
  HostMonitorPtr monitor_;  ///< under mu_
  bool tried_ = false;
  bool failed_ = false;
  std::string error_;
  mutable std::mutex budget_mu_;
  pool::Budget budget_;
  std::map<std::pair<uint64_t, pool::ConnId>, std::function<void()>> waiting_opens_;
};
using DatabaseSharedPtr = std::shared_ptr<DatabaseShared>;

/// Opens a backend connection: as `open` says, or with several hosts where
/// `monitor` says (the primary, waiting for one during a failover; a replica
/// for a read-only database), banning the host when the server fails the
/// open. Blocks: executor only. `on`: the host it opened on and `lease`
/// the count of connections on it (several hosts only).
db::Result<db::Connection> open_backend(const db::Driver& driver, const db::OpenOptions& open,
                                        const HostMonitorPtr& monitor, db::HostPort* on = nullptr,
                                        std::shared_ptr<void>* lease = nullptr);

/// auth.mode passthrough: logs in to the backend as `open.user` with
/// `open.password` (wiped afterwards) on the blocking executor and closes that
/// connection at once: the backend is the authority. Needs no pool, so a
/// name the backend refuses leaves nothing behind. nullopt = accepted.
boost::asio::awaitable<std::optional<db::Error>> verify_login(BlockingExecutor& blocking,
                                                              const db::Driver& driver,
                                                              db::OpenOptions open,
                                                              HostMonitorPtr monitor);

/// The pool of one database entry for one user: its backend connections serve
/// only that user's clients (as PgBouncer's pools per database and user).
class DatabasePool : public std::enable_shared_from_this<DatabasePool> {
 public:
  /// `timer_context`: where the pool's deadline timer runs.
  DatabasePool(const config::Database& cfg, std::string user, DatabaseSharedPtr shared,
               const db::Driver& driver, db::OpenOptions open, BlockingExecutor& blocking,
               boost::asio::io_context& timer_context);
  ~DatabasePool();

  const config::Database& config() const { return cfg_; }
  /// The wirepool user whose clients this pool serves.
  const std::string& user() const { return user_; }
  const db::Driver& driver() const { return driver_; }
  /// The lexer for this database's SQL: from the driver (and, for ODBC, the
  /// connection string's Driver name) until a connection reports its own.
  sql::Dialect dialect() const { return dialect_; }
  /// True when the driver keeps SET/SHOW itself (PostgreSQL): known once a
  /// connection opened; until then inferred from the driver name.
  bool backend_keeps_settings() const { return keeps_settings_; }
  bool multi_statement() const { return multi_statement_; }
  /// The backend speaks PostgreSQL's own types and formats (QueryOptions::native).
  bool pg_native() const { return keeps_settings_; }
  /// The driver runs Statement::execute_batch as parameter arrays (ODBC), and
  /// whether it reports each row's count (Capabilities).
  bool param_arrays() const { return param_arrays_; }
  bool batch_row_counts() const { return batch_row_counts_; }

  /// Waits for a backend (bounded by acquire_timeout). On success the caller owns
  /// the lease until release().
  /// `pipelined`: as acquire_async's.
  boost::asio::awaitable<std::variant<Backend*, AcquireError>> acquire(bool pipelined = false);
  /// acquire() for a caller that is not a coroutine: `handler` runs on
  /// `executor` (never inline) with the backend or the error, unless
  /// cancel_acquire() takes the waiter back first.
  using AcquireHandler =
      boost::asio::any_completion_handler<void(std::variant<Backend*, AcquireError>)>;
  /// `pipelined`: the waiter needs no connection of its own (pool::Config::
  /// pipeline_max): a train may take its batch, or it holds one only briefly
  /// (a login reading the server's parameters).
  pool::WaiterId acquire_async(boost::asio::any_io_executor executor, AcquireHandler handler,
                               bool pipelined = false);
  /// The waiter leaves the queue, its handler destroyed without a call: true
  /// when it was still waiting (false: its answer is on the way).
  bool cancel_acquire(pool::WaiterId id);
  /// An idle backend now, when one is idle and nobody waits (as acquire()
  /// would grant it at once, without its post to the executor and its
  /// coroutine frames: the transaction-mode hot path); nullptr otherwise.
  Backend* try_acquire();
  /// Returns a backend. `healthy` false (a Connection error) closes it.
  void release(Backend* backend, bool healthy);
  /// Opens `min` connections (if any). Call once after construction.
  void start();
  /// Rejects waiters and closes backends as they come back.
  void shutdown();

  pool::Stats stats() const;
  /// What this database's sessions count, for /metrics.
  DatabaseMetrics& metrics() { return metrics_; }

  /// PAUSE: sessions that need a backend wait (Session::ensure_backend) until
  /// resume(); sessions holding one keep it until they release it.
  /// The relay's pipeline is off until then (a slow batch was seen).
  std::chrono::steady_clock::time_point pipeline_paused_until() const {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(
        pipeline_paused_until_.load(std::memory_order_relaxed)));
  }
  void pause_pipeline(std::chrono::steady_clock::time_point until) {
    pipeline_paused_until_.store(until.time_since_epoch().count(), std::memory_order_relaxed);
  }
  /// PAUSE and RESUME apply to the whole database (DatabaseShared).
  void pause() { shared_->paused = true; }
  void resume() { shared_->paused = false; }
  bool paused() const { return shared_->paused.load(std::memory_order_relaxed); }
  /// RECONNECT: idle backend connections close now, busy ones when released.
  void reconnect();
  /// Reload: new sizes and timeouts, in place (connections in use are kept;
  /// a lowered max closes the surplus as it is released). The mode and the
  /// reset query are not changed here (a reload replaces such a pool).
  void reconfigure(const config::PoolSettings& settings);
  /// The sizes and timeouts in force (config().pool is the one it started with).
  config::PoolSettings settings() const;
  /// One backend connection as SHOW SERVERS reports it.
  struct ServerInfo {
    pool::ConnId id;
    bool leased;
    std::chrono::system_clock::time_point opened_at;
    int64_t server_pid;
    std::string local_addr;  ///< empty when unknown
    uint16_t local_port;
    std::string application_name;
    std::string host;  ///< several hosts: the one it opened on (empty otherwise)
    int port;
  };
  std::vector<ServerInfo> servers() const;
  bool is_shut_down() const;
  /// What a login reports for a client with these startup settings, when known
  /// without a backend (session/startup_parameters.hpp); learn_startup() records
  /// what a backend reported for them.
  std::optional<StartupParameters::List> startup_parameters(
      const StartupParameters::List& overrides) const;
  void learn_startup(const StartupParameters::List& overrides,
                     const StartupParameters::List& reported);
  /// What it has learned, for the pool made for the same user after this one
  /// is dropped (Server::sweep_unused_pools), so that a login on that cold
  /// pool needs no backend either; adopt_startup() gives it to the new pool.
  StartupParameters take_startup();
  void adopt_startup(StartupParameters learned);
  /// False when the last attempt to open a backend connection failed (true
  /// before any attempt): /readyz reports such a pool. `error` gets the reason.
  bool reachable(std::string* error = nullptr) const;

  // auth.mode passthrough: backends log in as user() with the password its
  // clients gave, held in memory only while the pool has clients.
  /// True when `password` is the one held (compared in constant time).
  bool credentials_match(std::string_view password) const;
  /// Holds `password` (replacing the one held) for the next backend logins
  /// until the returned hold and every other one are gone; the last one
  /// wipes it (OPENSSL_cleanse).
  std::shared_ptr<void> hold_credentials(const std::string& password);
  /// A hold gone (called by the hold itself).
  void release_credentials();

 private:
  using Handler = AcquireHandler;
  /// A waiting coroutine: its completion handler and the executor to resume it on.
  struct Waiter {
    Handler handler;
    boost::asio::any_io_executor executor;
    Waiter(Handler h, boost::asio::any_io_executor e)
        : handler(std::move(h)), executor(std::move(e)) {}
    Waiter(Waiter&&) noexcept = default;
    /// By swap: Boost 1.81's any_completion_handler move-assigns through its
    /// own converting constructor, which wraps the handler in itself without
    /// end (a stack overflow when a deque erase shifts waiters).
    Waiter& operator=(Waiter&& o) noexcept {
      handler.swap(o.handler);
      executor = std::move(o.executor);
      return *this;
    }
  };
  void pump(std::unique_lock<std::mutex>& lock);
  /// Opens connection `id` on the blocking executor (its place counted).
  void open_now(pool::ConnId id);
  /// For another pool of the database waiting for a place: closes an idle connection.
  bool yield_idle();
  uint64_t budget_id() const { return reinterpret_cast<uintptr_t>(this); }
  void arm_timer(std::unique_lock<std::mutex>& lock);
  void on_timer();

  config::Database cfg_;
  std::string user_;
  mutable std::mutex credentials_mu_;
  std::string password_;  ///< under credentials_mu_ (passthrough)
  size_t credential_holds_ = 0;
  DatabaseSharedPtr shared_;
  const db::Driver& driver_;
  db::OpenOptions open_;
  BlockingExecutor& blocking_;
  std::atomic<sql::Dialect> dialect_;
  std::atomic<bool> keeps_settings_{false};
  std::atomic<bool> multi_statement_{false};
  std::atomic<bool> param_arrays_{false};
  std::atomic<bool> batch_row_counts_{false};

  mutable std::mutex mu_;
  pool::Pool pool_;
  std::unordered_map<pool::ConnId, std::unique_ptr<Backend>> backends_;
  /// In arrival order (the pool answers the oldest first, so the one answered
  /// is nearly always at the front): no allocation per waiting acquire.
  std::deque<std::pair<pool::WaiterId, Waiter>> waiters_;
  std::deque<std::pair<pool::WaiterId, Waiter>>::iterator find_waiter(pool::WaiterId id);
  pool::WaiterId next_waiter_ = 1;
  std::string last_open_error_;
  std::string last_open_sqlstate_;  ///< under mu_
  /// "cannot open backend": one line per 10 s with a count while it fails.
  LogLimiter open_failure_log_;
  bool last_open_failed_ = false;  ///< under mu_
  std::atomic<std::chrono::steady_clock::rep> pipeline_paused_until_{0};
  config::PoolSettings settings_;  ///< under mu_
  StartupParameters startup_;      ///< under mu_
  DatabaseMetrics metrics_;
  boost::asio::steady_timer timer_;
  std::optional<pool::TimePoint> armed_for_;  ///< on the timer's thread only
  std::optional<pool::TimePoint> requested_;  ///< under mu_: asked of the timer, not yet fired
};

using DatabasePoolPtr = std::shared_ptr<DatabasePool>;

/// The dialect a driver's SQL is lexed in, by driver name.
sql::Dialect dialect_for_driver(std::string_view driver);
/// The same for a database entry: an ODBC entry's dialect follows the ODBC
/// driver its connection string names (PostgreSQL -> postgres, MariaDB/MySQL ->
/// mysql, SQLite -> sqlite, else ansi; a DSN name is ansi until a connection
/// opens and reports its DBMS).
sql::Dialect dialect_for_database(const config::Database& db);

}  // namespace wirepool::server
