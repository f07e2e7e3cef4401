#pragma once
// One PostgreSQL client: the coroutine that reads its bytes, feeds the sans-I/O
// codec (protocol/pg), authenticates it with SCRAM, and carries its simple and
// extended queries out through the session layer.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/pg/codec.hpp"
#include "protocol/pg/relay.hpp"
#include "protocol/pg/types.hpp"
#include "server/client_connection.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "tls/tls.hpp"

namespace wirepool::server {

/// How long forwarding a CancelRequest to a peer may take (connect and write).
inline constexpr auto kPeerCancelTimeout = std::chrono::seconds(2);
/// PostgreSQL's message when a prepared statement's result columns changed
/// under it (0A000): the backend's statements predate DDL.
inline constexpr std::string_view kCachedPlanChanged = "cached plan must not change result type";

class PgClient final : public ClientConnection,
                       public CancelTarget,
                       public std::enable_shared_from_this<PgClient> {
 public:
  PgClient(Server& server, Loop& loop, ClientSocket socket, const config::Listener& listener,
           Admission::TicketPtr ticket);
  ~PgClient() override;

  /// Spawns the client's coroutine on its loop.
  static void start(std::shared_ptr<PgClient> client);

  void cancel_request() override;
  bool describe(ClientInfo& out) const override;
  std::string_view database() const override;

 private:
  /// A client's prepared statement: kept by the session, prepared on whichever
  /// backend serves it (the backend's cache is keyed by `key`).
  struct Prepared {
    std::string sql;
    std::vector<uint32_t> param_oids;  ///< as the client declared them (may be shorter)
    Classified cls;
    bool blank = false;
    std::string key;
    size_t nparams = 0;
    std::vector<db::ParamInfo> backend_params;
    std::vector<db::Column> columns;  ///< as known before execution (what Describe said)
    std::string show_name;            ///< SHOW x: the column name
    bool described = false;           ///< backend_params / columns / nparams are known
    /// PostgreSQL backends: what it does to session state beyond its transaction.
    sql::SessionEffects effects;
    int8_t relay_ok = -1;     ///< the relay may send it (-1: not decided yet)
    int8_t relay_plain = -1;  ///< and it is no transaction control (BEGIN, COMMIT...)
  };
  struct Portal;
  struct Streamer;
  /// Where sending a result stands (`limit`: the Execute's row limit was reached).
  using Fetch = Pumped;

  /// Logs the client in, then serves it.
  boost::asio::awaitable<void> begin();
  /// Handles messages until the client is idle (then waits for it without a
  /// coroutine, see on_readable) or leaves (then ends it).
  /// `readable`: the socket has data (after an idle wait): read it first.
  boost::asio::awaitable<void> serve(bool readable);
  boost::asio::awaitable<void> resume(boost::system::error_code ec) override;
  /// Closes readers, releases the backend, closes the socket.
  boost::asio::awaitable<void> end();
  /// The startup packet's parameters, copied (the read buffer is reused).
  using StartupParams = std::vector<std::pair<std::string, std::string>>;
  /// Startup, authentication and the session, in decide_login's order.
  boost::asio::awaitable<bool> login();
  /// Reads up to the StartupMessage: direct TLS, SSLRequest / GSSENCRequest,
  /// a CancelRequest (served, then false). False: the connection ends.
  boost::asio::awaitable<bool> read_startup(StartupParams& params, uint32_t& protocol);
  /// Delivers a CancelRequest's key, or forwards it to the peer that issued it.
  boost::asio::awaitable<void> on_cancel_request(int32_t pid, int32_t secret);
  /// Answers a refused login with its SQLSTATE (a login_failed one
  /// kLoginFailureDelay after `answer_at`, counted against the throttle).
  boost::asio::awaitable<void> refuse_login(const LoginDecision& d, const std::string& user,
                                            const std::string& database, TimePoint answer_at);
  /// The result of the SCRAM exchange (nothing decided yet but the proof).
  struct Credentials {
    bool ok = false;           ///< the proof was right
    std::string failure;       ///< why not, for the log
    std::string server_final;  ///< SASLFinal's data, sent once the login is admitted
    TimePoint answer_at{};     ///< when the client's last message came
  };
  /// The SCRAM exchange; nullopt when the client left or was answered already
  /// (a malformed message, a throttled attempt refused unchecked).
  /// The SCRAM exchange for `user` with `verifier` (the user's, or a fake one).
  boost::asio::awaitable<std::optional<Credentials>> authenticate(
      const std::string& user, const pg::scram::Verifier& verifier);
  /// auth.mode passthrough (over TLS only): the client's cleartext password,
  /// verified by a backend login as that role unless its pool holds it already.
  boost::asio::awaitable<std::optional<Credentials>> authenticate_passthrough(
      const std::string& user, const std::string& database);
  /// Users from the backend: looks `user` up with `database`'s auth_query when
  /// it has one and `record` is null. Sets `record` (to backend_user_) when
  /// found, `verifier` to the exchange's; false when the client was answered
  /// (the lookup failed: 08006 or 28000).
  boost::asio::awaitable<bool> look_up_user(const std::string& user, const std::string& database,
                                            const UserRecord*& record,
                                            pg::scram::Verifier& verifier);
  /// The client's session on the user's pool, with its startup parameters and options.
  boost::asio::awaitable<bool> open_session(const UserRecord& record, const std::string& user,
                                            const std::string& database,
                                            const StartupParams& params,
                                            const std::string& options);
  /// AuthenticationOk, the parameters, the cancel key and ReadyForQuery.
  boost::asio::awaitable<bool> finish_login(const std::string& user, const std::string& database);
  /// Sends a CancelRequest to the peer that issued its key (bounded by kPeerCancelTimeout).
  static boost::asio::awaitable<bool> forward_cancel(const config::Peer& peer, int32_t pid,
                                                     int32_t secret);
  /// After authentication, for the admin console's database (admin users
  /// only: others were refused as a wrong password).
  boost::asio::awaitable<bool> admin_login(const UserRecord& record);
  /// TLS after SSLRequest, or `direct` (a ClientHello first, ALPN required).
  boost::asio::awaitable<bool> tls_handshake(bool direct);
  /// The body of the next 'p' message (authentication only); nullopt after a FATAL.
  boost::asio::awaitable<std::optional<std::string>> read_password_message(
      size_t limit = pg::kMaxStartupPacket);

  /// The relay (server/pg_relay.cpp, docs/protocol-postgres.md): a batch of
  /// messages for a PostgreSQL backend in transaction mode goes to the server
  /// as bytes. `no`: this batch is not for the relay (nothing was consumed or
  /// answered: the ordinary path takes it); `yes`: it was answered;
  /// `closed`: the client is gone.
  enum class Relayed : uint8_t { no, yes, closed };
  boost::asio::awaitable<Relayed> relay();
  /// The relay in steps, so that the common case runs without a coroutine
  /// (resume_now) and the rest in one (relay, relay_rest):
  /// relay_check decides on the batch in in_ (`answered`: Parses answered
  /// without a backend; `go`: it needs one); relay_start (with the session's
  /// backend) sends nothing yet but builds what the server gets (false: the
  /// backend cannot be relayed to: the ordinary path); relay_pump sends and
  /// passes answers on until one would wait (RelayWait says on what);
  /// relay_took counts what a waited-for read brought; relay_finish settles
  /// the backend and the client's statements once the answers are through.
  enum class RelayCheck : uint8_t { no, answered, go };
  enum class RelayWait : uint8_t { none, write, read, flush };
  RelayCheck relay_check();
  /// `joining`: the batch goes behind the running one on that backend
  /// (relay_join), and only statements the server has are used (`known`:
  /// relay_known_on already said so).
  bool relay_start(Backend* joining = nullptr, bool known = false);
  RelayWait relay_pump();
  void relay_took(size_t n, size_t space, boost::system::error_code ec);
  /// The rest of a started batch, waiting where relay_pump would (after a
  /// flush of out_ when `flush_first`).
  boost::asio::awaitable<Relayed> relay_rest(bool flush_first);
  /// Writes out_ for the relay: with others' batches behind, a client that
  /// does not take it within the pipeline's head_patience gets its answer read
  /// ahead (pool::Pipeline::head_flush).
  boost::asio::awaitable<void> relay_flush();
  Relayed relay_finish();
  /// The relay's pipeline: sends the checked batch at in_'s front behind the
  /// one running on another client's backend, when one may take it (false:
  /// nothing was sent). The client then waits in the backend's train until
  /// relay_finish of the batch before it hands the lease over.
  bool relay_join();
  /// The batch at in_'s front uses only statements `b`'s server has.
  bool relay_known_on(Backend& b);
  /// relay_start(&b), sent, and the client in `b`'s train (false: nothing sent).
  bool relay_send_behind(Backend& b, bool known = false);
  /// This client waits in the pool's queue with a checked batch (wait_backend):
  /// listed for the trains (RelayPath::pull) until granted (train_wait_end). True when a train
  /// may take it (the pool's `pipelined` waiter).
  bool train_wait_begin();
  void train_wait_end();
  /// The backend this client queued on was lost before its turn: an error
  /// for its batch, then the client goes on.
  void relay_abandoned(const std::string& why);
  static void post_abandoned(std::shared_ptr<PgClient> f, std::string why);
  /// The client left mid-answer (a write failed): see relay_finish.
  void relay_client_left();
  friend class RelayPath;
  /// Registers a Parse the relay takes where the ordinary path finds it too.
  /// `plain`: whether it is transaction control is known (1: it is not, 0: it is).
  std::shared_ptr<Prepared> relay_register(const pg::relay::ParseMsg& m, int8_t plain = -1);
  /// The wake-up of an idle client: relayed batches answered without a
  /// coroutine while nothing waits (the server's answer is in when looked
  /// for, the client takes the reply at once); anything else goes on in
  /// one. False when it did nothing (then resume() runs).
  bool resume_now(boost::system::error_code ec) override;
  /// The batches in in_, relayed while nothing waits but a backend or the
  /// server's answer (both with completion handlers), then the idle wait; or
  /// a coroutine for whatever else.
  enum class LoopEntry : uint8_t { fresh, granted, reading };
  /// `granted`: the batch at in_'s front was checked and its backend has
  /// come (on_granted); `reading`: a started batch's read of the server's
  /// answer has completed (relay_took done).
  void relay_loop(LoopEntry entry);
  void on_granted(std::variant<Backend*, AcquireError> got);
  /// Keeps serving in a coroutine after resume_now stopped (`mid_relay`: in a
  /// started batch, `flush_first`: with out_ still to write).
  boost::asio::awaitable<void> serve_on(std::shared_ptr<PgClient> self, bool mid_relay,
                                        bool flush_first);
  /// A client with nothing left to do: buffers go, the idle wait starts
  /// (`hot`: it has just been answered; ClientConnection::wait_idle).
  void go_idle(bool hot);
  void watch_notifications();
  /// Ends that watch before the backend goes back to the pool.
  void stop_watching_backend();
  void on_backend_readable(boost::system::error_code ec);
  /// The relay's per-batch scratch, allocated while the client is busy.
  struct RelayState {
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
    size_t total = 0;  ///< the batch's bytes in in_
    // Where a started batch stands (relay_start .. relay_finish).
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
    bool opened = false;    ///< RelayPath::turn_began was done for it
    bool stale = false;     ///< the server said a statement does not exist (26000)
    uint32_t executes = 0;  ///< Execute messages in the batch (several: one implicit transaction)
    /// Its client stopped taking its answer while others' batches wait behind:
    /// the answer is read ahead into out_ (up to the pipeline's max_read_ahead).
    bool reading_ahead = false;
    /// When its turn on the backend began (relay_start, or the hand-over).
    std::chrono::steady_clock::time_point turn_started{};
    uint64_t relayed_before = 0;  ///< the pool's relayed batches then
    /// Which statements the batch runs (a hash of its queries' text and its
    /// statements' text and types), for the pipeline's memory of slow ones.
    uint64_t shape = 0;
    /// The batch's id in the pipeline (pool::BatchId), new for each take_state.
    uint64_t batch = 0;
  };
  std::unique_ptr<RelayState> relay_;

  /// Handles one message; false closes the connection.
  boost::asio::awaitable<bool> handle(const pg::FrontendMessage& msg);
  boost::asio::awaitable<void> simple_query(std::string_view text);
  /// A simple query for a PostgreSQL backend: the text goes through whole.
  boost::asio::awaitable<void> native_simple_query(std::string_view text);
  /// The admin console (database "wirepool"): simple queries only, answered
  /// by server/admin.hpp, until the client leaves.
  boost::asio::awaitable<void> serve_admin();
  /// Sends what the backend reported besides results: notices, parameter
  /// changes, notifications.
  void forward_events();
  /// COPY ... FROM STDIN / TO STDOUT (PostgreSQL backends).
  static bool is_copy_with_client(std::string_view stmt);
  boost::asio::awaitable<void> copy(const std::string& sql);
  /// One statement of a simple query; false after an error (sent).
  boost::asio::awaitable<bool> simple_statement(std::string_view stmt, const Classified& cls);
  /// BEGIN/COMMIT/SET/... answered by the session layer; appends the response
  /// (without RowDescription when `describe_rows` is false). False after an error.
  boost::asio::awaitable<bool> session_statement(std::string_view stmt, const Classified& cls,
                                                 bool describe_rows);
  /// BEGIN / START TRANSACTION (inside an implicit transaction: it becomes explicit).
  boost::asio::awaitable<bool> begin_statement(std::string_view stmt, const Classified& cls);
  /// COMMIT / END (`commit`) or ROLLBACK / ABORT; COMMIT of a failed transaction rolls back.
  boost::asio::awaitable<bool> end_statement(bool commit);
  /// SET / RESET / SHOW on the session's settings (SHOW's rows appended).
  bool setting_statement(std::string_view stmt, bool describe_rows);
  /// DISCARD ALL / PLANS / SEQUENCES / TEMP.
  boost::asio::awaitable<bool> discard_statement(std::string_view stmt);
  /// DEALLOCATE [PREPARE] { name | ALL } on the client's prepared statements.
  bool deallocate_statement(std::string_view stmt);
  boost::asio::awaitable<void> on_parse(const pg::Parse& m);
  /// Prepares a statement on the backend (once) to learn its parameters and
  /// columns. False after an error was sent.
  boost::asio::awaitable<bool> describe(Prepared& p);
  boost::asio::awaitable<void> on_bind(const pg::Bind& m);
  /// Bind's parameters for `p`, decoded (or, for a PostgreSQL backend, kept
  /// as the client's bytes); the error for the client when they do not fit.
  std::optional<db::Error> bind_params(const pg::Bind& m, const Prepared& p,
                                       std::vector<db::Param>& out) const;
  /// Pipelined executions of one INSERT/UPDATE/DELETE (Bind, Describe,
  /// Execute, again and again, before Sync: JDBC's executeBatch, libpq's
  /// pipeline mode) run as one parameter-array batch on drivers that have
  /// them. Called from on_bind with the first row bound: true when it
  /// answered that Bind and the groups after it; false to go on one message
  /// at a time (nothing sent). docs/protocol-postgres.md, "Batches".
  boost::asio::awaitable<bool> try_batch(const std::shared_ptr<Prepared>& p,
                                         const std::string& statement, Portal& first);
  /// The groups of a batch already received after the Bind in hand ([Bind]
  /// [Describe portal] Execute, reading what the socket has when one is cut):
  /// their parameters (the first left empty), whether each was described, and
  /// where the last complete one ends in in_.
  struct BatchGroups {
    std::vector<std::vector<db::Param>> rows;
    std::vector<bool> described;
    size_t end = 0;
  };
  BatchGroups collect_batch(const Prepared& st, const std::string& statement);
  boost::asio::awaitable<void> on_describe(const pg::Describe& m);
  boost::asio::awaitable<void> on_execute(const pg::Execute& m);
  /// Before an Execute runs `cls` on the backend: the block's implicit
  /// transaction opened when needed (or PostgreSQL's error or warning for a
  /// statement that needs a transaction block). False after an error (sent).
  boost::asio::awaitable<bool> enter_block(const Classified& cls);
  boost::asio::awaitable<void> on_close(const pg::Close& m);
  boost::asio::awaitable<void> on_sync();
  /// The rest of an Execute once its reader is open.
  boost::asio::awaitable<void> finish_execute(Portal& portal, const Prepared& p, int64_t limit,
                                              db::Error& err, Fetch first);
  /// Closes every portal's open reader (on the executor).
  boost::asio::awaitable<void> close_portals();
  /// Frees the backend for another statement: the rest of every suspended
  /// portal's result (but `keep`'s) is read into memory and served from there.
  boost::asio::awaitable<void> park_portals(const Portal* keep = nullptr);
  bool portals_open() const;
  /// A driver call failed: tell the client; drop the backend if it is gone.
  boost::asio::awaitable<void> backend_error(db::Error err);

  void send_error(const db::Error& e, std::string_view severity = "ERROR");
  void send_error(std::string_view sqlstate, std::string_view message,
                  std::string_view severity = "ERROR");
  void send_notice(std::string_view sqlstate, std::string_view message,
                   std::string_view severity = "WARNING");
  void send_parameter_changes();
  void ready_for_query();
  /// FATAL error, flushed; the caller then closes.
  boost::asio::awaitable<void> fatal(std::string_view sqlstate, std::string_view message);
  std::string cache_key(const std::string& sql, const std::vector<uint32_t>& oids) const;

  Server& server_;
  const config::Listener& listener_;
  int32_t pid_ = 0;
  /// Set for an admin console client (no session): the admin user's name.
  std::string admin_user_;
  /// Extended-protocol state, allocated on first use and dropped when empty
  /// while idle (most idle clients have none).
  struct Extended {
    std::unordered_map<std::string, std::shared_ptr<Prepared>> statements;
    std::unordered_map<std::string, std::unique_ptr<Portal>> portals;
  };
  Extended& ext();
  /// The message after the one being handled is Sync (already received).
  bool next_is_sync() const;
  /// next_is_sync(), after a read that does not wait when nothing follows
  /// the message being handled (which must not point into in_ afterwards).
  bool sync_follows();
  /// Whether a statement runs on the backend (else the session layer answers it).
  bool to_backend(const Classified& c) const;
  std::unique_ptr<Extended> ext_;
  /// Set when an extended-query message fails. Per the protocol the server then
  /// sends one ErrorResponse and ignores all further messages until the next Sync.
  bool skip_until_sync_ = false;
  /// The session's state was lost with its backend: end the client.
  bool backend_gone_ = false;
  /// Session mode: the client ran LISTEN, so its backend is watched while the
  /// client idles and notifications go out at once, as PostgreSQL sends them.
  bool listening_ = false;
  bool watching_backend_ = false;  ///< such a watch is pending
  /// A batch failed (and ran again one execution at a time): no other batch
  /// until Sync, so a bad row costs one failed batch, not one per row.
  bool batch_refused_ = false;
  /// Bytes of the message being handled, consumed after its handler returns
  /// unless the handler consumed them itself (COPY reads the messages after it).
  size_t unconsumed_ = 0;
};

}  // namespace wirepool::server
