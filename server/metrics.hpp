#pragma once
// Counters behind GET /metrics (docs/operations.md lists every metric).
//
// Everything on the data path is a relaxed atomic increment: no lock, no
// allocation. Gauges that the pools already know (backend connections by
// state, waiters, rejections) are not counted twice: the scrape reads them
// from pool::Stats. The scrape sums and formats; it runs on the event loop of
// the HTTP connection that asked, and takes each pool's mutex briefly.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>

namespace wirepool::server {

/// A Prometheus histogram with fixed bucket bounds (seconds). observe() is one
/// relaxed increment and one add; the cumulative counts are made at scrape time.
class Histogram {
 public:
  /// Upper bounds in seconds, ascending: 100 µs to 30 s, enough for both an
  /// acquire wait (bounded by acquire_timeout) and a statement.
  static constexpr std::array<double, 14> kBounds = {
      0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30};
  void observe(std::chrono::nanoseconds d);
  /// Appends the `_bucket`, `_sum` and `_count` lines of `name` with `labels`
  /// (`key="value",...` without braces, may be empty).
  void render(std::string& out, std::string_view name, std::string_view labels) const;
  /// Observations so far, and their sum in microseconds.
  uint64_t count() const;
  uint64_t sum_us() const { return sum_ns_.load(std::memory_order_relaxed) / 1000; }

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets_{};  ///< last: +Inf only
  std::atomic<uint64_t> sum_ns_{0};
};

/// SHOW STATS' totals at one moment.
struct StatsTotals {
  uint64_t xact_count = 0, query_count = 0, received = 0, sent = 0;
  uint64_t xact_us = 0, query_us = 0, wait_us = 0, wait_count = 0;
};

/// SHOW STATS' averages are over the last complete period of this length, as PgBouncer's.
inline constexpr auto kStatsPeriod = std::chrono::seconds(15);

/// What one database entry's sessions count (owned by its DatabasePool).
struct DatabaseMetrics {
  std::atomic<uint64_t> statements{0};      ///< client statements (simple query or Execute)
  std::atomic<uint64_t> relayed{0};         ///< PostgreSQL batches sent through the relay
  std::atomic<uint64_t> pipelined{0};       ///< of them, sent behind another client's batch
  std::atomic<uint64_t> batches{0};         ///< pipelined executions run as one parameter array
  std::atomic<uint64_t> batched{0};         ///< the executions in those batches
  std::atomic<uint64_t> transactions{0};    ///< transactions that ended (autocommit statements too)
  std::atomic<uint64_t> transaction_us{0};  ///< their summed duration (first statement to end)
  std::atomic<uint64_t> bytes_in{0};        ///< from this database's logged-in clients
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<int64_t> clients{0};          ///< sessions open now (SHOW POOLS)
  std::atomic<int64_t> clients_waiting{0};  ///< of those, waiting for a backend
  Histogram acquire_wait;        ///< time a session waited for a backend (granted or not)
  Histogram statement_duration;  ///< statement_begin .. statement_end

  StatsTotals totals() const;
  /// Ends a stats period (every kStatsPeriod, from the server's timer).
  void roll_period();
  /// The totals at the start and at the end of the last complete period.
  std::pair<StatsTotals, StatsTotals> last_period() const;

