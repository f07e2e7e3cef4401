// The ODBC connection: opening it (a login bounded in time, then probes of
// what the driver can do), transactions, cancel and reset.

#include "backends/odbc/odbc_connection.hpp"

#include <dlfcn.h>
#include <link.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <thread>

#include "backends/odbc/odbc_internal.hpp"

namespace wirepool::odbc {

using namespace detail;

namespace {

class OdbcConnection final : public db::ConnectionImpl {
 public:
  explicit OdbcConnection(SessionPtr session) : session_(std::move(session)) {}
  ~OdbcConnection() override { session_->close(); }

  db::Capabilities capabilities() const override {
    db::Capabilities c;
    c.dialect = session_->dialect;
    // The session layer splits multi-statement text for every ODBC driver:
    // SQLite ODBC refuses several statements in one call, MariaDB ODBC takes
    // them only with its multi-statement option. query() still returns every
    // result of a batch a driver accepts (SQLMoreResults).
    c.multi_statement = false;
    c.blocking = true;
    c.param_arrays = true;
    c.batch_row_counts = session_->batch_row_counts;
    return c;
  }

  Result<std::unique_ptr<db::RowsImpl>> query(std::string_view text, db::Params params,
                                              const db::QueryOptions&) override {
    Session& s = *session_;
    if (s.closed) return Error::closed();
    Error err;
    auto rw = rewrite_markers(text, s.dialect, &err);
    if (!rw) return err;
    if (params.size() != rw->needed) return count_mismatch(params.size(), rw->needed);
    auto wtext = to_utf16(rw->text);
    if (!wtext) return protocol_error("22021", "invalid byte sequence for encoding \"UTF8\"");
    auto hd = std::make_shared<Handle>(session_);
    if (auto st = hd->alloc(); !st.ok()) return st.take_error();
    hd->set_verbs(verbs_of(text, s.dialect), s.flavor);
    if (s.flavor == Flavor::generic) {
      // An unknown driver: prepare first, so the rowset is settled before
      // execution (Oracle's driver crashes when it moves on an open cursor).
      if (!ok(prepare_text(s, hd->h, rw->text, *wtext))) {
        return s.stmt_error(hd->h);
      }
      return run_prepared(std::move(hd), params, rw->binds);
    }
    return run_direct(std::move(hd), rw->text, *wtext, params, rw->binds);
  }

  Result<std::unique_ptr<db::StatementImpl>> prepare(
      std::string_view text, std::span<const db::ParamInfo> hints) override {
    Session& s = *session_;
    if (s.closed) return Error::closed();
    if (sql::split_statements(text, s.dialect).size() > 1) {
      // PostgreSQL's answer to the same request.
      return protocol_error("42601", "cannot insert multiple commands into a prepared statement");
    }
    Error err;
    auto rw = rewrite_markers(text, s.dialect, &err);
    if (!rw) return err;
    auto wtext = to_utf16(rw->text);
    if (!wtext) return protocol_error("22021", "invalid byte sequence for encoding \"UTF8\"");
    auto hd = std::make_shared<Handle>(session_);
    if (auto st = hd->alloc(); !st.ok()) return st.take_error();
    if (!ok(prepare_text(s, hd->h, rw->text, *wtext))) {
      return s.stmt_error(hd->h);
    }
    hd->set_verbs(verbs_of(text, s.dialect), s.flavor);
    (void)settle_prepared(s, *hd);  // as the statement would; its errors come at execution
    if (auto st = probe_expression_types(s, *hd); !st.ok()) return st.take_error();
    return make_statement(session_, std::move(hd), std::move(*rw), std::move(*wtext), hints);
  }

  /// Autocommit off opens the transaction (the driver begins it with the next
  /// statement); the client's BEGIN options are not passed: ODBC has no
  /// portable spelling for them beyond SQL_ATTR_TXN_ISOLATION.
  Status begin(const db::BeginOptions&) override {
    Session& s = *session_;
    if (s.closed) return Error::closed();
    if (s.in_tx) {
      return protocol_error("25001", "there is already a transaction in progress");
    }
    if (auto st = s.set_autocommit(false); !st.ok()) return st;
    s.in_tx = true;
    return {};
  }

