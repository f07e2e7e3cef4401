#pragma once
// The server: event-loop threads (one io_context each), listeners, the pools of
// the configured databases, the bounded executor for blocking drivers, cancel
// keys, signals and the drain on shutdown.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/intrusive/list.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "config/config.hpp"
#include "server/auth_lookup.hpp"
#include "server/backend_pool.hpp"
#include "server/blocking.hpp"
#include "server/idle_park.hpp"
#include "server/log_limiter.hpp"
#include "server/memory_trim.hpp"
#include "server/metrics.hpp"
#include "session/admission.hpp"
#include "session/auth.hpp"
#include "session/login_throttle.hpp"
#include "tls/tls.hpp"

namespace wirepool::server {

namespace asio = boost::asio;
using TimePoint = std::chrono::steady_clock::time_point;
/// A client socket bound to its loop's io_context executor (8 bytes) rather
/// than any_io_executor (about 40): it is there once per client.
using ClientSocket = asio::basic_stream_socket<asio::ip::tcp, asio::io_context::executor_type>;

/// A logged-in client as SHOW CLIENTS reports it.
struct ClientInfo {
  std::string_view protocol;  ///< "postgres" or "tds"
  std::string user, database, application_name;
  std::string address;  ///< the peer's address, without the port
  uint16_t port = 0;
  std::string local_address;
  uint16_t local_port = 0;
  std::string state;  ///< active (holds a backend), waiting (for one), idle
  std::chrono::system_clock::time_point connect_time{}, request_time{};
  std::chrono::steady_clock::duration wait{};  ///< how long it has been waiting, when waiting
  int32_t key = 0;       ///< its BackendKeyData process id (PostgreSQL clients)
  uint64_t id = 0;       ///< unique per process, in order of connection (SHOW CLIENTS' ptr)
  uint64_t backend = 0;  ///< the backend connection it holds, 0 = none (link)
  std::string tls;       ///< "TLSv1.3/cipher", empty without TLS
};

/// A client connection as the event loop sees it: swept for deadlines
/// (timeouts are checked by one periodic sweep per loop instead of a timer per
/// client, so an idle client costs no timer) and told when the server drains.
/// Something a CancelRequest can reach (any thread).
class CancelTarget {
 public:
  virtual ~CancelTarget() = default;
  virtual void cancel_request() = 0;
};

/// A client connection as its loop sees it. A CancelTarget itself, so that a
/// client has one vtable pointer, not two (it is kept per idle client).
class Client : public CancelTarget,
               public boost::intrusive::list_base_hook<
                   boost::intrusive::link_mode<boost::intrusive::auto_unlink>> {
 public:
  ~Client() override = default;
  /// A CancelRequest for it (protocols without one ignore it).
  void cancel_request() override {}
  /// Expire whatever deadline passed. Runs on the client's own loop thread.
  virtual void sweep(TimePoint now) = 0;
  /// The server is shutting down: finish the current transaction, then leave.
  virtual void drain() = 0;
  /// The drain's grace period is over: close now.
  virtual void terminate() = 0;
  /// Fills `out` for SHOW CLIENTS; false while the client is not logged in.
  /// Runs on the client's own loop thread.
  virtual bool describe(ClientInfo& out) const = 0;
  /// The database it uses ("" before login), for KILL. On its loop thread.
  virtual std::string_view database() const = 0;
};

class RelayPath;

/// One event-loop thread.
struct Loop {
  asio::io_context io{1};
  boost::intrusive::list<Client, boost::intrusive::constant_time_size<false>> clients;
  asio::steady_timer sweep_timer{io};
  /// Where its long-idle clients wait (server/idle_park.hpp), made at first use.
  std::unique_ptr<IdlePark> park;
  std::thread thread;
  /// The PostgreSQL relay's state on this loop (server/pg_relay.hpp), made at first use.
  std::shared_ptr<RelayPath> relay;
};

/// BackendKeyData keys -> the client they cancel: an open-addressed table
/// (linear probing) of 16 B entries, a third of a hash node and bucket per
/// idle client (bench/results/idle_memory.md). Not pool::IdMap: its 64-bit
/// key and used flag would double the slot.
class CancelRegistry {
 public:
  CancelRegistry();
  /// With a peer id (1..255, server.peer_id), every key's process id carries it
  /// in bits 23..30 (the rest random), so that a peer can tell whose it is.
  void set_peer_id(int id) { peer_id_ = id; }
  /// The peer id a key's process id carries (0 when this process has none).
  int peer_of(int32_t pid) const { return peer_id_ ? (pid >> kPeerShift) & 0xff : 0; }
  static constexpr int kPeerShift = 23;
  /// Registers `target` under a fresh random (pid, secret) pair. The target
  /// must remove() the pid before it is destroyed (cancel() reaches it until then).
  std::pair<int32_t, int32_t> add(CancelTarget& target);
  void remove(int32_t pid);
  /// Cancels the target if the secret matches; true if it did.
  bool cancel(int32_t pid, int32_t secret);
  /// Keys held, and the table's slots (tests).
  size_t size() const;
  size_t capacity() const;

