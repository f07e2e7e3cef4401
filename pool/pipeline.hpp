#pragma once
// The relay's pipeline (docs/protocol-postgres.md, "Pipelining"): which
// client batch is sent behind which running batch on a backend connection
// ("a train"), when a train stops taking batches, who follows when a batch
// ends, when a slow client is read ahead, and when a cancel may go out. A pure
// state machine in the style of pool.hpp: ids in, decisions and actions out,
// time as an argument; no I/O, no clock reads, no threads. One per event loop
// (server/pg_relay.hpp's RelayPath carries its decisions out).
//
// Invariants (tests/unit/pool/pipeline_property_test.cpp checks them on long
// random event sequences):
//  - a train's followers all belong to the train's user pool;
//  - a train never holds more than max_followers followers, and never takes one
//    past its batch limit (max_train_batches, busy_train_batches while clients
//    wait in the pool's queue) since the pool's grant;
//  - a batch is in at most one train or the waiters' queue, and every follower
//    leaves its train exactly once: handed the lease (handle_turn_end) or failed
//    (a Fail action);
//  - a cancel may go out only while no follower is pipelined (may_cancel);
//  - waiters of a pool are taken by its trains in arrival order, and nobody joins
//    a train while a waiter of its pool queues (the pool's first come, first
//    served).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "pool/id_map.hpp"
#include "pool/pool.hpp"

namespace wirepool::pool {

/// One lease of a backend connection, from the pool's grant to the release
/// (the pipeline passes the lease along a train without a new grant).
using TrainId = uint64_t;
/// A client's batch (a client has at most one at a time in the pipeline).
using BatchId = uint64_t;
/// A user pool (pool.hpp's Pool): trains take only batches of their own.
using PoolKey = uint64_t;

/// The pipeline's tuning. Defaults are what wirepool runs with
/// (docs/performance-notes.md, "The relay's pipeline", has the measurements).
struct PipelineLimits {
  /// At most this many batches wait behind the running one.
  size_t max_followers = 3;
  /// A running batch older than this may be a long one: nobody joins it.
  Duration join_within = std::chrono::milliseconds(1);
  /// A train takes at most this many batches in all since the pool's grant,
  /// then the connection goes back to the pool (RECONNECT and a lowered max
  /// get their turn) ...
  uint32_t max_train_batches = 16;
  /// ... and at most this many while clients wait in the pool's queue, so that
  /// they do not wait long behind trains.
  uint32_t busy_train_batches = 4;
  /// A head that takes nothing of its answer for this long while followers
  /// (or clients in its pool's queue) wait has the rest read ahead into memory ...
  std::chrono::milliseconds head_patience{1000};
  /// ... up to this many bytes; past that it is disconnected.
  size_t max_read_ahead = 16 * 1024 * 1024;
  /// A batch whose turn took longer than this while at least slow_progress
  /// other batches of its pool began pauses pipelining in the pool for
  /// slow_pause (others' progress tells a long statement from a stalled machine).
  Duration slow_batch = std::chrono::seconds(1);
  uint64_t slow_progress = 64;
  Duration slow_pause = std::chrono::seconds(1);
  /// Statement shapes whose average turn (weight 1/16 per turn) is above this
  /// get no batch behind them; a shape enters on a turn above it while others
  /// progressed, and is forgotten below fast_again.
  std::chrono::microseconds slow_statement = std::chrono::milliseconds(20);
  std::chrono::microseconds fast_again = std::chrono::milliseconds(1);
  /// At most this many slow shapes are remembered (all are forgotten past it).
  size_t slow_shapes = 4096;
};

/// What the pipeline reads of a user pool at an event (shared across event
/// loops, so its owner reads it and passes it in).
struct PoolView {
  bool pipeline = true;          ///< the pool's `pipeline` setting
  TimePoint paused_until{};      ///< pipelining is off before this (a Pause)
  bool clients_waiting = false;  ///< clients wait in the pool's queue
};

/// Actions for the owner.
// clang-format off
struct Fail { BatchId batch; TrainId train; };        ///< a follower's answer never comes: tell its client
struct Pause { PoolKey pool; TimePoint until; Duration took; };  ///< no pipelining in `pool` before `until`
struct ShapeSlow { PoolKey pool; Duration took; };    ///< a statement shape has just become slow (for the log)
// clang-format on
using PipelineAction = std::variant<Fail, Pause, ShapeSlow>;

/// How the batch that just ended on a train left the connection.
struct TurnReport {
  /// It ended idle at a message boundary (ReadyForQuery 'I', nothing lost,
  /// no row half passed on): a follower may have the connection.
  bool clean = false;
  /// Only queries and DML (no transaction control): its turn says something
  /// of its statements' speed.
  bool plain = false;
  /// Its client got its whole answer (nothing lost, the client still there):
  /// its turn's length means something.
  bool answered = false;
  uint64_t shape = 0;  ///< its statements' shape (shape_add)
  TimePoint turn_started{};
  uint64_t progress = 0;  ///< batches of its pool begun during its turn
};

/// How a head's answer is written while others may wait behind it.
enum class HeadFlush : uint8_t {
  wait,           ///< as long as the client needs (read-ahead already, or no pipelining)
  with_patience,  ///< at most head_patience, then read ahead
  watch,          ///< nobody waits yet: head_patience at a time, then ask again
  disconnect,     ///< read-ahead full while followers wait
};

class Pipeline {
 public:
  explicit Pipeline(PipelineLimits limits = {});

