#pragma once
// The I/O side of a database with several hosts (docs/high-availability.md):
// it feeds the pure pool::HostSet with probe answers (run on the blocking
// executor, never on a client's path), logs its events, and tells the pools
// where to open connections: on the primary, or, for a read-only database
// (config::Database::reads_of), on a standby within max_replica_lag.

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
  /// `open`: the entry's options; each probe and each session open adds one
  /// host to them. `reads`: the monitor of a read-only database (its pools
  /// open on standbys); hosts from `replicas_from` on are replicas only.
  HostMonitor(std::string database, std::vector<db::HostPort> hosts, config::HealthCheck hc,
              const db::Driver& driver, db::OpenOptions open, BlockingExecutor& blocking,
              boost::asio::io_context& timers, std::optional<config::ReadOnly> reads = std::nullopt,
              size_t replicas_from = SIZE_MAX);

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
    /// Counts the connection on its host (least_connections) until released:
    /// the backend connection keeps it for its life.
    std::shared_ptr<void> lease;
  };
  std::optional<Target> primary_target(std::string* error);
  /// Where a read-only connection opens: a standby within max_replica_lag
  /// chosen by read_only.balance, once every host has answered a probe (up to
  /// failover_timeout); none: the primary (fallback: primary) or nullopt with
  /// `error` (fallback: refuse). Blocks: executor only.
  std::optional<Target> reader_target(std::string* error);
  /// primary_target or reader_target, by what this monitor's database is.
  std::optional<Target> target(std::string* error);
  /// A session open to `host` failed: it is banned and re-probed (pool::HostSet).
  void open_failed(size_t host);
  bool for_reads() const { return reads_.has_value(); }

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
    std::chrono::milliseconds ban;                 ///< the current ban (banned, diverged)
    std::optional<std::chrono::milliseconds> lag;  ///< a standby's replay lag, if known
    std::optional<uint64_t> lag_bytes;             ///< WAL not replayed yet, if known
    bool reads;                                    ///< takes reads (read-only database)
    uint32_t connections;                          ///< this database's, open on the host
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
  /// Counts a connection on `host` (under mu_) and answers its lease.
  Target make_target(size_t host, std::unique_lock<std::mutex>& lock);

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
  std::condition_variable readers_known_;  ///< a host became readable or every host answered
  std::optional<config::ReadOnly> reads_;
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