 private:
  mutable std::mutex period_mu_;
  StatsTotals period_start_, period_end_;
};

/// The client protocols wirepool counts separately; `http` is the metrics listener.
enum class ProtocolIndex : uint8_t { postgres = 0, tds = 1, http = 2 };
inline constexpr size_t kProtocols = 3;
std::string_view protocol_label(size_t index);

/// Per client protocol.
struct ProtocolMetrics {
  std::atomic<int64_t> connected{0};  ///< client connections open now
  std::atomic<int64_t> waiting{0};    ///< of those, waiting for a backend connection
  std::atomic<int64_t> active{0};     ///< of those, holding a backend connection
  std::atomic<uint64_t> accepted{0};  ///< connections accepted since start
  std::atomic<uint64_t> bytes_in{0};  ///< bytes read from clients (after TLS: payload)
  std::atomic<uint64_t> bytes_out{0};
  std::atomic<uint64_t> tls_handshakes{0};  ///< TLS handshakes completed
  std::atomic<uint64_t> tls_failures{0};    ///< TLS handshakes that failed
};

/// Why an error reached a client, beyond its SQLSTATE.
enum class ErrorReason : uint8_t { auth_failed, pool_timeout, backend_lost, protocol_error };
inline constexpr size_t kErrorReasons = 4;
std::string_view to_string(ErrorReason r);

/// Why a connection was closed before it logged in (docs/security.md).
enum class RefusedReason : uint8_t {
  allow_list,           ///< its address is in none of the listener's networks
  pending,              ///< max_pending_logins connections were logging in
  pending_per_address,  ///< max_pending_logins_per_address from its address were
  displaced,            ///< it had not logged in after 1 s and a newer one took its slot
  descriptors,          ///< accept failed with EMFILE: closed through the spare descriptor
  throttled,            ///< its address and user failed too often: refused unchecked
  auth_lookup,          ///< its database's auth_query failed (error, timeout, connection down)
  waited,  ///< it waited login_timeout for a login slot, or a full waiting room turned it away
};
inline constexpr size_t kRefusedReasons = 8;
std::string_view to_string(RefusedReason r);

/// The process-wide counters (one per process, like Prometheus's default registry).
class Metrics {
 public:
  ProtocolMetrics& protocol(ProtocolIndex p) { return protocols_[static_cast<size_t>(p)]; }
  const ProtocolMetrics& protocol(size_t i) const { return protocols_[i]; }
  void error(ErrorReason r) {
    reasons_[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t errors(ErrorReason r) const { return reasons_[static_cast<size_t>(r)].load(); }
  void refused(RefusedReason r) {
    refused_[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t refused_count(RefusedReason r) const { return refused_[static_cast<size_t>(r)].load(); }
  /// An error sent to a client with this SQLSTATE (counted by its class, the
  /// first two characters; errors are rare enough for a mutex).
  void sqlstate(std::string_view sqlstate);
  std::map<std::string, uint64_t> sqlstate_classes() const;

  /// A configuration (or certificate) reload finished.
  void reload(bool ok) { (ok ? reloads_ok_ : reloads_failed_).fetch_add(1); }
  uint64_t reloads(bool ok) const { return (ok ? reloads_ok_ : reloads_failed_).load(); }
  /// SHA-256 (hex) of the configuration file now in force.
  void set_config_hash(std::string hash);
  std::string config_hash() const;

  std::chrono::system_clock::time_point started() const { return started_; }

 private:
  std::array<ProtocolMetrics, kProtocols> protocols_{};
  std::array<std::atomic<uint64_t>, kErrorReasons> reasons_{};
  std::array<std::atomic<uint64_t>, kRefusedReasons> refused_{};
  std::atomic<uint64_t> reloads_ok_{0}, reloads_failed_{0};
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> classes_;
  std::string config_hash_;
  const std::chrono::system_clock::time_point started_ = std::chrono::system_clock::now();
};

/// The process's metrics.
Metrics& metrics();

/// Appends `# HELP` and `# TYPE` lines.
void metric_header(std::string& out, std::string_view name, std::string_view type,
                   std::string_view help);
/// A label value escaped for the text format (backslash, double quote, newline).
std::string label_value(std::string_view v);
/// Process figures from /proc/self: resident memory in bytes, open descriptors.
uint64_t process_rss_bytes();
uint64_t process_open_fds();
/// SHA-256 of a file's bytes as hex (empty if unreadable).
std::string file_sha256(const std::string& path);

}  // namespace wirepool::server
