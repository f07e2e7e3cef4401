// The MySQL/MariaDB connection (libmysqlclient API; Debian builds against
// MariaDB Connector/C 3.3): opening it, transactions, cancel and reset. The
// statement and the readers are mysql_statement.cpp, mysql_text_rows.cpp and
// mysql_stmt_rows.cpp; what they share is mysql_internal.hpp.
//
// Blocking calls, run by the server on its bounded executor (docs/mysql.md
// says why, with the measurement). Statements without parameters use the text
// protocol (mysql_real_query + mysql_use_result); statements with parameters
// run as server-side prepared statements over the binary protocol, fetched
// unbuffered (no mysql_stmt_store_result). Either way rows stream: nothing
// buffers a whole result, and while a result is being read the connection
// belongs to its reader, so every other call answers Busy (55000) until the
// reader is exhausted or closed, as MySQL's protocol requires ("Commands out of
// sync" otherwise).
//
// Every object a connection hands out shares its Session, so one that outlives
// Connection::close() answers closed instead of touching a closed handle.

#include "backends/mysql/mysql_connection.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>

#include "backends/mysql/mysql_internal.hpp"

namespace wirepool::mysql {

using namespace detail;

namespace {

/// Sets the options every connection (and the cancel side connection) uses.
void set_common_options(MYSQL* m, const ConnectInfo& info, unsigned timeout,
                        unsigned write_timeout) {
  mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  // Writes never wait for a query to run, so they can be bounded; reads can
  // (SELECT SLEEP(60) is legal): those are bounded by TCP keepalive and the
  // server's query_timeout handling through cancel().
  mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &write_timeout);
  mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");  // the contract's Text is UTF-8
  const my_bool off = 0;
  // A silent reconnect would lose the session (transaction, prepared statements).
  mysql_options(m, MYSQL_OPT_RECONNECT, &off);
  // The server must never read files of the proxy's host (LOAD DATA LOCAL).
  const unsigned no_local = 0;
  mysql_options(m, MYSQL_OPT_LOCAL_INFILE, &no_local);
  if (info.max_value_size != 0) {
    const unsigned long cap = packet_cap(info.max_value_size);
    mysql_options(m, MYSQL_OPT_MAX_ALLOWED_PACKET, &cap);
  }
  if (!info.tls_ca.empty()) {
    mysql_options(m, MYSQL_OPT_SSL_CA, info.tls_ca.c_str());
    const my_bool verify = 1;  // the chain and the host name
    mysql_options(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
    mysql_options(m, MARIADB_OPT_TLS_VERSION, "TLSv1.3");
  }
}

/// @@global.read_only of a connected server; nullopt when the query fails.
std::optional<bool> read_only_of(MYSQL* m) {
  if (mysql_query(m, "SELECT @@global.read_only") != 0) return std::nullopt;
  MYSQL_RES* res = mysql_store_result(m);
  if (res == nullptr) return std::nullopt;
  std::optional<bool> out;
  if (MYSQL_ROW row = mysql_fetch_row(res); row != nullptr && row[0] != nullptr)
    out = std::string_view(row[0]) != "0";
  mysql_free_result(res);
  return out;
}

bool real_connect(MYSQL* m, const ConnectInfo& info, unsigned long flags) {
  const bool unix_socket = !info.socket.empty();
  return mysql_real_connect(m, unix_socket ? "localhost" : info.host.c_str(),
                            info.user.empty() ? nullptr : info.user.c_str(), info.password.c_str(),
                            info.dbname.empty() ? nullptr : info.dbname.c_str(),
                            unix_socket ? 0 : info.port,
                            unix_socket ? info.socket.c_str() : nullptr, flags) != nullptr;
}

// ---- connection -------------------------------------------------------------

class MysqlConnection final : public db::ConnectionImpl {
 public:
  explicit MysqlConnection(SessionPtr s) : session_(std::move(s)) {}
  ~MysqlConnection() override { session_->close(); }

  db::Capabilities capabilities() const override {
    db::Capabilities c;
    c.dialect = Dialect::mysql;
    c.multi_statement = true;
    c.blocking = true;
    return c;
  }

  Result<std::unique_ptr<db::RowsImpl>> query(std::string_view text, db::Params params,
                                              const db::QueryOptions&) override {
    if (auto e = usable()) return *e;
    sql::QuestionText q = sql::to_question_markers(text, Dialect::mysql);
    if (!q.error.empty()) return protocol_error("42601", q.error);
    if (auto e = check_params(params, q.required)) return *e;
    if (q.slots.empty()) return run_text(session_, text);
    if (sql::split_statements(text, Dialect::mysql).size() > 1) return multiple_commands();
    auto p = prepare_on_server(session_, std::move(q), text);
    if (!p.ok()) return p.take_error();
    return run_prepared(session_, std::move(p.value()), params);
  }