  /// A shape's hash with `text` (statement text or cache key) added.
  static uint64_t shape_add(uint64_t shape, std::string_view text);

  /// A plain batch began on train `t`'s idle connection and was sent whole:
  /// the train opens (others may join) unless the connection is dirty, the
  /// shape is slow or the train had its batches. True when it is open now:
  /// the owner then pulls waiters (pull_order).
  bool handle_turn_began(TrainId t, PoolKey pool, uint64_t shape, bool dirty,
                         TimePoint turn_started);
  /// Trains that may take a newcomer's plain batch of `pool` at `now`, best
  /// first (fewest followers, then the order they opened); empty when
  /// pipelining is off or paused, or waiters of the pool queue (they go first).
  /// Written to `out` (cleared first), so that a caller may reuse its buffer.
  void join_order(PoolKey pool, const PoolView& view, TimePoint now,
                  std::vector<TrainId>& out) const;
  /// Waiters of `t`'s pool in arrival order, for a train that just opened or
  /// has room again: past the first `skip` of them (those the caller left in
  /// the queue), at most as many as the train has room for; empty while paused.
  /// Take them while has_room(t, view), then ask again past those left.
  void pull_order(TrainId t, const PoolView& view, TimePoint now, size_t skip,
                  std::vector<BatchId>& out) const;
  /// `t` is open and below its follower and batch caps (no time check: the
  /// train's batch has just begun).
  bool has_room(TrainId t, const PoolView& view) const;
  /// Batch `b` (its statements' `shape`) was sent behind train `t`'s running
  /// one; `sent_all` false: the socket was full and nobody may follow it.
  void handle_joined(TrainId t, BatchId b, uint64_t shape, bool sent_all);
  /// The running batch of `t` ended (`r`): the first follower gets the lease
  /// (returned) when it ended clean; otherwise followers fail (Fail actions).
  /// Notes the turn's speed when it was answered or a follower takes over
  /// (ShapeSlow, Pause actions); a follower of a slow shape closes the train.
  /// After a follower is returned, pull again if is_open(t).
  std::optional<BatchId> handle_turn_end(TrainId t, PoolKey pool, const TurnReport& r,
                                         const PoolView& view, TimePoint now);
  /// The lease ends (released to the pool, or the connection lost): followers
  /// fail. False when there were followers (the stream is then unusable).
  bool handle_released(TrainId t);
  /// A batch queues in its pool for a connection, and a train may take it.
  void handle_wait_begin(BatchId b, PoolKey pool);
  /// It was granted, taken by a train or gone. A no-op when not waiting.
  void handle_wait_end(BatchId b);

  /// A cancel names the connection, not the statement: it may be sent only
  /// while nobody's batch follows on it.
  bool may_cancel(TrainId t) const { return followers(t) == 0; }
  size_t followers(TrainId t) const;
  bool is_open(TrainId t) const;
  /// Whether `t` exists (a lease the pipeline saw and not released).
  bool knows(TrainId t) const { return trains_.contains(t); }
  /// The head of `t` writes its answer: how long it may take. Followers and
  /// clients in the pool's queue (`view`) alike wait for it, so both make
  /// it read ahead after the patience; one may queue while it writes (watch).
  HeadFlush head_flush(TrainId t, const PoolView& view, bool reading_ahead, size_t buffered) const;
  /// Statements of this shape run long in `pool`: no batch goes behind them.
  bool shape_slow(PoolKey pool, uint64_t shape) const;
  bool waiting(BatchId b) const;
  /// Some batch waits (pull_order may name one).
  bool has_waiters() const { return !waiters_.empty(); }

  std::optional<PipelineAction> poll_action();
  bool has_actions() const { return !actions_.empty(); }
  const PipelineLimits& limits() const { return limits_; }

 private:
  struct Follower {
    BatchId batch;
    uint64_t shape;
  };
  struct Train {
    PoolKey pool = 0;
    bool open = false;
    uint32_t batches = 0;             ///< batches handed the lease since the grant
    TimePoint since{};                ///< when the running batch began
    std::vector<Follower> followers;  ///< in order (a few: no deque's allocations per lease)
  };
  /// A released train's entry is reused with its followers' capacity.
  struct ResetTrain {
    void operator()(Train& tr) const {
      std::vector<Follower> keep = std::move(tr.followers);
      keep.clear();
      tr = Train{};
      tr.followers = std::move(keep);
    }
  };
  struct Waiter {
    BatchId batch;
    PoolKey pool;
  };

  uint32_t batch_limit(const PoolView& view) const;
  bool room(const Train& tr, const PoolView& view, std::optional<TimePoint> now) const;
  void close(TrainId t, Train& tr);
  void fail_followers(TrainId t, Train& tr);
  /// A plain turn took `took`; true when its shape has just become slow.
  bool note_turn(PoolKey pool, uint64_t shape, std::chrono::microseconds took, bool others_ran);
  static uint64_t shape_key(PoolKey pool, uint64_t shape);

  PipelineLimits limits_;
  IdMap<Train, ResetTrain> trains_;  ///< one per lease the pipeline saw, until released
  std::vector<TrainId> open_;        ///< open trains; removal swaps in the last one
  std::deque<Waiter> waiters_;
  std::unordered_map<uint64_t, std::chrono::microseconds> slow_;  ///< shape key -> average turn
  std::deque<PipelineAction> actions_;
};

}  // namespace wirepool::pool
