#pragma once
// One PostgreSQL client: the coroutine that reads its bytes, feeds the sans-I/O
// codec (protocol/pg), authenticates it with SCRAM, and carries its simple and
// extended queries out through the session layer.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/pg/codec.hpp"
#include "protocol/pg/relay.hpp"
#include "protocol/pg/types.hpp"
#include "server/client_connection.hpp"
#include "server/pg_relay.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "tls/tls.hpp"

namespace wirepool::server {

/// How long forwarding a CancelRequest to a peer may take (connect and write).
inline constexpr auto kPeerCancelTimeout = std::chrono::seconds(2);
/// PostgreSQL's message when a prepared statement's result columns changed
/// under it (0A000): the backend's statements predate DDL.
inline constexpr std::string_view kCachedPlanChanged = "cached plan must not change result type";

class PgClient final : public ClientConnection, public std::enable_shared_from_this<PgClient> {
 public:
  PgClient(Server& server, Loop& loop, ClientSocket socket, const config::Listener& listener,
           Admission::TicketPtr ticket);
  ~PgClient() override;

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
    bool shown = false;  ///< the relay described or ran it for the client (its shape is known)
    /// PostgreSQL backends: what it does to session state beyond its transaction.
    sql::SessionEffects effects;
    int8_t relay_ok = -1;     ///< the relay may send it (-1: not decided yet)
    int8_t relay_plain = -1;  ///< and it is no transaction control (BEGIN, COMMIT...)
  };
  struct Portal;
  struct Streamer;
  /// Where sending a result stands (`limit`: the Execute's row limit was reached).
  using Fetch = Pumped;

  /// After the login: the admin console, or serve.
  boost::asio::awaitable<void> serve_logged_in() override;
  /// Handles messages until the client is idle (then waits for it without a
  /// coroutine, see on_readable) or leaves (then ends it).
  /// `readable`: the socket has data (after an idle wait): read it first.
  boost::asio::awaitable<void> serve(bool readable);
  boost::asio::awaitable<void> resume(boost::system::error_code ec) override;
  /// Closes readers, releases the backend, closes the socket.
  boost::asio::awaitable<void> end() override;
  /// The startup packet's parameters, copied (the read buffer is reused).
  using StartupParams = std::vector<std::pair<std::string, std::string>>;
  /// Startup, authentication and the session, in decide_login's order.
  boost::asio::awaitable<bool> login() override;
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

  /// The client's relay (server/pg_relay.hpp), which reads its buffers and
  /// session; RelayPath lists and moves clients between trains.
  friend class PgRelay;
  friend class RelayPath;
  /// Registers a Parse the relay takes where the ordinary path finds it too.
  /// `plain`: whether it is transaction control is known (1: it is not, 0: it is).
  std::shared_ptr<Prepared> register_parse(const pg::relay::ParseMsg& m, int8_t plain = -1);
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
  /// answer has completed (PgRelay::took done).
  void relay_loop(LoopEntry entry);
  void on_granted(std::variant<Backend*, AcquireError> got);
  /// Keeps serving in a coroutine after resume_now stopped (`mid_relay`: in a
  /// started batch, `flush_first`: with out_ still to write).
  boost::asio::awaitable<void> serve_on(std::shared_ptr<PgClient> self, bool mid_relay,
                                        bool flush_first);
  /// A client with nothing left to do: buffers go, the idle wait starts
  /// (`hot`: it has just been answered; ClientConnection::wait_idle).
  void go_idle(bool hot, bool park_now = false);
  void watch_notifications();
  /// Ends that watch before the backend goes back to the pool.
  void stop_watching_backend();
  void on_backend_readable(boost::system::error_code ec);

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
  /// Whether Bind makes portal `portal` of `p` a cursor on the backend
  /// (Portal::cursor; docs/protocol-postgres.md, "PostgreSQL backends").
  bool cursor_portal(const Prepared& p, std::string_view portal) const;
  /// Execute of a cursor portal: FETCH its next `max_rows` (0: all).
  boost::asio::awaitable<void> fetch_cursor(Portal& portal, std::string_view name,
                                            int32_t max_rows);
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
  /// Bytes of the message being handled, consumed after its handler returns
  /// unless the handler consumed them itself (COPY reads the messages after it).
  /// 32 bits (a message's length field is), beside pid_ in one word.
  uint32_t unconsumed_ = 0;
  /// Set for an admin console client (no session): the admin user (held by
  /// users_ or backend_user_).
  const UserRecord* admin_user_ = nullptr;
  /// Extended-protocol state, allocated on first use and dropped when empty
  /// while idle (most idle clients have none).
  struct Extended {
    /// Looked up by the names messages carry (string views), without a copy.
    struct NameHash {
      using is_transparent = void;
      size_t operator()(std::string_view s) const noexcept {
        return std::hash<std::string_view>{}(s);
      }
    };
    template <class T>
    using ByName = std::unordered_map<std::string, T, NameHash, std::equal_to<>>;
    ByName<std::shared_ptr<Prepared>> statements;
    ByName<std::unique_ptr<Portal>> portals;
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
  /// Where the last Bind's BindComplete sits in out_ while only Describe and
  /// Execute of its portal follow (handle() drops it at any other message):
  /// when the server refused the Bind (a parameter, the plan; the driver says
  /// so, Error::before_bind) it sent no BindComplete, so the error takes it back.
  struct BindMark {
    const Portal* portal = nullptr;
    size_t at = 0;
  };
  std::optional<BindMark> bind_mark_;
  /// read_only.route_statements: the bytes produced for the client (written
  /// and in out_) before the routed batch began, set when the relay routed it.
  std::optional<uint64_t> route_mark_;
  /// read_only.route_statements: `err` is the standby refusing the routed
  /// batch as a write (25006) and nothing produced since route_mark_ has been
  /// written: the caller may run it again on the primary.
  bool retry_on_primary(const db::Error& err) const;
  /// native_simple_query's run of `text` on the session's backend.
  boost::asio::awaitable<Fetch> run_native(std::string_view text, Streamer& s, db::Error& err);
  /// The relay of this client's batches (transaction mode, PostgreSQL backends).
  PgRelay relay_{*this};
};

}  // namespace wirepool::server
