#pragma once
// The relay's state on one event loop: the pipeline's decisions
// (pool/pipeline.hpp) carried out for the PostgreSQL clients of the loop,
// with the clock read here, and the per-batch scratch of idle clients kept for
// the next batch; and PgRelay, one client's relay, which drives its batches;
// a backend's train lives on the loop of the session that holds the backend.

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pool/id_map.hpp"
#include "pool/pipeline.hpp"
#include "protocol/pg/relay.hpp"
#include "server/client_connection.hpp"
#include "server/pg_relay_detail.hpp"
#include "server/relay_train.hpp"
#include "server/server.hpp"

namespace wirepool::server {

class PgClient;

/// One PostgreSQL client's relay (docs/protocol-postgres.md): a batch of
/// messages for a PostgreSQL backend in transaction mode goes to the server
/// as bytes. PgClient owns one and drives it from its connection loop
/// (relay_loop without a coroutine, serve in one); the relay reads the
/// client's buffers and session through `client`.
class PgRelay {
 public:
  explicit PgRelay(PgClient& client) : c_(client) {}
  PgRelay(const PgRelay&) = delete;
  PgRelay& operator=(const PgRelay&) = delete;

  /// `no`: this batch is not for the relay (nothing was consumed or
  /// answered: the ordinary path takes it); `yes`: it was answered;
  /// `closed`: the client is gone.
  enum class Relayed : uint8_t { no, yes, closed };
  /// The whole batch at the client's in_ front, in a coroutine.
  boost::asio::awaitable<Relayed> run();

  // The relay in steps, so that the common case runs without a coroutine
  // (PgClient::relay_loop) and the rest in one (run, rest):
  // check decides on the batch in in_ (`answered`: Parses answered without a
  // backend; `go`: it needs one); start (with the session's backend) sends
  // nothing yet but builds what the server gets (false: the backend cannot be
  // relayed to: the ordinary path); pump sends and passes answers on until one
  // would wait (Wait says on what); took counts what a waited-for read
  // brought; finish settles the backend and the client's statements once the
  // answers are through.
  enum class Check : uint8_t { no, answered, go };
  enum class Wait : uint8_t { none, write, read, flush };
  Check check();
  /// `joining`: the batch goes behind the running one on that backend
  /// (join), and only statements the server has are used (`known`: known_on
  /// already said so).
  bool start(Backend* joining = nullptr, bool known = false);
  Wait pump();
  void took(size_t n, size_t space, boost::system::error_code ec);
  /// The rest of a started batch, waiting where pump would (after a flush of
  /// the client's out_ when `flush_first`).
  boost::asio::awaitable<Relayed> rest(bool flush_first);
  Relayed finish();
  /// The pipeline: sends the checked batch at in_'s front behind the one
  /// running on another client's backend, when one may take it (false:
  /// nothing was sent). The client then waits in the backend's train until
  /// finish of the batch before it hands the lease over.
  bool join();
  /// read_only.route_transactions: the batch at in_'s front begins a read-only
  /// transaction (noted in the session), or every transaction is one
  /// (default_transaction_read_only); with route_statements, or it is an
  /// autocommit batch of reads (session/statement.hpp reads_only; the client's
  /// route_mark_ is set for a retry on the primary).
  bool read_only_ahead();
  /// The batch at in_'s front uses only statements `b`'s server has.
  bool known_on(Backend& b);
  /// start(&b), sent, and the client in `b`'s train (false: nothing sent).
  bool send_behind(Backend& b, bool known = false);
  /// The batch was started for `b` (start) and sent with others in one write
  /// (`sent_all`: all of it): the client goes in `b`'s train.
  void sent_behind(Backend& b, bool sent_all);
  /// The client waits in the pool's queue with a checked batch: listed for
  /// the trains (RelayPath::pull) until granted (train_wait_end). True when a
  /// train may take it (the pool's `pipelined` waiter).
  bool train_wait_begin();
  void train_wait_end();
  /// The backend the client queued on was lost before its turn: an error for
  /// its batch, then the client goes on.
  void abandoned(const std::string& why);
  static void post_abandoned(std::shared_ptr<PgClient> f, std::string why);
  /// The client left mid-answer (a write failed): see finish.
  void client_left();