  /// A failed commit is rolled back, as PostgreSQL ends a transaction whose
  /// COMMIT failed; autocommit is back on either way.
  Status commit() override { return end(SQL_COMMIT); }
  Status rollback() override { return end(SQL_ROLLBACK); }

  db::TxState tx_state() const override {
    return session_->in_tx && !session_->closed ? db::TxState::in_transaction : db::TxState::idle;
  }

  /// SQLCancel on the statement running now, from any thread. Nothing runs:
  /// nothing is called (ODBC 2 drivers would close an idle cursor).
  void cancel() noexcept override {
    std::lock_guard lock(session_->mu);
    session_->cancel_running(SQL_NULL_HSTMT, 0, false);
  }

  Status reset(std::string_view reset_query) override {
    if (session_->closed) return Error::closed();
    if (session_->in_tx) {
      if (auto st = end(SQL_ROLLBACK); !st.ok()) return st;
    }
    return ConnectionImpl::reset(reset_query);
  }

  bool alive() const override { return !session_->closed && !session_->broken; }

  Status close() override {
    session_->close();
    return {};
  }

  const SessionPtr& session() const { return session_; }

 private:
  Status end(SQLSMALLINT how) {
    Session& s = *session_;
    if (s.closed) return Error::closed();
    if (!s.in_tx) return {};
    Status result;
    if (!ok(SQLEndTran(SQL_HANDLE_DBC, s.dbc, how))) {
      result = s.dbc_error();
      if (how == SQL_COMMIT && !s.broken) SQLEndTran(SQL_HANDLE_DBC, s.dbc, SQL_ROLLBACK);
    }
    s.in_tx = false;
    if (!s.broken) {
      if (auto st = s.set_autocommit(true); !st.ok() && result.ok()) result = st;
    }
    return result;
  }

