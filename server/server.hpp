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
#include "server/auth.hpp"
#include "server/backend_pool.hpp"
#include "server/blocking.hpp"
#include "tls/tls.hpp"

namespace wirepool::server {

namespace asio = boost::asio;
using TimePoint = std::chrono::steady_clock::time_point;
/// A client socket bound to its loop's io_context executor (8 bytes) rather
/// than any_io_executor (about 40): it is there once per client.
using ClientSocket = asio::basic_stream_socket<asio::ip::tcp, asio::io_context::executor_type>;

/// A client connection as the event loop sees it: swept for deadlines
/// (timeouts are checked by one periodic sweep per loop instead of a timer per
/// client, so an idle client costs no timer) and told when the server drains.
class Client : public boost::intrusive::list_base_hook<
                   boost::intrusive::link_mode<boost::intrusive::auto_unlink>> {
 public:
  virtual ~Client() = default;
  /// Expire whatever deadline passed. Runs on the client's own loop thread.
  virtual void sweep(TimePoint now) = 0;
  /// The server is shutting down: finish the current transaction, then leave.
  virtual void drain() = 0;
  /// The drain's grace period is over: close now.
  virtual void terminate() = 0;
};

/// One event-loop thread.
struct Loop {
  asio::io_context io{1};
  boost::intrusive::list<Client, boost::intrusive::constant_time_size<false>> clients;
  asio::steady_timer sweep_timer{io};
  std::thread thread;
};

/// Something a CancelRequest can reach (any thread).
class CancelTarget {
 public:
  virtual ~CancelTarget() = default;
  virtual void cancel_request() = 0;
};

/// BackendKeyData keys -> the client they cancel.
class CancelRegistry {
 public:
  /// Registers `target` under a fresh random (pid, secret) pair.
  std::pair<int32_t, int32_t> add(std::weak_ptr<CancelTarget> target);
  void remove(int32_t pid);
  /// Cancels the target if the secret matches; true if it did.
  bool cancel(int32_t pid, int32_t secret);

 private:
  struct Entry {
    int32_t secret;
    std::weak_ptr<CancelTarget> target;
  };
  std::mutex mu_;
  std::unordered_map<int32_t, Entry> entries_;
};

class Server {
 public:
  /// Builds pools and user verifiers; throws std::runtime_error on failure.
  explicit Server(config::Config cfg);
  ~Server();

  /// Binds the listeners (throws with "cannot listen on ADDR:PORT: reason"),
  /// runs until drained after SIGTERM/SIGINT. Returns the process exit code.
  int run();

  const config::Config& config() const { return cfg_; }
  const UserStore& users() const { return users_; }
  DatabasePoolPtr find_pool(std::string_view name) const;
  BlockingExecutor& blocking() { return blocking_; }
  CancelRegistry& cancels() { return cancels_; }
  /// The PostgreSQL listeners' TLS context (the current one: SIGHUP may swap
  /// it), or nullptr without a certificate.
  tls::ServerContextPtr pg_tls() const { return pg_tls_ ? pg_tls_->current() : nullptr; }
  /// The TDS listeners' TLS context (ALPN tds/8.0), or nullptr without a certificate.
  tls::ServerContextPtr tds_tls() const { return tds_tls_ ? tds_tls_->current() : nullptr; }
  bool draining() const { return draining_.load(std::memory_order_relaxed); }
  /// Counts clients; false (and nothing counted) beyond max_clients.
  bool admit_client();
  void client_gone();
  /// A login failed (wrong password, unknown user, refused certificate).
  void login_failed() { failed_logins_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t failed_logins() const { return failed_logins_.load(); }
  int64_t client_count() const { return clients_.load(); }
  /// The ports actually bound, in listener order (port 0 resolves here).
  std::vector<uint16_t> bound_ports() const;

 private:
  void setup_tls();
  void reload_tls();
  void start_listeners();
  void accept_loop(size_t listener_index);
  void start_sweep(Loop& loop);
  void on_signal(int signo);
  void begin_drain();
  void check_drained();
  void stop_all();

  // Declaration order is destruction order, reversed: loops (and the client
  // sessions in them) go first, then the pools they release into, then the
  // blocking executor whose queued jobs may hold pools, then the main context
  // that the pools' timers and the acceptors use.
  config::Config cfg_;
  UserStore users_;
  CancelRegistry cancels_;
  std::unique_ptr<tls::ServerContextHolder> pg_tls_;
  std::unique_ptr<tls::ServerContextHolder> tds_tls_;
  asio::io_context main_{1};
  BlockingExecutor blocking_;
  std::map<std::string, DatabasePoolPtr, std::less<>> pools_;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> acceptors_;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> clients_{0};
  std::atomic<uint64_t> failed_logins_{0};
  std::atomic<size_t> next_loop_{0};
  asio::steady_timer drain_timer_{main_};
  TimePoint drain_deadline_{};
  int pool_close_waits_ = 0;
  int signals_seen_ = 0;
  int exit_code_ = 0;
};

}  // namespace wirepool::server