 private:
  struct Entry {
    int32_t pid = 0;  ///< 0: a free slot (no key has pid 0)
    int32_t secret = 0;
    CancelTarget* target = nullptr;
  };
  static constexpr size_t kMinSlots = 16;
  size_t home(int32_t pid) const;
  /// The slot holding `pid`, else the free slot ending its probe sequence.
  size_t find(int32_t pid) const;
  void rehash(size_t slots);
  mutable std::mutex mu_;
  std::vector<Entry> slots_;  ///< a power of two, at most 3/4 used
  size_t used_ = 0;
  int shift_ = 0;  ///< 32 - log2(slots_.size()): home()'s multiplicative hash
  int peer_id_ = 0;
};

class Server {
 public:
  /// Builds pools and user verifiers; throws std::runtime_error on failure.
  /// `validator`: the driver checks a reloaded file must pass (as at start).
  explicit Server(config::Config cfg, config::DatabaseValidator validator = nullptr);
  ~Server();

  /// Binds the listeners (throws with "cannot listen on ADDR:PORT: reason"),
  /// runs until drained after SIGTERM/SIGINT. Returns the process exit code.
  int run();

  /// The configuration the process started with: `server`, listeners and
  /// `tls` stay as they are until a restart (reload does not change them).
  const config::Config& config() const { return cfg_; }
  /// The configuration in force now (users and databases change on reload).
  std::shared_ptr<const config::Config> current_config() const;
  /// The users in force now. A client keeps the snapshot it logged in with
  /// (its UserRecord lives there) for as long as it stays.
  std::shared_ptr<const UserStore> users() const;
  /// Whether the configuration in force has a database of this name.
  bool has_database(std::string_view name) const;
  /// The database's lookup of users from the backend (auth_user), or null.
  AuthLookupPtr auth_lookup(std::string_view database) const;
  /// The pool of `database` for `user`, made (and started) at its first use:
  /// a backend connection serves the clients of one user only. nullptr for a
  /// database the configuration does not have.
  DatabasePoolPtr pool_for(std::string_view database, std::string_view user);
  /// The pool of `database` for `user` if one exists, never made here.
  DatabasePoolPtr find_pool(std::string_view database, std::string_view user) const;
  /// auth.mode passthrough: a backend login to `database` as `user` with
  /// `password`, closed at once, without a pool (a refused name leaves none).
  /// nullopt = accepted; 08006 when the database went meanwhile.
  boost::asio::awaitable<std::optional<db::Error>> verify_login(std::string_view database,
                                                                const std::string& user,
                                                                const std::string& password);
  /// Every pool of one database, one per user that used it (any thread).
  std::vector<DatabasePoolPtr> pools_of(std::string_view database) const;
  /// Every pool of every database (any thread).
  std::vector<DatabasePoolPtr> pools() const;
  /// The host monitors of the databases with several hosts (SHOW HOSTS, /metrics).
  std::vector<HostMonitorPtr> host_monitors() const;
  /// The first database whose last attempt to open a backend failed (readiness).
  bool unreachable_database(std::string* name, std::string* error) const;
  bool database_reachable(std::string_view database) const;
  /// Backend connections open or opening for the database, all its users' pools.
  size_t database_connections(std::string_view database) const;
  /// PAUSE / RESUME of one database ("": every database), its pools now and later.
  void set_paused(std::string_view database, bool paused);
  bool database_paused(std::string_view database) const;
  /// True once every listener is bound and until the drain closes them.
  bool listening() const { return listening_.load(std::memory_order_relaxed); }
  BlockingExecutor& blocking() { return blocking_; }
  CancelRegistry& cancels() { return cancels_; }
  /// The peer that issued cancel key `pid`, when it is another configured
  /// peer's (its CancelRequest is forwarded there), else nullptr.
  const config::Peer* cancel_peer(int32_t pid) const;
  /// The PostgreSQL listeners' TLS context (the current one: SIGHUP may swap
  /// it), or nullptr without a certificate.
  tls::ServerContextPtr pg_tls() const { return pg_tls_ ? pg_tls_->current() : nullptr; }
  /// The TDS listeners' TLS context (ALPN tds/8.0), or nullptr without a certificate.
  tls::ServerContextPtr tds_tls() const { return tds_tls_ ? tds_tls_->current() : nullptr; }
  bool draining() const { return draining_.load(std::memory_order_relaxed); }
  /// Connections counted from accept: pending ones, logged-in ones, the admin reserve.
  Admission& admission() { return admission_; }
  /// Failed logins per source address and per user.
  LoginThrottle& throttle() { return throttle_; }
  /// Where password hashes are derived (TDS LOGIN7): a few threads of their
  /// own at a lower priority, so a login storm neither blocks an event loop
  /// nor takes the drivers' threads.
  BlockingExecutor& hashing() { return hashing_; }
  /// A login failed (wrong password, unknown user, refused certificate).
  void login_failed() {
    failed_logins_.fetch_add(1, std::memory_order_relaxed);
    metrics().error(ErrorReason::auth_failed);
  }
  uint64_t failed_logins() const { return failed_logins_.load(); }
  int64_t client_count() const { return admission_.clients(); }
  int64_t pending_logins() const { return admission_.pending(); }
  /// Connections in the login waiting room.
  int64_t waiting_logins() const { return admission_.waiting(); }
  /// Descriptors the process may open (RLIMIT_NOFILE after raising the soft
  /// limit to the hard one at start).
  uint64_t descriptor_limit() const { return fd_limit_; }
  /// The ports actually bound, in listener order (port 0 resolves here).
  std::vector<uint16_t> bound_ports() const;