  /// The per-batch scratch, allocated while the client is busy (and kept
  /// per loop for the next batch, RelayPath::take_state).
  struct State {
    std::vector<pg::relay::Frame> frames;
    pg::relay::Tracker tracker;
    pg::relay::ParseMsg parse;  // scratch
    std::string to_server;
    InBuffer from_server;
    /// The Parses of this batch (the client's and the ones the relay added),
    /// indexed by the tracker's tags.
    struct ParseEntry {
      std::string client_name;  ///< the client's name ("" unnamed); unused when `added`
      std::string key;
      std::string server_name;  ///< the name prepared on the server ("" when it had it)
      bool added = false;       ///< the relay added it (the client sent a Bind)
    };
    std::vector<ParseEntry> parses;
    std::vector<bool> confirmed;  ///< finish()'s scratch: which of `parses` the server confirmed
    size_t total = 0;             ///< the batch's bytes in in_
    // Where a started batch stands (start .. finish).
    int fd = -1;
    size_t sent = 0;   ///< of to_server
    std::string lost;  ///< why the backend is unusable
    bool client_gone = false;
    char status = 'I';       ///< the last ReadyForQuery's
    bool done = false;       ///< the batch's last answer is through
    bool drained = false;    ///< the last read took all the socket had
    size_t passthrough = 0;  ///< bytes of a DataRow passed on as they arrive
    /// The pipeline: the batch is only queries and DML (it leaves an idle
    /// backend idle, so others' batches may follow it); it began on an idle
    /// backend; its client left and its answers are read and dropped for the
    /// followers' sake.
    bool plain = false;
    bool from_idle = false;
    bool discard = false;
    bool opened = false;  ///< RelayPath::turn_began was done for it
    bool stale = false;   ///< the server said a statement does not exist (26000)
    /// replay: the batch may be sent again (until a server message of it
    /// reaches the client), its bytes (`copy`), the error held back
    /// meanwhile, and whether it was sent again already.
    bool replayable = false;
    bool replayed = false;
    std::string copy;
    std::string held;  ///< a ParameterDescription held with it
    std::string held_error;
    uint32_t executes = 0;  ///< Execute messages in the batch (several: one implicit transaction)
    /// Its client stopped taking its answer while others' batches wait behind:
    /// the answer is read ahead into out_ (up to the pipeline's max_read_ahead).
    bool reading_ahead = false;
    /// When its turn on the backend began (start, or the hand-over).
    std::chrono::steady_clock::time_point turn_started{};
    uint64_t relayed_before = 0;  ///< the pool's relayed batches then
    /// Which statements the batch runs (a hash of its queries' text and its
    /// statements' text and types), for the pipeline's memory of slow ones.
    uint64_t shape = 0;
    /// The batch's id in the pipeline (pool::BatchId), new for each take_state.
    uint64_t batch = 0;
  };
  /// The current batch's state (a batch was checked).
  State& state() { return *state_; }
  const State& state() const { return *state_; }
  bool has_state() const { return state_ != nullptr; }
  /// The client goes idle: its State goes back to the loop's cache.
  void give_back();

 private:
  /// The batch as the server gets it, from the client's bytes `buf`.
  void build(Backend& b, std::span<const uint8_t> buf, int swallowed,
             std::span<const std::string> close_first);
  /// The batch failed at its start on a statement prepared before DDL: it is
  /// sent again with those statements prepared afresh (false: it cannot be).
  bool replay();
  /// For a batch that may be sent again: keeps a server message (`msg`, as
  /// much as has arrived) from the client for now (true), or lets it through
  /// after what was held.
  bool hold(char type, std::string_view msg, bool forward);
  /// Writes out_ for the relay: with others' batches behind or clients in
  /// the pool's queue (also those that come while it writes), a client that
  /// does not take it within the pipeline's head_patience gets its answer
  /// read ahead (pool::Pipeline::head_flush).
  boost::asio::awaitable<void> flush();

  PgClient& c_;
  std::unique_ptr<State> state_;
};

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

  /// A State for a client's next batch: a cached one, or a new one.
  std::unique_ptr<PgRelay::State> take_state();
  /// An idle client's State, kept for the next batch (or freed).
  void give_state(std::unique_ptr<PgRelay::State> state);

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
  /// How `head` writes its answer on `b`, a backend of `pool`.
  pool::HeadFlush head_flush(const Backend& b, DatabasePool& pool, bool reading_ahead,
                             size_t buffered) const;

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
  std::vector<std::unique_ptr<PgRelay::State>> states_;
  uint64_t next_batch_ = 0;
  /// Sends the batches of `taking_` (started for `b`) in one write, in order,
  /// and puts their clients in `b`'s train.
  void send_taken(Backend& b);

  /// join's and pull's lists, kept for their capacity (neither runs inside the other).
  std::vector<pool::TrainId> trains_scratch_;
  std::vector<pool::BatchId> batches_scratch_;
  std::vector<std::shared_ptr<PgClient>> taking_;  ///< pull's started batches, sent together
  std::vector<relay_detail::Outgoing> outgoing_;
  std::vector<iovec> iov_;
};

// Inline: read several times per relayed batch.
inline RelayPath& RelayPath::of(Loop& loop) {
  if (!loop.relay) loop.relay = std::make_shared<RelayPath>();
  return *loop.relay;
}

}  // namespace wirepool::server
