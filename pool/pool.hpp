#pragma once
// The pool: a pure state machine after the seed's e.db.pool and the sans-I/O
// designs (quinn-proto, h11). No I/O, no clock reads, no threads: events come in
// through handle_*(…, now), actions go out through poll_action(), and
// next_deadline() says when handle_timeout() must be called next. All
// transitions live in pool.cpp.
//
// clang-format off
// Connection lifecycle:
//
//   Open ──handle_opened──> idle ──grant──> in use ──handle_release──> idle
//     └─handle_open_failed─> gone            │                 └─(reset)─> resetting ─handle_reset_done─> idle
//                                            └──(unhealthy / too old / not idle)──> Close ──handle_closed──> gone
//
// Invariants (tests/unit/pool/ checks them on long random event sequences):
//  - opening + idle + in use + resetting + closing never exceeds `max` (after `max` is
//    lowered by reconfigure() the surplus drains, and nothing opens until it is gone);
//  - waiters are granted in FIFO order, and each is granted or rejected by its deadline;
//  - no connection is granted to two waiters at once;
//  - idle connections above `min` are closed after `idle_timeout`;
//  - a connection older than `max_lifetime` is closed on release instead of reused;
//  - after a failed open the pool backs off: no Open until `retry_at` (the wait
//    doubles from backoff_first to backoff_max with each failed round, and is
//    forgotten after a success), then one Open at a time until one succeeds;
//    meanwhile a waiter that nothing live could serve is rejected (open_failed)
//    at once instead of starting an attempt of its own;
//  - with `pipeline_max`, waiters whose work can queue behind another client's on a
//    busy connection (pipelined) open connections only up to `pipeline_max`, unless
//    the queue has made no progress for kPipelinePatience (then one at a time); other
//    waiters open up to `max` as ever.
// clang-format on

#include <array>
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
  /// Pipelined waiters (handle_acquire's `pipelined`) open connections only while
  /// fewer than this many are counted; the rest of their wait is for a connection
  /// given back or for a train (handle_cancel). 0: no such limit (up to `max`).
  size_t pipeline_max = 0;
  /// After a failed open, the wait before the next attempt: backoff_first, then
  /// doubled after each failed attempt up to backoff_max.
  Duration backoff_first = std::chrono::milliseconds(100);
  Duration backoff_max = std::chrono::seconds(5);
};

/// A queue of pipelined waiters that has seen no grant and no cancel for this
/// long opens one connection past `pipeline_max` (the connections are held by
/// work that takes no batch behind it: transactions, long statements).
inline constexpr Duration kPipelinePatience = std::chrono::milliseconds(50);
/// A connection above `pipeline_max` given back while only pipelined waiters
/// wait (and no other waiter came for this long) is closed, not reused.
inline constexpr Duration kPipelineSurplusQuiet = std::chrono::seconds(1);

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
  unhealthy,     ///< released as broken
  not_idle,      ///< released inside a transaction: no one else may inherit it
  max_lifetime,  ///< older than max_lifetime at release
  idle_timeout,  ///< idle too long above min
  reset_failed,  ///< the reset after a session failed
  shutdown,      ///< the pool is shutting down
  reconnect,     ///< reconfigured / RECONNECT: replaced on next release
  surplus,       ///< above pipeline_max, given back while only pipelined waiters wait
  yielded,       ///< idle, given up for another pool of the database (max_db_connections)
};
std::string_view to_string(CloseReason r);

/// Actions the pool asks its owner to carry out.
// clang-format off
struct Open { ConnId conn; };                        ///< open a backend connection, then handle_opened / handle_open_failed
struct Grant { WaiterId waiter; ConnId conn; };      ///< hand `conn` to `waiter`
struct Reject { WaiterId waiter; RejectReason reason; };
struct Close { ConnId conn; CloseReason reason; };   ///< close it, then handle_closed
struct Reset { ConnId conn; };                       ///< reset it, then handle_reset_done
// clang-format on
using Action = std::variant<Open, Grant, Reject, Close, Reset>;