  SessionPtr session_;
};

/// True when the driver manager narrows our UTF-16 on its way to the driver:
/// SQLNativeSqlW of a character beyond Latin-1 does not come back as sent.
/// unixODBC maps the W functions of a driver without them onto its narrow
/// ones a UTF-16 unit to a byte ("€" becomes 0xAC), losing the text.
bool narrows_text(SQLHDBC dbc) {
  std::u16string probe = u"SELECT '\u00e9\u20ac'";
  std::u16string out(64, u'\0');
  SQLINTEGER out_len = 0;
  if (!ok(SQLNativeSqlW(dbc, wide(probe), static_cast<SQLINTEGER>(probe.size()), wide(out),
                        static_cast<SQLINTEGER>(out.size()), &out_len))) {
    return false;  // no answer: trust the W entry points
  }
  out.resize(std::min(out.size(), static_cast<size_t>(std::max<SQLINTEGER>(out_len, 0))));
  return out != probe;
}

/// MariaDB/MySQL: the server's id of this connection, 0 if unanswered.
uint64_t connection_id(SQLHDBC dbc) {
  SQLHSTMT st = SQL_NULL_HSTMT;
  if (!ok(SQLAllocHandle(SQL_HANDLE_STMT, dbc, &st))) return 0;
  std::u16string sql = u"SELECT CONNECTION_ID()";
  SQLUBIGINT id = 0;
  SQLLEN ind = 0;
  if (!ok(SQLExecDirectW(st, wide(sql), static_cast<SQLINTEGER>(sql.size()))) ||
      !ok(SQLFetch(st)) || !ok(SQLGetData(st, 1, SQL_C_UBIGINT, &id, sizeof id, &ind)) ||
      ind == SQL_NULL_DATA) {
    id = 0;
  }
  SQLFreeStmt(st, SQL_CLOSE);
  SQLFreeHandle(SQL_HANDLE_STMT, st);
  return id;
}

/// SQLDriverConnectW on a thread of its own, waited for at most
/// login_timeout (+2 s for the driver's own): MariaDB ODBC 3.1 waits forever
/// for a server that accepts the TCP connection and never speaks, whatever
/// SQL_ATTR_LOGIN_TIMEOUT, CONN_TIMEOUT or READ_TIMEOUT say. A login given up
/// on is left to its thread, which frees the handle when the driver returns.
Status connect_bounded(Session& session, std::u16string text, const Options& options) {
  struct Pending {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    bool abandoned = false;
    SQLRETURN rc = SQL_ERROR;
    Diagnostic diag;
  };
  auto pending = std::make_shared<Pending>();
  std::thread([pending, dbc = session.dbc, text = std::move(text)]() mutable {
    SQLSMALLINT out_len = 0;
    const SQLRETURN rc =
        SQLDriverConnectW(dbc, nullptr, wide(text), static_cast<SQLSMALLINT>(text.size()), nullptr,
                          0, &out_len, SQL_DRIVER_NOPROMPT);
    Diagnostic d;
    if (!ok(rc)) d = diagnostic(SQL_HANDLE_DBC, dbc);
    std::lock_guard lock(pending->mu);
    if (pending->abandoned) {
      if (ok(rc)) SQLDisconnect(dbc);
      SQLFreeHandle(SQL_HANDLE_DBC, dbc);
      return;
    }
    pending->rc = rc;
    pending->diag = std::move(d);
    pending->done = true;
    pending->cv.notify_all();
  }).detach();
  {
    std::unique_lock lock(pending->mu);
    const auto limit = options.login_timeout + std::chrono::seconds(2);
    if (!pending->cv.wait_for(lock, limit, [&] { return pending->done; })) {
      pending->abandoned = true;
      session.dbc = SQL_NULL_HDBC;  // the login thread owns it now
      session.closed = true;
      Error e = Error::connection("no answer from the ODBC data source within " +
                                  std::to_string(limit.count()) + " s (login_timeout)");
      e.sqlstate = "08001";
      return e;
    }
  }
  if (!ok(pending->rc)) {
    Error e = map_diagnostic(Flavor::generic, pending->diag);
    e.code = db::Errc::connection;
    SQLFreeHandle(SQL_HANDLE_DBC, session.dbc);
    session.dbc = SQL_NULL_HDBC;
    session.closed = true;
    return e;
  }
  return {};
}

/// What the driver and data source are and can do: names and versions, narrow
/// text, flavor and dialect, cell re-reads, how to cancel, batch row counts.
void probe_driver(Session& s, const std::string& connection) {
  DriverInfo& info = s.info;
  info.driver_name = get_info(s.dbc, SQL_DRIVER_NAME);
  info.driver_version = get_info(s.dbc, SQL_DRIVER_VER);
  info.dbms_name = get_info(s.dbc, SQL_DBMS_NAME);
  info.dbms_version = get_info(s.dbc, SQL_DBMS_VER);
  s.narrow = narrows_text(s.dbc);
  info.narrow_text = s.narrow;
  s.flavor = flavor_of(info.dbms_name);
  info.flavor = std::string(to_string(s.flavor));
  s.dialect = dialect_of(s.flavor);
  SQLUINTEGER gd = 0;
  if (ok(SQLGetInfoW(s.dbc, SQL_GETDATA_EXTENSIONS, &gd, sizeof gd, nullptr))) {
    s.reread = (gd & SQL_GD_BLOCK) && (gd & SQL_GD_BOUND);
  }
  // MariaDB ODBC 3.1 advertises SQL_GD_BLOCK, but after SQLSetPos(SQL_POSITION)
  // inside a rowset its next SQLFetch ends the result early (500 rows read
  // back as 126): its results with an unbounded column are read a row at a
  // time (docs/odbc.md, quirk; cursor_test covers it). SQLite ODBC does not
  // advertise SQL_GD_BLOCK and answers "row out of range" when tried.
  if (s.flavor == Flavor::mariadb) s.reread = false;
  if (s.flavor == Flavor::sqlite) {
    // The driver the manager loaded (Debian's libsqlite3odbc): found among
    // the loaded objects by name, since unixODBC's SQL_DRIVER_HLIB is a
    // libltdl handle, not dlopen's, and SQL_DRIVER_NAME is not its file name.
    std::string path;
    dl_iterate_phdr(
        [](dl_phdr_info* i, size_t, void* out) {
          const std::string_view name = i->dlpi_name ? i->dlpi_name : "";
          if (name.find("sqlite3odbc") == std::string_view::npos) return 0;
          *static_cast<std::string*>(out) = name;
          return 1;
        },
        &path);
    if (void* lib = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
      s.driver_cancel = reinterpret_cast<SQLRETURN (*)(SQLHSTMT)>(dlsym(lib, "SQLCancel"));
      dlclose(lib);  // NOLOAD took a reference; the manager keeps its own
    }
    if (s.driver_cancel == nullptr) {
      spdlog::warn("odbc: {}: its SQLCancel not found; cancels go through the driver manager",
                   info.driver_name);
    }
  }
  if (s.flavor == Flavor::mariadb) {
    // Cancels go as KILL QUERY of this id (Session::kill_id).
    s.kill_id = connection_id(s.dbc);
    if (s.kill_id != 0) {
      s.kill_conn = *to_utf16(connection);
    } else {
      spdlog::warn("odbc: CONNECTION_ID() unanswered: cancels use SQLCancel");
    }
  }
  SQLUINTEGER parc = 0;
  if (ok(SQLGetInfoW(s.dbc, SQL_PARAM_ARRAY_ROW_COUNTS, &parc, sizeof parc, nullptr))) {
    s.batch_row_counts = parc == SQL_PARC_BATCH;
  }
  spdlog::debug(
      "odbc: connected through {} {} to {} {} (re-read of long cells: {}, narrow text: {})",
      info.driver_name, info.driver_version, info.dbms_name, info.dbms_version, s.reread, s.narrow);
  spdlog::debug(
      "odbc: connected through {} {} to {} {} (re-read of long cells: {}, narrow text: {})",
      info.driver_name, info.driver_version, info.dbms_name, info.dbms_version, s.reread, s.narrow);
}

}  // namespace

Result<db::Connection> open_connection(const std::string& connection, const Options& options) {
  SQLHENV env = environment();
  if (env == SQL_NULL_HENV) {
    return Error::connection("cannot allocate an ODBC environment (unixODBC)");
  }
  auto session = std::make_shared<Session>();
  session->options = options;
  if (options.query_timeout.count() > 0) watch_timeouts(session);
  if (!ok(SQLAllocHandle(SQL_HANDLE_DBC, env, &session->dbc))) {
    session->dbc = SQL_NULL_HDBC;
    return Error::connection("cannot allocate an ODBC connection handle");
  }
  SQLSetConnectAttrW(session->dbc, SQL_ATTR_LOGIN_TIMEOUT,
                     reinterpret_cast<SQLPOINTER>(
                         static_cast<SQLULEN>(std::max<int64_t>(options.login_timeout.count(), 1))),
                     SQL_IS_UINTEGER);
  auto wconn = to_utf16(connection);
  if (!wconn) {
    Error e = Error::connection("the ODBC connection string is not valid UTF-8");
    e.sqlstate = "22021";  // character_not_in_repertoire: the wide API cannot carry it
    return e;
  }
  if (auto st = connect_bounded(*session, std::move(*wconn), options); !st.ok()) {
    return st.take_error();
  }
  probe_driver(*session, connection);
  return db::Connection(std::make_unique<OdbcConnection>(std::move(session)));
}

FetchStats stats_of(const db::ConnectionImpl* impl) {
  const auto* c = dynamic_cast<const OdbcConnection*>(impl);
  return c ? c->session()->stats : FetchStats{};
}

DriverInfo info_of(const db::ConnectionImpl* impl) {
  const auto* c = dynamic_cast<const OdbcConnection*>(impl);
  return c ? c->session()->info : DriverInfo{};
}

}  // namespace wirepool::odbc