  Result<std::unique_ptr<db::StatementImpl>> prepare(
      std::string_view text, std::span<const db::ParamInfo> hints) override {
    if (auto e = usable()) return *e;
    if (sql::split_statements(text, Dialect::mysql).size() > 1) return multiple_commands();
    sql::QuestionText q = sql::to_question_markers(text, Dialect::mysql);
    if (!q.error.empty()) return protocol_error("42601", q.error);
    const int required = q.required;
    PreparedPtr p;
    if (!sql::is_blank(text, Dialect::mysql)) {
      auto r = prepare_on_server(session_, std::move(q), text);
      if (r.ok()) {
        p = std::move(r.value());
      } else if (r.error().vendor_code != 1295 || required > 0) {
        // 1295: "not supported in the prepared statement protocol yet"; without
        // parameters the text protocol runs it anyway.
        return r.take_error();
      }
    }
    return make_statement(session_, std::move(p), std::string(text), required, hints);
  }

  /// START TRANSACTION, with the isolation level and access mode of the
  /// client's BEGIN where it names them (MySQL sets them with SET TRANSACTION).
  Status begin(const db::BeginOptions& options) override {
    if (auto e = usable()) return *e;
    session_->tx_aborted = false;
    const auto words = sql::leading_words(options.native_sql, Dialect::mysql, 8);
    std::string level;
    bool read_only = false;
    for (size_t i = 0; i + 1 < words.size(); ++i) {
      if (words[i] == "ISOLATION" && words[i + 1] == "LEVEL" && i + 2 < words.size()) {
        level = words[i + 2];
        if ((level == "READ" || level == "REPEATABLE") && i + 3 < words.size()) {
          level += " " + words[i + 3];
        }
      }
      if (words[i] == "READ" && words[i + 1] == "ONLY" && (i == 0 || words[i - 1] != "ISOLATION"))
        read_only = true;
    }
    if (level == "SERIALIZABLE" || level == "REPEATABLE READ" || level == "READ COMMITTED" ||
        level == "READ UNCOMMITTED") {
      const std::string set = "SET TRANSACTION ISOLATION LEVEL " + level;
      if (Status st = session_->exec(set); !st.ok()) return st;
    }
    return session_->exec(read_only ? "START TRANSACTION READ ONLY" : "START TRANSACTION");
  }

  /// A transaction the server rolled back (a deadlock) answers 40P01 rather
  /// than a COMMIT that succeeds with nothing to commit.
  Status commit() override {
    if (auto e = usable()) return *e;
    if (session_->tx_aborted) {
      session_->tx_aborted = false;
      (void)session_->exec("ROLLBACK");  // ends what the server may still hold open
      Error e;
      e.code = db::Errc::busy;
      e.sqlstate = "40P01";
      e.message = "the transaction was rolled back by the server (deadlock); nothing committed";
      return e;
    }
    return session_->exec("COMMIT");
  }

  Status rollback() override {
    if (auto e = usable()) return *e;
    session_->tx_aborted = false;
    return session_->exec("ROLLBACK");
  }

  db::TxState tx_state() const override {
    if (session_->closed || session_->broken) return db::TxState::idle;
    if (session_->tx_aborted) return db::TxState::failed;
    return session_->in_trans() ? db::TxState::in_transaction : db::TxState::idle;
  }

  /// KILL QUERY <thread id> on a side connection, bounded by a 2 s timeout.
  void cancel() noexcept override {
    ConnectInfo info;
    unsigned long id = 0;
    {
      std::lock_guard lock(session_->cancel_mu);
      if (session_->closed) return;
      info = session_->info;
      id = session_->thread_id;
    }
    MYSQL* side = mysql_init(nullptr);
    if (side == nullptr) return;
    info.connect_timeout = 2;
    set_common_options(side, info, 2, 2);
    const unsigned read_timeout = 2;
    mysql_options(side, MYSQL_OPT_READ_TIMEOUT, &read_timeout);
    if (real_connect(side, info, 0)) {
      const std::string kill = "KILL QUERY " + std::to_string(id);
      (void)mysql_real_query(side, kill.data(), kill.size());
    }
    mysql_close(side);
  }

  Status reset(std::string_view reset_query) override {
    if (session_->closed) return Error::closed();
    if (session_->broken) return Error::connection("the connection to the backend was lost");
    if (session_->active) {
      // A reader left open by the last client: drop what is left of its results.
      (void)session_->active->close();
    }
    // COM_RESET_CONNECTION: rolls back, drops temporary tables, user variables,
    // session variables and the server's prepared statements, so the next client
    // finds a clean session (the statements of this connection are prepared
    // again when next used). Session variables return to the server's defaults:
    // the time zone is set to UTC again.
    session_->tx_aborted = false;
    if (mysql_reset_connection(session_->mysql) != 0) return session_->error(false);
    ++session_->generation;
    if (Status st = session_->exec("SET time_zone = '+00:00'"); !st.ok()) return st;
    return ConnectionImpl::reset(reset_query);
  }

