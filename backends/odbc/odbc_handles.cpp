// The ODBC environment, diagnostics and errors, the connection handle
// (Session: close, errors, autocommit) and statement handles (Handle).

#include <spdlog/spdlog.h>

#include <algorithm>

#include "backends/odbc/odbc_internal.hpp"

namespace wirepool::odbc::detail {

SQLHENV environment() {
  static SQLHENV env = [] {
    SQLHENV h = SQL_NULL_HENV;
    if (!ok(SQLAllocHandle(SQL_HANDLE_ENV, SQL_NULL_HANDLE, &h))) return SQLHENV{SQL_NULL_HENV};
    SQLSetEnvAttr(h, SQL_ATTR_ODBC_VERSION, reinterpret_cast<SQLPOINTER>(SQL_OV_ODBC3), 0);
    return h;
  }();
  return env;
}

Diagnostic diagnostic(SQLSMALLINT type, SQLHANDLE handle, bool narrow) {
  Diagnostic d;
  SQLINTEGER native = 0;
  SQLSMALLINT len = 0;
  SQLRETURN rc;
  if (narrow) {
    SQLCHAR state[6] = {};
    std::string msg(1024, '\0');
    rc = SQLGetDiagRec(type, handle, 1, state, &native, reinterpret_cast<SQLCHAR*>(msg.data()),
                       static_cast<SQLSMALLINT>(msg.size()), &len);
    if (ok(rc)) {
      d.sqlstate.assign(reinterpret_cast<const char*>(state), 5);
      d.native = native;
      msg.resize(std::min(msg.size() - 1, static_cast<size_t>(std::max<SQLSMALLINT>(len, 0))));
      d.message = std::move(msg);
      return d;
    }
  } else {
    SQLWCHAR state[6] = {};
    std::u16string msg(1024, u'\0');
    rc = SQLGetDiagRecW(type, handle, 1, state, &native, wide(msg),
                        static_cast<SQLSMALLINT>(msg.size()), &len);
    if (rc == SQL_SUCCESS_WITH_INFO && len >= static_cast<SQLSMALLINT>(msg.size())) {
      msg.assign(static_cast<size_t>(len) + 1, u'\0');
      rc = SQLGetDiagRecW(type, handle, 1, state, &native, wide(msg),
                          static_cast<SQLSMALLINT>(msg.size()), &len);
    }
    if (ok(rc)) {
      d.sqlstate = to_utf8(reinterpret_cast<const char16_t*>(state), 5);
      d.native = native;
      d.message = to_utf8(reinterpret_cast<const char16_t*>(msg.data()),
                          std::min(static_cast<size_t>(std::max<SQLSMALLINT>(len, 0)), msg.size()));
      return d;
    }
  }
  d.sqlstate = "HY000";
  d.message = "the ODBC driver reported an error without a diagnostic record";
  d.missing = true;
  return d;
}

Error protocol_error(std::string sqlstate, std::string message) {
  Error e;
  e.code = db::Errc::invalid_query;
  e.sqlstate = std::move(sqlstate);
  e.message = std::move(message);
  return e;
}

std::string get_info(SQLHDBC dbc, SQLUSMALLINT what) {
  std::u16string buf(256, u'\0');
  SQLSMALLINT len = 0;
  if (!ok(SQLGetInfoW(dbc, what, buf.data(), static_cast<SQLSMALLINT>(buf.size() * 2), &len))) {
    return {};
  }
  return to_utf8(buf.data(),
                 std::min(buf.size(), static_cast<size_t>(std::max<SQLSMALLINT>(len, 0)) / 2));
}

Error user_cancel() {
  Error e;
  e.code = db::Errc::busy;
  e.sqlstate = "57014";  // query_canceled
  e.message = "canceling statement due to user request";
  return e;
}

Error statement_timeout(const Options& o) {
  Error e;
  e.code = db::Errc::busy;
  e.sqlstate = "57014";  // query_canceled
  e.message = "canceling statement due to statement timeout";
  e.detail =
      "the odbc driver's query_timeout (" + std::to_string(o.query_timeout.count()) + " s) passed";
  return e;
}

Error count_mismatch(size_t supplied, size_t required) {
  return protocol_error("08P01", "bind message supplies " + std::to_string(supplied) +
                                     " parameters, but the statement requires " +
                                     std::to_string(required));
}

void Session::close() {
  std::lock_guard lock(mu);
  if (closed) return;
  closed = true;
  if (dbc == SQL_NULL_HDBC) return;
  if (in_tx && !broken) {
    SQLEndTran(SQL_HANDLE_DBC, dbc, SQL_ROLLBACK);
    in_tx = false;
  }
  SQLRETURN rc = SQLDisconnect(dbc);
  if (!ok(rc)) {
    const Diagnostic d = diagnostic(SQL_HANDLE_DBC, dbc, narrow);
    if (d.sqlstate == "25000") {
      SQLEndTran(SQL_HANDLE_DBC, dbc, SQL_ROLLBACK);
      rc = SQLDisconnect(dbc);
    }
    if (!ok(rc)) spdlog::debug("odbc: SQLDisconnect: {} {}", d.sqlstate, d.message);
  }
  SQLFreeHandle(SQL_HANDLE_DBC, dbc);
  dbc = SQL_NULL_HDBC;
}

Error Session::error(SQLSMALLINT type, SQLHANDLE handle) {
  Diagnostic d = diagnostic(type, handle, narrow);
  // A SQLCancel that reached the statement just as it finished: psqlODBC
  // and MariaDB ODBC then close its cursor (ODBC 2's SQLCancel of an idle
  // statement), and the next call answers HY010, function sequence error;
  // SQLite ODBC's interrupted statement fails without a record. The client
  // asked for the cancel: it is answered as one.
  if (type == SQL_HANDLE_STMT && (d.sqlstate == "HY010" || d.missing) &&
      cancelled.load() == handle) {
    d.sqlstate = "HY008";
    d.message = "the statement was cancelled";
  }
  Error e = map_diagnostic(flavor, d);
  if (e.code == db::Errc::connection) broken = true;
  return e;
}

Status Session::set_autocommit(bool on) {
  const SQLRETURN rc = SQLSetConnectAttrW(
      dbc, SQL_ATTR_AUTOCOMMIT,
      reinterpret_cast<SQLPOINTER>(on ? SQL_AUTOCOMMIT_ON : SQL_AUTOCOMMIT_OFF), SQL_IS_UINTEGER);
  if (!ok(rc)) return dbc_error();
  return {};
}

/// Statement text to the driver: UTF-16 through the W entry point, or UTF-8
/// through the narrow one for a driver without W entry points.
SQLRETURN exec_direct(Session& s, SQLHSTMT h, const std::string& utf8, const std::u16string& u16) {
  if (s.narrow) {
    std::string t = utf8;
    return SQLExecDirect(h, reinterpret_cast<SQLCHAR*>(t.data()),
                         static_cast<SQLINTEGER>(t.size()));
  }
  std::u16string t = u16;
  return SQLExecDirectW(h, wide(t), static_cast<SQLINTEGER>(t.size()));
}

SQLRETURN prepare_text(Session& s, SQLHSTMT h, const std::string& utf8, const std::u16string& u16) {
  if (s.narrow) {
    std::string t = utf8;
    return SQLPrepare(h, reinterpret_cast<SQLCHAR*>(t.data()), static_cast<SQLINTEGER>(t.size()));
  }
  std::u16string t = u16;
  return SQLPrepareW(h, wide(t), static_cast<SQLINTEGER>(t.size()));
}

Status Handle::alloc() {
  if (!ok(SQLAllocHandle(SQL_HANDLE_STMT, session->dbc, &h))) {
    h = SQL_NULL_HSTMT;
    return session->dbc_error();
  }
  if (session->driver_cancel != nullptr) {
    SQLHSTMT d = h;  // in: the driver manager's handle; out: the driver's
    if (ok(SQLGetInfoW(session->dbc, SQL_DRIVER_HSTMT, &d, sizeof d, nullptr))) drv = d;
  }
  if (session->options.query_timeout.count() > 0) {
    SQLSetStmtAttrW(
        h, SQL_ATTR_QUERY_TIMEOUT,
        reinterpret_cast<SQLPOINTER>(static_cast<SQLULEN>(session->options.query_timeout.count())),
        SQL_IS_UINTEGER);
  }
  return {};
}

void Handle::free() {
  std::lock_guard lock(session->mu);
  // SQLDisconnect freed the statements of a closed connection already.
  // SQL_CLOSE first: psqlODBC frees the result of a describe
  // (SQLNumResultCols after SQLPrepare) there, and leaks it (LeakSanitizer)
  // when a statement prepared and described but never run goes straight to
  // SQLFreeHandle (docs/odbc.md, quirks).
  if (h != SQL_NULL_HSTMT && !session->closed) {
    SQLFreeStmt(h, SQL_CLOSE);
    SQLFreeHandle(SQL_HANDLE_STMT, h);
  }
  h = SQL_NULL_HSTMT;
  bound.clear();
  // The larger block stays with the session for the next statement.
  if (rows.size > session->spare_rows.size && rows.size <= Session::kSpareRowsMax &&
      !session->closed) {
    session->spare_rows = std::move(rows);
  }
  rows = {};
}

}  // namespace wirepool::odbc::detail
