#pragma once
// The relay's state on one event loop: the pipeline's decisions
// (pool/pipeline.hpp) carried out for the PostgreSQL clients of the loop,
// with the clock read here, and the per-batch scratch of idle clients kept for
// the next batch. Each client's own batch is driven by PgClient (pg_relay.cpp);
// a backend's train lives on the loop of the session that holds the backend.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pool/id_map.hpp"
#include "pool/pipeline.hpp"
#include "server/pg/client.hpp"
#include "server/relay_train.hpp"

namespace wirepool::server {

class RelayPath final : public TrainOwner {
 public:
  /// The relay of `loop` (made at its first use).
  static RelayPath& of(Loop& loop);

  /// The one clock read of the relay.
  static pool::TimePoint now() { return pool::Clock::now(); }
  /// What the pipeline reads of `pool` (shared with other loops).
  static pool::PoolView view(DatabasePool& pool);
  static pool::PoolKey key(const DatabasePool& pool) {
    return static_cast<pool::PoolKey>(reinterpret_cast<uintptr_t>(&pool));
  }

  pool::Pipeline& pipeline() { return pipeline_; }

  /// A RelayState for a client's next batch: a cached one, or a new one.
  std::unique_ptr<PgClient::RelayState> take_state();
  /// An idle client's RelayState, kept for the next batch (or freed).
  void give_state(std::unique_ptr<PgClient::RelayState> state);

  /// `head`'s plain batch went out whole on `b`'s idle connection: the
  /// train may open, and waiters of the loop then join it.
  void turn_began(PgClient& head, Backend& b);
  /// `c`'s checked batch goes behind a running one (false: none took it).
  bool join(PgClient& c);
  /// `c` was sent behind `b`'s running batch (`sent_all`: all of it).
  void joined(PgClient& c, Backend& b, bool sent_all);
  /// Waiters of the loop take `b`'s free places, oldest first.
  void pull(PgClient& head, Backend& b);
  /// `c` waits in its pool's queue with a checked batch; trains may take it.
  void wait_begin(PgClient& c);
  void wait_end(PgClient& c);
  /// `head`'s batch on `b` ended (`r`): the client that follows (its lease
  /// handed over by the caller), or null. Followers that cannot go on get an
  /// error; a slow turn is logged and may pause the pool's pipelining.
  std::shared_ptr<PgClient> turn_end(PgClient& head, Backend& b, const pool::TurnReport& r,
                                     pool::TimePoint now, std::string_view why);
  /// Other clients' batches follow `b`'s running one.
  bool has_followers(const Backend& b) const;
  /// How `head` writes its answer on `b`.
  pool::HeadFlush head_flush(const Backend& b, bool reading_ahead, size_t buffered) const;

  bool may_cancel(const Backend& b) const override;
  bool release(Backend& b, std::string_view why) override;

 private:
  static pool::BatchId id_of(const PgClient& c);
  /// `b`'s train is this loop's until its lease ends (release).
  void track(Backend& b);
  /// Carries out the pipeline's actions (`why`: the failed followers' error).
  void act(DatabasePool* pool, std::string_view why);

  pool::Pipeline pipeline_;
  // Entries come and go per batch and per lease (pool::IdMap: no allocation each).
  /// Clients whose batches were sent behind a running one, until their turn.
  pool::IdMap<std::shared_ptr<PgClient>> followers_;
  /// Clients waiting in their pool's queue that a train may take.
  pool::IdMap<std::weak_ptr<PgClient>> waiters_;
  /// The backends of the trains the pipeline knows, by lease.
  pool::IdMap<Backend*> backends_;
  std::vector<std::unique_ptr<PgClient::RelayState>> states_;
  uint64_t next_batch_ = 0;
  /// join's and pull's lists, kept for their capacity (neither runs inside the other).
  std::vector<pool::TrainId> trains_scratch_;
  std::vector<pool::BatchId> batches_scratch_;
};

// Inline: read several times per relayed batch.
inline RelayPath& RelayPath::of(Loop& loop) {
  if (!loop.relay) loop.relay = std::make_shared<RelayPath>();
  return *loop.relay;
}

}  // namespace wirepool::server
