#pragma once
// One TDS client (SQL Server's protocol): TLS 1.3 first (TDS 8.0 strict), or a
// TDS 7.x client's TLS handshake carried in PRELOGIN packets; PRELOGIN, LOGIN7
// checked against the same users as PostgreSQL clients; then SQL batches, RPCs
// (sp_executesql, sp_prepare / sp_execute / sp_prepexec / sp_unprepare),
// transaction-manager requests and ATTENTION, run through the session layer on
// any backend. docs/tds.md says what is served and what is refused.

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/tds/codec.hpp"
#include "server/client_connection.hpp"
#include "server/server.hpp"
#include "server/session.hpp"

namespace wirepool::server {

class TdsClient final : public ClientConnection, public std::enable_shared_from_this<TdsClient> {
 public:
  TdsClient(Server& server, Loop& loop, ClientSocket socket, const config::Listener& listener,
            Admission::TicketPtr ticket);
  ~TdsClient() override;

  bool describe(ClientInfo& out) const override;
  std::string_view database() const override;

 private:
  struct Result;
  /// sp_prepare's statements, by handle: kept by the client, so a handle
  /// outlives the backend that first ran it (transaction pooling).
  struct Prepared {
    std::string sql;                 ///< with @name markers rewritten to $n
    std::vector<std::string> names;  ///< declared parameter names, lower case, without '@'
    std::vector<tds::TypeInfo> types;
  };
  using Fetch = Pumped;

  boost::asio::awaitable<void> serve_logged_in() override;
  /// PRELOGIN and TLS, then LOGIN7, in decide_login's order.
  boost::asio::awaitable<bool> login() override;
  /// TDS 8.0 (TLS first, PRELOGIN inside it) or 7.x (a cleartext PRELOGIN
  /// answered "encryption required", then TLS inside PRELOGIN packets).
  boost::asio::awaitable<bool> prelogin();
  /// The admitted client's session and the login response.
  boost::asio::awaitable<bool> finish_login(const UserRecord& record, const std::string& database,
                                            const tds::Login7& lg, uint32_t psize);
  /// Answers a refused login with its SQL Server error number (a
  /// login_failed one kLoginFailureDelay after `answer_at`, counted against
  /// the throttle).
  boost::asio::awaitable<void> refuse_login(const LoginDecision& d, const std::string& user,
                                            const std::string& database, TimePoint answer_at);
  /// TDS 7.x: the TLS handshake inside PRELOGIN packets (after the cleartext PRELOGIN).
  boost::asio::awaitable<bool> wrapped_handshake();
  /// The next whole message (bounded by the login deadline or the I/O timeout).
  boost::asio::awaitable<std::optional<tds::Message>> read_message();
  boost::asio::awaitable<void> serve(bool readable);
  boost::asio::awaitable<void> resume(boost::system::error_code ec) override;
  boost::asio::awaitable<void> end() override;

  /// Handles one request message; false closes the connection.
  boost::asio::awaitable<bool> handle(tds::Message& msg);
  boost::asio::awaitable<void> sql_batch(const std::string& text);
  boost::asio::awaitable<void> rpc(tds::RpcRequest& req);
  boost::asio::awaitable<void> transaction_request(const tds::TransactionRequest& req);
  /// RESETCONNECTION: roll back, forget prepared handles and options.
  boost::asio::awaitable<void> reset_connection();

  /// One statement on the backend, its result streamed into the response.
  /// `in_proc`: inside an RPC (DONEINPROC instead of DONE). False after an error (sent).
  boost::asio::awaitable<bool> run_statement(const std::string& sql,
                                             const std::vector<db::Param>& params, bool in_proc,
                                             bool more);
  /// BEGIN TRAN / COMMIT / ROLLBACK / SET options answered by wirepool: true if
  /// `stmt` was one (its response appended, `*ok` false after an error).
  boost::asio::awaitable<bool> session_statement(std::string_view stmt, bool in_proc, bool more,
                                                 bool* ok);

  boost::asio::awaitable<db::Status> begin_tx();
  boost::asio::awaitable<db::Status> commit_tx();
  boost::asio::awaitable<db::Status> rollback_tx();
  /// ENVCHANGEs when the transaction state changed: begin, or its end (`ended_by`:
  /// commit, else rollback, also when the backend ended it by itself).
  void sync_tx_descriptor(uint8_t ended_by = tds::env::kRollbackTransaction);

  /// Appends an ERROR token for `e` (its SQLSTATE mapped to an SQL Server number).
  void error_token(const db::Error& e);
  void error_token(int32_t number, uint8_t severity, std::string_view message);
  void info_token(int32_t number, std::string_view message);
  void done_token(uint8_t token, uint16_t status, uint16_t command, uint64_t rows);
  /// What the backend reported besides results: notices as INFO.
  void forward_notices();
  /// A driver call failed: the ERROR token; drop the backend if it is gone.
  void backend_error(db::Error err);
  /// The result columns of `sql` as the backend prepares it (sp_prepare's
  /// RETURN_METADATA); the backend is given back if no transaction holds it.
  /// `sql` as the backend reads it: a SQLite backend gets N'...' as '...'.
  std::optional<std::string> backend_text(const std::string& sql) const;
  boost::asio::awaitable<std::optional<db::Error>> describe(const std::string& sql,
                                                            std::vector<db::Column>& cols);
  /// pump_result's hooks: payload_ framed into whole packets before out_ is
  /// written; a result stops between chunks after ATTENTION or the client's exit.
  void frame_output() override { pack(false); }
  bool result_stopped() const override { return attention_ || gone_; }
  /// Frames payload_ into packets in out_: all of it with EOM when `eom`, else
  /// only whole packets (the rest waits for more tokens).
  void pack(bool eom);
  /// Ends the response message: the final packet (EOM).
  void end_response() { pack(true); }
  /// Error answer before or during login, flushed; the caller then closes.
  boost::asio::awaitable<void> login_error(int32_t number, uint8_t severity,
                                           std::string_view message);

  /// While a request runs, the socket is watched for ATTENTION.
  void watch_attention();
  void on_attention_readable(boost::system::error_code ec, uint64_t generation);
  /// Reads what the socket has into the assembler without waiting: the bytes
  /// read (0: none now), nullopt on EOF or an error.
  std::optional<size_t> read_available();

  Server& server_;
  const config::Listener& listener_;
  tds::MessageAssembler assembler_;
  tds::PacketWriter writer_;
  std::string payload_;    ///< tokens of the response being built
  uint8_t packet_id_ = 1;  ///< of the next packet of the current response
  uint32_t packet_size_ = tds::kDefaultPacketSize;
  std::vector<tds::Message> pending_;  ///< requests that arrived while one ran
  bool running_ = false;               ///< a request is being answered (ATTENTION is watched)
  bool attention_ = false;             ///< an ATTENTION arrived for it
  bool gone_ = false;                  ///< the client closed while a request ran
  bool protocol_error_ = false;
  uint64_t generation_ = 0;     ///< counts requests (stale ATTENTION watches see a newer one)
  bool nocount_ = false;        ///< SET NOCOUNT ON
  uint64_t tx_descriptor_ = 0;  ///< the open transaction's descriptor (0 = none)
  uint64_t next_descriptor_ = 0;
  std::string database_;
  std::string user_;
  int32_t next_handle_ = 1;
  std::map<int32_t, Prepared> prepared_;
};

}  // namespace wirepool::server