/// Counters and gauges for SHOW POOLS and /metrics.
struct Stats {
  size_t opening = 0, idle = 0, in_use = 0, resetting = 0, closing = 0;
  size_t waiting = 0;
  uint64_t granted_total = 0, rejected_timeout_total = 0, rejected_other_total = 0;
  uint64_t opened_total = 0, open_failed_total = 0, closed_total = 0;
  /// Open actions past pipeline_max because the pipelined waiters' queue made
  /// no progress for kPipelinePatience.
  uint64_t patience_opens_total = 0;
  Duration longest_wait{};  ///< of the waiters now waiting
};

class Pool {
 public:
  /// Queues an Open for each of the `min` connections (clamped to `max`): poll
  /// them right after construction. `now` is not needed until the first event.
  explicit Pool(Config config);

  /// A client wants a connection. Answered later by Grant or Reject
  /// (possibly immediately: poll_action() right after). Its deadline is
  /// `now + acquire_timeout` (kept across reconfigure). Waiter ids must be
  /// unique among the waiters. After shutdown() it is rejected at once.
  /// `pipelined`: the waiter's work may also be taken by a busy connection's
  /// train (its owner then cancels the wait), see Config::pipeline_max.
  void handle_acquire(WaiterId waiter, TimePoint now, bool pipelined = false);
  /// A client wants a connection and one is idle now, with nobody waiting
  /// before it: the connection is granted here (counted as a grant, no Grant
  /// action). nullopt when a handle_acquire would have to wait (or after
  /// shutdown()): the caller then goes the handle_acquire way. Retired idle
  /// connections met on the way are closed, and `min` is topped up as after
  /// any event (Close and Open actions: poll them).
  std::optional<ConnId> try_acquire(TimePoint now);
  /// The waiter went away before it was granted (its client disconnected): it is
  /// dropped without a Reject. A no-op when the waiter is unknown or already
  /// granted (a queued Grant still stands: release that connection).
  void handle_cancel(WaiterId waiter, TimePoint now);
  /// A granted connection comes back. `healthy` false closes it; a connection
  /// not idle in its transaction is closed too; so is one older than
  /// max_lifetime, one marked by reconnect(), one above a lowered `max`, and
  /// every one after shutdown(). Otherwise it is reset (reset_on_release, or
  /// `reset`: its session left state behind that must go) or idle.
  void handle_release(ConnId conn, bool healthy, TxState tx, TimePoint now, bool reset = false);
  /// An Open succeeded; the connection's age (max_lifetime) counts from `now`.
  void handle_opened(ConnId conn, TimePoint now);
  /// An Open failed. When nothing else is opening, in use or resetting, all
  /// waiters are rejected with open_failed; never answered by another Open in
  /// the same call. The pool backs off (Config::backoff_first/backoff_max): a
  /// failure after the back-off of the one before doubles the wait, failures
  /// of attempts started before it (several opened at once) do not.
  void handle_open_failed(ConnId conn, TimePoint now);
  /// A Reset finished; `ok` false closes the connection (reset_failed).
  void handle_reset_done(ConnId conn, bool ok, TimePoint now);
  /// A Close finished, or an idle connection was found dead: either way it is gone.
  void handle_closed(ConnId conn, TimePoint now);
  /// Expire waiters (timeout) and idle connections (idle_timeout above `min`,
  /// max_lifetime at any count) due at `now`.
  void handle_timeout(TimePoint now);
  /// New limits and timeouts; takes effect without dropping connections in use.
  /// A lowered `max` closes surplus idle connections now and busy ones on release.
  void reconfigure(Config config, TimePoint now);
  /// Mark every connection to be replaced: idle ones close now, busy ones on
  /// release, opening ones once opened.
  void reconnect(TimePoint now);
  /// Another pool needs the place of a connection (a cap shared by several
  /// pools): the least recently used idle one closes, if more than `min` are
  /// live. False when none may close.
  bool yield_idle(TimePoint now);
  /// Reject all waiters, close idle connections, close the rest on release.
  /// Nothing is opened afterwards. Idempotent.
  void shutdown(TimePoint now);

