#include "backends/odbc/odbc_errors.hpp"

#include <sqlite3.h>

#include "backends/mysql_errno.hpp"
#include "backends/sqlite/sqlite_errors.hpp"

namespace wirepool::odbc {

namespace {

using db::Errc;

db::Error make(Errc code, std::string_view sqlstate, const Diagnostic& d) {
  db::Error e;
  e.code = code;
  e.sqlstate = std::string(sqlstate);
  e.vendor_code = d.native;
  e.message = std::string(strip_prefixes(d.message));
  return e;
}

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

/// The portable error of a precise SQLSTATE, by class (PostgreSQL's table).
Errc errc_of_class(std::string_view s) {
  const std::string_view cls = s.substr(0, 2);
  if (cls == "23") return Errc::constraint;
  if (cls == "08") return Errc::connection;
  if (cls == "40") return Errc::busy;
  if (cls == "0A") return Errc::unsupported;
  if (s == "55P03" || s == "57014" || s == "55006") return Errc::busy;
  if (s == "57P01" || s == "57P02" || s == "57P03" || s == "53300") return Errc::connection;
  return Errc::invalid_query;
}

/// SQLite ODBC: the native code is SQLite's primary result code (19 for every
/// constraint); the extended code is recovered from SQLite's own message.
db::Error map_sqlite(const Diagnostic& d, std::string_view msg) {
  int code = static_cast<int>(d.native);
  if (code == SQLITE_CONSTRAINT) {
    if (contains(msg, "UNIQUE constraint failed")) {
      code = SQLITE_CONSTRAINT_UNIQUE;
    } else if (contains(msg, "NOT NULL constraint failed")) {
      code = SQLITE_CONSTRAINT_NOTNULL;
    } else if (contains(msg, "FOREIGN KEY constraint failed")) {
      code = SQLITE_CONSTRAINT_FOREIGNKEY;
    } else if (contains(msg, "CHECK constraint failed")) {
      code = SQLITE_CONSTRAINT_CHECK;
    }
  }
  db::Error e = sqlite::map_error(code, msg);
  e.vendor_code = d.native;
  return e;
}

}  // namespace

std::string_view strip_prefixes(std::string_view m) {
  while (!m.empty() && m.front() == '[') {
    const size_t close = m.find(']');
    if (close == std::string_view::npos) break;
    m.remove_prefix(close + 1);
  }
  while (!m.empty() && m.front() == ' ')
    m.remove_prefix(1);
  return m;
}

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/// The server's own text out of what a driver wraps around it:
///   psqlODBC: "ERROR: <message>\nDETAIL: <detail>;\nError while executing the query"
///   SQLite ODBC: "<SQLite's message> (<code>)"
void clean_message(Flavor flavor, const Diagnostic& d, db::Error& e) {
  std::string_view m = e.message;
  if (flavor == Flavor::postgresql) {
    constexpr std::string_view kTail = "\nError while executing the query";
    if (ends_with(m, kTail)) m.remove_suffix(kTail.size());
    if (ends_with(m, ";")) m.remove_suffix(1);
    for (std::string_view severity : {"ERROR: ", "FATAL: ", "PANIC: "}) {
      if (m.substr(0, severity.size()) == severity) m.remove_prefix(severity.size());
    }
    std::string_view hint;
    if (const size_t h = m.find("\nHINT: "); h != std::string_view::npos) {
      hint = m.substr(h + 7);
      m = m.substr(0, h);
    }
    std::string_view detail;
    if (const size_t dpos = m.find("\nDETAIL: "); dpos != std::string_view::npos) {
      detail = m.substr(dpos + 9);
      m = m.substr(0, dpos);
    }
    if (e.detail.empty()) e.detail = std::string(detail);
    if (e.hint.empty()) e.hint = std::string(hint);
  } else if (flavor == Flavor::sqlite && d.native > 0) {
    const std::string suffix = " (" + std::to_string(d.native) + ")";
    if (ends_with(m, suffix)) m.remove_suffix(suffix.size());
  }
  e.message = std::string(m);
}

db::Error map_raw(Flavor flavor, const Diagnostic& d);

}  // namespace