  // ---- for the admin console (any thread)

  /// The event loops (their client lists are theirs: visit them on their thread).
  std::vector<Loop*> loops() const;
  /// Closes every client of `database` at once (KILL), on their own loops.
  void kill_clients(std::string database);
  /// RELOAD: what SIGHUP does, on the main context.
  void request_reload();
  /// SHUTDOWN: what SIGTERM does, on the main context.
  void request_shutdown();

 private:
  void setup_tls();
  void reload_tls();
  void start_listeners();
  void accept_loop(size_t listener_index);
  /// Hands an accepted connection to its loop, or refuses it (allow-list,
  /// pending limits) with a log line and, for PostgreSQL, an error message.
  void admit(size_t listener_index, Loop& loop, std::shared_ptr<ClientSocket> sock);
  /// accept failed for lack of descriptors: the spare descriptor is given up
  /// to accept one waiting connection and close it, so that it is told at
  /// once instead of waiting in the backlog (true when one was).
  bool shed_one(size_t listener_index);
  /// Starts a connection that holds its ticket on `loop` (the listener's protocol).
  void start_client(size_t listener_index, Loop& loop, std::shared_ptr<ClientSocket> sock,
                    Admission::TicketPtr ticket);
  /// The waiting room's moves (Admission::turns): connections whose turn came
  /// are started, those past login_timeout closed. Main context; re-arms
  /// waiting_timer_ while any wait (displacement and deadlines need time).
  void serve_waiting();
  /// Closes a waiting connection's socket with a log line; PostgreSQL is told
  /// first: 57P01 while draining, else 53300 (saying so when displaced).
  void close_waiting(uint64_t token, std::string_view why);
  void start_sweep(Loop& loop);
  void on_signal(int signo);
  /// SIGHUP and RELOAD. On the main context.
  void reload();
  /// Every kStatsPeriod: ends the SHOW STATS period of every pool.
  void start_stats_timer();
  /// Every second: malloc_trim once connections have dropped well below their
  /// peak (TrimPolicy), so RSS follows the clients down.
  void start_trim_timer();
  /// systemd's STATUS= line while serving.
  std::string ready_status() const;
  void begin_drain();
  void check_drained();
  /// Logs what the drain still waits for: the clients each loop still has
  /// (and how many are counted without being on any), the backends in use.
  void log_drain_wait(int64_t counted);
  void stop_all();

