#include "backends/postgresql/postgresql_errors.hpp"

#include <algorithm>

namespace wirepool::postgresql {

using db::Errc;

db::Errc errc_for_sqlstate(std::string_view s) {
  if (s.size() != 5) return Errc::invalid_query;
  const std::string_view cls = s.substr(0, 2);
  if (cls == "23") return Errc::constraint;  // integrity_constraint_violation
  if (cls == "40") return Errc::busy;        // transaction_rollback: 40001, 40P01 deadlock
  if (cls == "55") return Errc::busy;        // object_not_in_prerequisite_state: 55P03
  if (s == "57014") return Errc::busy;       // query_canceled
  if (s.substr(0, 4) == "57P0") return Errc::connection;  // admin / crash shutdown, cannot connect
  if (cls == "08") return Errc::connection;               // connection_exception
  if (cls == "0A") return Errc::unsupported;              // feature_not_supported
  return Errc::invalid_query;
}

db::Error make_error(std::string sqlstate, std::string message, std::string detail,
                     std::string hint) {
  db::Error e;
  e.code = errc_for_sqlstate(sqlstate);
  e.sqlstate = std::move(sqlstate);
  e.message = std::move(message);
  e.detail = std::move(detail);
  e.hint = std::move(hint);
  return e;
}

std::string trim_message(std::string_view m) {
  while (!m.empty() && (m.back() == '\n' || m.back() == ' '))
    m.remove_suffix(1);
  return std::string(m);
}

std::string other_fields(const PGresult* r) {
  std::string out;
  if (!r) return out;
  static constexpr int kCodes[] = {PG_DIAG_STATEMENT_POSITION, PG_DIAG_INTERNAL_POSITION,
                                   PG_DIAG_INTERNAL_QUERY,     PG_DIAG_CONTEXT,
                                   PG_DIAG_SCHEMA_NAME,        PG_DIAG_TABLE_NAME,
                                   PG_DIAG_COLUMN_NAME,        PG_DIAG_DATATYPE_NAME,
                                   PG_DIAG_CONSTRAINT_NAME,    PG_DIAG_SOURCE_FILE,
                                   PG_DIAG_SOURCE_LINE,        PG_DIAG_SOURCE_FUNCTION};
  for (int code : kCodes) {
    const char* v = PQresultErrorField(r, code);
    if (!v || !*v) continue;
    out.push_back(static_cast<char>(code));
    out.append(v);
    out.push_back('\0');
  }
  return out;
}

db::Error error_from_result(const PGresult* r, bool connection_bad,
                            std::string_view connection_message) {
  auto field = [&](int code) -> std::string {
    const char* v = r ? PQresultErrorField(r, code) : nullptr;
    return v ? std::string(v) : std::string();
  };
  std::string sqlstate = field(PG_DIAG_SQLSTATE);
  std::string message = field(PG_DIAG_MESSAGE_PRIMARY);
  if (sqlstate.empty()) {
    // libpq's own error, with no ErrorResponse behind it: its whole text.
    const char* whole = r ? PQresultErrorMessage(r) : nullptr;
    std::string text = trim_message(whole && *whole ? std::string_view(whole) : connection_message);
    if (connection_bad) return connection_lost(text);
    return make_error("XX000", std::move(text));  // internal_error: libpq refused the request
  }
  if (message.empty()) {
    const char* whole = r ? PQresultErrorMessage(r) : nullptr;
    message = trim_message(whole ? whole : "");
  }
  db::Error e = make_error(std::move(sqlstate), std::move(message), field(PG_DIAG_MESSAGE_DETAIL),
                           field(PG_DIAG_MESSAGE_HINT));
  e.fields = other_fields(r);
  // The severity says whether the session survives: FATAL and PANIC end it
  // (whatever the class); an ERROR of class 08 (08P01, a malformed parameter)
  // leaves it usable.
  const std::string severity = field(PG_DIAG_SEVERITY_NONLOCALIZED);
  if (severity == "FATAL" || severity == "PANIC") {
    e.code = Errc::connection;
  } else if (severity == "ERROR" && e.code == Errc::connection) {
    e.code = Errc::invalid_query;
  }
  if (connection_bad) {
    e.code = Errc::connection;
    if (e.sqlstate.substr(0, 2) != "08" && e.sqlstate.substr(0, 4) != "57P0") e.sqlstate = "08006";
  }
  return e;
}

db::Error connection_lost(std::string_view libpq_message) {
  std::string m = trim_message(libpq_message);
  if (m.empty()) m = "connection to the PostgreSQL server lost";
  return db::Error::connection(std::move(m));
}

namespace {
bool is_sqlstate_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z');
}
}  // namespace

db::Error connect_error(std::string_view m) {
  // A server's message reads "<SEVERITY>:  <SQLSTATE>: <text>"; with several
  // hosts tried, the last one's counts.
  std::string sqlstate;
  size_t code_at = std::string_view::npos;
  for (size_t at = m.find(":  "); at != std::string_view::npos; at = m.find(":  ", at + 1)) {
    const size_t c = at + 3;
    if (c + 7 <= m.size() && m[c + 5] == ':' && m[c + 6] == ' ' &&
        std::all_of(m.begin() + static_cast<std::ptrdiff_t>(c),
                    m.begin() + static_cast<std::ptrdiff_t>(c + 5), is_sqlstate_char)) {
      code_at = c;
    }
  }
  std::string text;
  if (code_at != std::string_view::npos) {
    sqlstate = std::string(m.substr(code_at, 5));
    text.append(m.substr(0, code_at)).append(m.substr(code_at + 7));
  } else {
    text = std::string(m);
  }
  // Drop the LOCATION lines (source file and line of the server's code).
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string_view line(text.data() + pos, nl - pos);
    if (line.rfind("LOCATION:  ", 0) != 0) {
      if (!out.empty()) out.push_back('\n');
      out.append(line);
    }
    pos = nl + 1;
  }
  db::Error e = db::Error::connection(trim_message(out));
  e.sqlstate =
      sqlstate.empty() ? "08001" : sqlstate;  // sqlclient_unable_to_establish_sqlconnection
  return e;
}

db::Error busy_error() {
  db::Error e;
  e.code = Errc::busy;
  e.sqlstate = "55000";  // object_not_in_prerequisite_state
  e.message = "another command is already in progress on this connection";
  e.hint = "close the open result or COPY stream first";
  return e;
}

db::Error would_block_error() {
  db::Error e;
  e.code = Errc::would_block;
  e.sqlstate.clear();
  e.message = "would block";
  return e;
}

}  // namespace wirepool::postgresql