db::Error map_diagnostic(Flavor flavor, const Diagnostic& d) {
  Diagnostic cleaned = d;
  db::Error probe;
  probe.message = std::string(strip_prefixes(d.message));
  clean_message(flavor, d, probe);
  cleaned.message = probe.message;
  db::Error e = map_raw(flavor, cleaned);
  if (e.detail.empty()) e.detail = probe.detail;
  if (e.hint.empty()) e.hint = probe.hint;
  return e;
}

namespace {

db::Error map_raw(Flavor flavor, const Diagnostic& d) {
  const std::string_view s = d.sqlstate;
  const std::string_view msg = strip_prefixes(d.message);
  // What the driver manager or any driver says the same way.
  if (s == "HY008") {  // operation cancelled (SQLCancel)
    db::Error e = make(Errc::busy, "57014", d);
    e.detail = e.message;
    e.message = "canceling statement due to user request";
    return e;
  }
  if (s == "HYT00" || s == "HYT01") {  // query or connection timeout
    db::Error e = make(s == "HYT00" ? Errc::busy : Errc::connection, "57014", d);
    e.detail = e.message;
    e.message = "canceling statement due to statement timeout";
    return e;
  }
  if (s.substr(0, 2) == "08" || s == "40003") return make(Errc::connection, "08006", d);
  if (s == "IM001" || s == "HYC00") return make(Errc::unsupported, "0A000", d);
  if (s.substr(0, 2) == "IM") return make(Errc::connection, "08001", d);  // driver not loaded
  if (s == "28000") return make(Errc::connection, "28P01", d);
  if (s == "07002" || s == "07001") return make(Errc::invalid_query, "08P01", d);  // count

  switch (flavor) {
    case Flavor::mariadb:
      if (d.native > 0) {
        if (auto m = mysql_errno::lookup(d.native)) return make(m->code, m->sqlstate, d);
      }
      break;
    case Flavor::sqlite:
      // sqliteodbc answers HY000/S1000 for SQLite errors; its own checks
      // ("only one SQL statement allowed") carry native -1 and fall through.
      if ((s == "HY000" || s == "S1000") && d.native > 0) return map_sqlite(d, msg);
      break;
    case Flavor::postgresql:
      // psqlODBC passes PostgreSQL's SQLSTATE; a lost server is HY000 with libpq's text.
      if (contains(msg, "server closed the connection") || contains(msg, "no connection to") ||
          contains(msg, "could not send") || contains(msg, "could not receive") ||
          contains(msg, "terminating connection")) {
        return make(Errc::connection, "08006", d);
      }
      break;
    case Flavor::generic:
      break;
  }
  // ODBC 3 spellings of PostgreSQL's SQLSTATEs.
  if (s == "42S01") return make(Errc::invalid_query, "42P07", d);
  if (s == "42S02") return make(Errc::invalid_query, "42P01", d);
  if (s == "42S22") return make(Errc::invalid_query, "42703", d);
  if (s == "42S21") return make(Errc::invalid_query, "42701", d);
  if (s == "42S11" || s == "42S12") return make(Errc::invalid_query, "42704", d);
  if (s == "HY000" || s == "S1000" || s.empty()) return make(Errc::invalid_query, "XX000", d);
  if (s.substr(0, 2) == "HY" || s.substr(0, 2) == "S1" || s.substr(0, 2) == "01") {
    // Driver-side failures (function sequence, buffer, attribute): no server SQLSTATE.
    return make(Errc::invalid_query, "XX000", d);
  }
  return make(errc_of_class(s), s, d);
}

}  // namespace

}  // namespace wirepool::odbc
