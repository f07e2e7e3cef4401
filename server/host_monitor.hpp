#pragma once
// The I/O side of a database with several hosts (docs/high-availability.md):
// it feeds the pure pool::HostSet with probe answers (run on the blocking
// executor, never on a client's path), logs its events, and tells the pools
// where to open read-write connections.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/db.hpp"
#include "config/config.hpp"
#include "pool/hosts.hpp"
#include "server/blocking.hpp"

namespace wirepool::server {

class HostMonitor : public std::enable_shared_from_this<HostMonitor> {
 public:
  /// `open`: the entry's options; each probe and each session open adds one host to them.
  HostMonitor(std::string database, std::vector<db::HostPort> hosts, config::HealthCheck hc,
              const db::Driver& driver, db::OpenOptions open, BlockingExecutor& blocking,
              boost::asio::io_context& timers);

  /// Starts probing (every host at once). stop(): no probe starts afterwards.
  void start();
  void stop();

  /// Where a read-write connection opens: the entry's options for the
  /// primary (with target_session_attrs=read-write), waiting up to
  /// health_check.failover_timeout for one to be known. Blocks: executor only.
  /// nullopt with `error` set when none is known by then.
  struct Target {
    size_t host;
    db::OpenOptions open;
  };
  std::optional<Target> primary_target(std::string* error);
  /// A session open to `host` failed: it is banned and re-probed (pool::HostSet).
  void open_failed(size_t host);

  /// Runs on the timer's context when the primary changes or is lost (the
  /// server closes the database's idle connections: they point at the old one).
  void on_change(std::function<void()> f);

  /// One host for SHOW SERVERS and /metrics.
  struct HostInfo {
    std::string host;
    int port;
    pool::HostRole role;
    uint32_t timeline;
    uint32_t failures;
    std::chrono::milliseconds ban;  ///< the current ban (banned, diverged)
  };
  std::vector<HostInfo> snapshot() const;
  const std::string& database() const { return database_; }
  const std::vector<db::HostPort>& hosts() const { return hosts_; }

 private:
  /// Points the timer at the next due probe (under mu_, so the posts keep its order).
  void arm(std::unique_lock<std::mutex>& lock);
  void on_timer();
  void run_probe(size_t host);
  /// Logs and acts on what the host set reports (under mu_; callbacks after).
  bool drain_events(std::unique_lock<std::mutex>& lock);
  db::OpenOptions options_for(size_t host) const;

  std::string database_;
  std::vector<db::HostPort> hosts_;
  config::HealthCheck hc_;
  const db::Driver& driver_;
  db::OpenOptions open_;
  BlockingExecutor& blocking_;
  boost::asio::io_context& timers_;
  boost::asio::steady_timer timer_;

  mutable std::mutex mu_;
  std::condition_variable primary_known_;
  pool::HostSet set_;
  bool stopped_ = false;
  std::function<void()> on_change_;
};
using HostMonitorPtr = std::shared_ptr<HostMonitor>;

/// The hosts of a database entry: its `hosts:` list, else the several hosts of
/// its connection (libpq's multi-host form); empty for one host.
std::vector<db::HostPort> hosts_of(const config::Database& d, const db::Driver& driver,
                                   const db::OpenOptions& open);

}  // namespace wirepool::server
