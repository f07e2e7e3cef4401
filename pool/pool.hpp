#pragma once
// The pool: a pure state machine after the seed's e.db.pool and the sans-I/O
// designs (quinn-proto, h11). No I/O, no clock reads, no threads: events come in
// through handle_*(…, now), actions go out through poll_action(), and
// next_deadline() says when handle_timeout() must be called next. All
// transitions live in pool.cpp.
//
// Connection lifecycle:
//
//   Open ──handle_opened──> idle ──grant──> in use ──handle_release──> idle
//     └─handle_open_failed─> gone            │                 └─(reset)─> resetting ─handle_reset_done─> idle
//                                            └──(unhealthy / too old / not idle)──> Close ──handle_closed──> gone
//
// Invariants (tests/unit/pool/ checks them on long random event sequences):
//  - opening + idle + in use + resetting + closing never exceeds `max`;
//  - waiters are granted in FIFO order, and each is granted or rejected by its deadline;
//  - no connection is granted to two waiters at once;
//  - idle connections above `min` are closed after `idle_timeout`;
//  - a connection older than `max_lifetime` is closed on release instead of reused.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace wirepool::pool {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;
using ConnId = uint64_t;
using WaiterId = uint64_t;

struct Config {
  size_t min = 0;
  size_t max = 4;
  Duration acquire_timeout = std::chrono::seconds(5);
  Duration idle_timeout = std::chrono::minutes(10);  ///< zero = never
  Duration max_lifetime = std::chrono::hours(1);     ///< zero = unlimited
  /// Session-mode pools reset a released connection before it is reused.
  bool reset_on_release = false;
};

/// The backend transaction state at release (mirrors db::TxState without the dependency).
enum class TxState : uint8_t { idle, in_transaction, failed };

enum class RejectReason : uint8_t {
  timeout,      ///< acquire_timeout passed
  open_failed,  ///< the backend could not be reached and no connection was left to wait for
  shutdown,     ///< the pool is shutting down (or was removed from the configuration)
  paused,       ///< reserved for the admin console's PAUSE with a timeout
};
std::string_view to_string(RejectReason r);

enum class CloseReason : uint8_t {
  unhealthy,      ///< released as broken
  not_idle,       ///< released inside a transaction: no one else may inherit it
  max_lifetime,   ///< older than max_lifetime at release
  idle_timeout,   ///< idle too long above min
  reset_failed,   ///< the reset after a session failed
  shutdown,       ///< the pool is shutting down
  reconnect,      ///< reconfigured / RECONNECT: replaced on next release
};
std::string_view to_string(CloseReason r);

/// Actions the pool asks its owner to carry out.
struct Open { ConnId conn; };                        ///< open a backend connection, then handle_opened / handle_open_failed
struct Grant { WaiterId waiter; ConnId conn; };      ///< hand `conn` to `waiter`
struct Reject { WaiterId waiter; RejectReason reason; };
struct Close { ConnId conn; CloseReason reason; };   ///< close it, then handle_closed
struct Reset { ConnId conn; };                       ///< reset it, then handle_reset_done
using Action = std::variant<Open, Grant, Reject, Close, Reset>;

/// Counters and gauges for SHOW POOLS and /metrics.
struct Stats {
  size_t opening = 0, idle = 0, in_use = 0, resetting = 0, closing = 0;
  size_t waiting = 0;
  uint64_t granted_total = 0, rejected_timeout_total = 0, rejected_other_total = 0;
  uint64_t opened_total = 0, open_failed_total = 0, closed_total = 0;
  Duration longest_wait{};  ///< of the waiters now waiting
};

class Pool {
 public:
  explicit Pool(Config config);

  /// A client wants a connection. Answered later by Grant or Reject
  /// (possibly immediately: poll_action() right after).
  void handle_acquire(WaiterId waiter, TimePoint now);
  /// The waiter went away before it was granted (its client disconnected).
  void handle_cancel(WaiterId waiter, TimePoint now);
  /// A granted connection comes back. `healthy` false closes it; a connection
  /// not idle in its transaction is closed too.
  void handle_release(ConnId conn, bool healthy, TxState tx, TimePoint now);
  void handle_opened(ConnId conn, TimePoint now);
  void handle_open_failed(ConnId conn, TimePoint now);
  void handle_reset_done(ConnId conn, bool ok, TimePoint now);
  void handle_closed(ConnId conn, TimePoint now);
  /// Expire waiters and idle connections due at `now`.
  void handle_timeout(TimePoint now);
  /// New limits and timeouts; takes effect without dropping connections in use.
  void reconfigure(Config config, TimePoint now);
  /// Mark every connection to be replaced: idle ones close now, busy ones on release.
  void reconnect(TimePoint now);
  /// Reject all waiters, close idle connections, close the rest on release.
  void shutdown(TimePoint now);

  /// The next action to carry out, or nullopt.
  std::optional<Action> poll_action();
  /// When handle_timeout must next be called, or nullopt if nothing is pending.
  std::optional<TimePoint> next_deadline() const;

  Stats stats(TimePoint now) const;
  const Config& config() const { return config_; }
  bool is_shut_down() const { return shutting_down_; }

 private:
  enum class State : uint8_t { opening, idle, in_use, resetting, closing };
  struct Conn {
    State state;
    TimePoint opened_at;  ///< when handle_opened arrived (creation time while opening)
    TimePoint idle_since;
    bool replace = false;  ///< close instead of reuse at next release
  };
  struct Waiter {
    WaiterId id;
    TimePoint deadline;
    TimePoint since;
  };

  size_t counted() const;  // connections that count against max
  void open_one(TimePoint now);
  void make_idle(ConnId id, Conn& c, TimePoint now);
  void close_conn(ConnId id, Conn& c, CloseReason reason);
  void dispatch(TimePoint now);  // match idle connections with waiters, open as needed
  void maintain_min(TimePoint now);

  Config config_;
  std::unordered_map<ConnId, Conn> conns_;
  std::deque<ConnId> idle_;  // most recently used at the back (LIFO reuse keeps few warm)
  std::deque<Waiter> waiters_;
  std::deque<Action> actions_;
  ConnId next_conn_ = 1;
  bool shutting_down_ = false;
  Stats totals_;
};

}  // namespace wirepool::pool