  /// The next action to carry out, or nullopt.
  std::optional<Action> poll_action();
  /// Whether poll_action() has something.
  bool has_actions() const { return !actions_.empty(); }
  /// When handle_timeout must next be called, or nullopt if nothing is pending.
  std::optional<TimePoint> next_deadline() const;

  Stats stats(TimePoint now) const;
  const Config& config() const { return config_; }
  /// While backing off after a failed open: when the next attempt may start.
  std::optional<TimePoint> retry_at() const {
    return failing_ ? std::optional<TimePoint>(retry_at_) : std::nullopt;
  }
  bool is_shut_down() const { return shutting_down_; }

 private:
  enum class State : uint8_t { opening, idle, in_use, resetting, closing };
  static constexpr size_t kStateCount = 5;
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
    bool pipelined = false;
  };

  size_t count(State s) const { return counts_[static_cast<size_t>(s)]; }
  size_t live() const;     // opening + idle + in use + resetting: what serves clients
  size_t counted() const;  // live + closing: what counts against max
  size_t effective_min() const;
  Conn* find(ConnId id, State expected);
  std::optional<CloseReason> retire_reason(const Conn& c, TimePoint now) const;
  void set_state(ConnId id, Conn& c, State to);
  void forget(ConnId id, Conn& c);
  void open_one(TimePoint now);
  void make_idle(ConnId id, Conn& c, TimePoint now);
  void close_conn(ConnId id, Conn& c, CloseReason reason);
  void reject(WaiterId waiter, RejectReason reason);
  /// Every waiter leaves waiters_ through here (`progress`: granted or cancelled).
  std::deque<Waiter>::iterator drop_waiter(std::deque<Waiter>::iterator it, TimePoint now,
                                           bool progress);
  /// What pipeline_max says of an Open for the waiters now.
  enum class PipelineLimit : uint8_t {
    none,           ///< no limit applies (off, below it, or a waiter needs its own)
    held,           ///< only pipelined waiters wait and none needs a connection past it
    past_patience,  ///< held, but their queue is stuck: one opens past it
  };
  PipelineLimit pipeline_limit(TimePoint now) const;
  /// The pipelined waiters' queue has made no progress for kPipelinePatience.
  bool pipeline_stuck(TimePoint now) const;
  void dispatch(TimePoint now,
                bool may_open);  // match idle connections with waiters, open as needed
  /// Failing: no Open before retry_at_, then one at a time.
  bool may_open_now(TimePoint now) const;

  Config config_;
  std::unordered_map<ConnId, Conn> conns_;
  std::array<size_t, kStateCount> counts_{};
  std::deque<ConnId> idle_;  // most recently used at the back (LIFO reuse keeps few warm)
  std::deque<Waiter> waiters_;
  std::deque<Action> actions_;
  ConnId next_conn_ = 1;
  bool shutting_down_ = false;
  size_t pipelined_waiting_ = 0;    // of waiters_
  bool deadlines_in_order_ = true;  // waiters_' deadlines rise front to back (one acquire_timeout)
  TimePoint last_progress_{};       // a waiter granted or cancelled, or the queue began
  TimePoint last_unpipelined_{};    // a waiter that is not pipelined came
  bool unpipelined_seen_ = false;
  bool failing_ = false;      // the last open failed and none succeeded since
  Duration backoff_{};        // the current wait (while failing_)
  TimePoint retry_at_{};      // no Open before it (while failing_)
  bool retry_armed_ = false;  // next_deadline includes retry_at_ (until it passes)
  Stats totals_;              // only the *_total counters are kept here; gauges come from counts_
};

}  // namespace wirepool::pool