  int64_t server_pid() const override { return static_cast<int64_t>(session_->thread_id); }
  int socket_fd() const override {
    return session_->closed ? -1 : static_cast<int>(mysql_get_socket(session_->mysql));
  }

  /// No round trip: an idle connection on which the server has sent something
  /// (its error before closing an idle session) or which the peer closed.
  bool alive() const override {
    if (session_->closed || session_->broken) return false;
    if (session_->active) return true;
    pollfd p{};
    p.fd = static_cast<int>(mysql_get_socket(session_->mysql));
    p.events = POLLIN;
    if (p.fd < 0) return false;
    const int rc = ::poll(&p, 1, 0);
    return rc == 0;
  }

  Status close() override {
    session_->close();
    return {};
  }

 private:
  std::optional<Error> usable() const {
    if (session_->closed) return Error::closed();
    if (session_->broken) return Error::connection("the connection to the backend was lost");
    if (session_->active) return busy_error();
    return std::nullopt;
  }

  SessionPtr session_;
};

void set_keepalive(MYSQL* m) {
  const int fd = static_cast<int>(mysql_get_socket(m));
  if (fd < 0) return;
  // A vanished server is noticed in about a minute: 30 s idle, then 3 probes 10 s
  // apart (as the PostgreSQL driver asks libpq). Unix sockets refuse the TCP ones.
  const int on = 1, idle = 30, interval = 10, count = 3;
  if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) != 0) return;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

}  // namespace

Result<db::Connection> open_connection(const ConnectInfo& info) {
  MYSQL* m = mysql_init(nullptr);
  if (m == nullptr) return Error::connection("mysql_init failed: out of memory");
  set_common_options(m, info, info.connect_timeout, 30);
  // TIMESTAMP values cross in UTC: Time is microseconds since the epoch.
  mysql_options(m, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00'");
  // Multi-statement text returns each result in turn; FOUND_ROWS makes UPDATE
  // report the rows it matched, as PostgreSQL does, not only those it changed.
  const unsigned long flags = CLIENT_MULTI_STATEMENTS | CLIENT_MULTI_RESULTS | CLIENT_FOUND_ROWS;
  if (!real_connect(m, info, flags)) {
    Error e = map_error(mysql_errno(m), mysql_sqlstate(m), mysql_error(m));
    e.code = db::Errc::connection;
    mysql_close(m);
    return e;
  }
  if (info.read_write) {
    // MariaDB has no target_session_attrs: a server made read-only since its
    // last probe is refused here, as libpq refuses one for PostgreSQL.
    const auto ro = read_only_of(m);
    if (!ro || *ro) {
      Error e =
          Error::connection(ro ? "the server is read-only (@@read_only = 1)"
                               : "could not read @@read_only: " + std::string(mysql_error(m)));
      e.sqlstate = ro ? "25006" : "08006";
      mysql_close(m);
      return e;
    }
  }
  set_keepalive(m);
  auto session = std::make_shared<Session>(m, info);
  return db::Connection(std::make_unique<MysqlConnection>(std::move(session)));
}

Result<db::HostProbe> probe_host(const ConnectInfo& info, std::chrono::milliseconds timeout) {
  MYSQL* m = mysql_init(nullptr);
  if (m == nullptr) return Error::connection("mysql_init failed: out of memory");
  std::unique_ptr<MYSQL, decltype(&mysql_close)> owned(m, &mysql_close);
  const unsigned secs = static_cast<unsigned>(std::max<int64_t>(1, (timeout.count() + 999) / 1000));
  set_common_options(m, info, secs, secs);
  mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &secs);
  if (!real_connect(m, info, 0)) {
    Error e = map_error(mysql_errno(m), mysql_sqlstate(m), mysql_error(m));
    e.code = db::Errc::connection;
    return e;
  }
  db::HostProbe out;
  const auto ro = read_only_of(m);
  if (!ro) {
    Error e = Error::connection("could not read @@read_only: " + std::string(mysql_error(m)));
    e.sqlstate = "08006";
    return e;
  }
  out.read_only = *ro;
  if (!out.read_only) return out;
  // A replica: Seconds_Behind_Master is NULL while its SQL thread is stopped.
  if (mysql_query(m, "SHOW SLAVE STATUS") != 0) return out;  // no privilege: lag unknown
  MYSQL_RES* res = mysql_store_result(m);
  if (res == nullptr) return out;
  std::unique_ptr<MYSQL_RES, decltype(&mysql_free_result)> rows(res, &mysql_free_result);
  const unsigned n = mysql_num_fields(res);
  MYSQL_FIELD* fields = mysql_fetch_fields(res);
  if (MYSQL_ROW row = mysql_fetch_row(res)) {
    for (unsigned i = 0; i < n; ++i) {
      if (std::string_view(fields[i].name) == "Seconds_Behind_Master" && row[i] != nullptr)
        out.lag = std::chrono::seconds(std::strtoll(row[i], nullptr, 10));
    }
  }
  return out;
}

}  // namespace wirepool::mysql