  // Declaration order is destruction order, reversed: loops (and the client
  // sessions in them) go first, then the pools they release into, then the
  // blocking executor whose queued jobs may hold pools, then the main context
  // that the pools' timers and the acceptors use.
  /// Applies a configuration that loaded cleanly: pools resized in place,
  /// added ones started, removed or changed ones retired. On the main context.
  void apply(config::Config next);
  /// Retired pools whose last session ended are shut down and forgotten.
  void sweep_retired();
  /// Pools of users that have no session left and no backend connection are
  /// forgotten (a later login makes a new one). Main context.
  void sweep_unused_pools();
  /// Opens and closes one backend connection, on the blocking executor, for
  /// each database no pool has tried yet or whose last try failed and that has
  /// no pool retrying it: readiness knows each backend before any login.
  void probe_databases();
  /// A database entry in force and the pools of the users that use it.
  struct DatabaseEntry {
    config::Database cfg;
    const db::Driver* driver = nullptr;
    db::OpenOptions open;  ///< what its pools' connections open with (secrets read once)
    DatabaseSharedPtr shared;
    std::map<std::string, DatabasePoolPtr, std::less<>> pools;  ///< by user
    /// What the pools dropped as unused had learned of the backend's login
    /// parameters, by user, for the next pool of that user (at most
    /// kMaxRememberedStartups users; a reload of the entry forgets them).
    std::map<std::string, StartupParameters, std::less<>> startups;
    AuthLookupPtr auth;  ///< users from the backend (auth_user), else null
  };
  /// Throws std::runtime_error for an unknown driver or an unreadable secret.
  DatabaseEntry make_entry(const config::Database& d);
  DatabasePoolPtr make_pool(const DatabaseEntry& e, std::string user);
  static constexpr size_t kMaxRememberedStartups = 1024;
  /// Throws std::runtime_error for an unreadable auth_password_env / _file.
  AuthLookupPtr make_auth_lookup(const DatabaseEntry& e, const config::Database& d);
  /// The host monitor of an entry with several hosts (started), else nullptr.
  HostMonitorPtr make_monitor(const DatabaseEntry& e);

  config::Config cfg_;
  config::DatabaseValidator validator_;
  mutable std::mutex state_mu_;  ///< guards current_, users_ and databases_ (reload swaps them)
  std::shared_ptr<const config::Config> current_;
  std::shared_ptr<const UserStore> users_;
  AuthSecret auth_secret_{};  ///< state_dir/auth.secret: fake verifiers' salts
  CancelRegistry cancels_;
  std::unique_ptr<tls::ServerContextHolder> pg_tls_;
  std::unique_ptr<tls::ServerContextHolder> tds_tls_;
  asio::io_context main_{1};
  BlockingExecutor blocking_;
  std::map<std::string, DatabaseEntry, std::less<>> databases_;
  // Before the loops: their clients hold tickets and await hashes.
  uint64_t fd_limit_ = 0;
  Admission admission_;
  LoginThrottle throttle_;
  BlockingExecutor hashing_;
  /// Pools removed (or replaced) by a reload, draining: still serving the
  /// sessions that use them, closed when the last one ends. Main context only.
  std::vector<DatabasePoolPtr> retired_;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> acceptors_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> listening_{false};
  /// A descriptor (/dev/null) kept open to be given up when accept fails
  /// with EMFILE (shed_one); -1 while given up.
  int spare_fd_ = -1;
  LogLimiter refused_log_, emfile_log_;
  std::atomic<uint64_t> failed_logins_{0};
  std::atomic<size_t> next_loop_{0};
  asio::steady_timer drain_timer_{main_};
  asio::steady_timer stats_timer_{main_};
  asio::steady_timer trim_timer_{main_};
  TrimPolicy trim_policy_;
  asio::steady_timer retire_timer_{main_};
  asio::steady_timer waiting_timer_{main_};
  bool waiting_armed_ = false;
  std::atomic<bool> waiting_posted_{false};  ///< a serve_waiting() is queued on main_
  bool retire_armed_ = false;
  TimePoint drain_deadline_{};
  int pool_close_waits_ = 0;
  int drain_ticks_ = 0;  ///< check_drained calls while clients remain
  int signals_seen_ = 0;
  int exit_code_ = 0;
};

}  // namespace wirepool::server
