// The MySQL driver's Session and the errors its objects answer.

#include "backends/mysql/mysql_internal.hpp"

namespace wirepool::mysql::detail {

Error protocol_error(std::string sqlstate, std::string message) {
  Error e;
  e.code = db::Errc::invalid_query;
  e.sqlstate = std::move(sqlstate);
  e.message = std::move(message);
  return e;
}

Error count_mismatch(size_t supplied, int required) {
  // PostgreSQL's wording and SQLSTATE (protocol_violation) for the same mistake.
  return protocol_error("08P01", "bind message supplies " + std::to_string(supplied) +
                                     " parameters, but the statement requires " +
                                     std::to_string(required));
}

Error busy_error() {
  Error e;
  e.code = db::Errc::busy;
  e.sqlstate = "55000";  // object_not_in_prerequisite_state
  e.message = "another command is already in progress on this connection";
  return e;
}

void Session::close() {
  std::lock_guard lock(cancel_mu);
  if (closed) return;
  if (active) active->abandon();
  active = nullptr;
  closed = true;
  mysql_close(mysql);  // detaches the statements still open
  // Detached: closing them now frees memory without touching the wire.
  for (MYSQL_STMT* s : deferred_close)
    mysql_stmt_close(s);
  deferred_close.clear();
}

/// Checks the caller's parameters against what the text uses.
std::optional<Error> check_params(db::Params params, int required) {
  for (const auto& p : params) {
    if (!p.name.empty()) {
      return protocol_error(
          "42P02", "the mysql driver binds positional parameters only, got \"" + p.name + "\"");
    }
  }
  if (params.size() != static_cast<size_t>(required)) {
    return count_mismatch(params.size(), required);
  }
  return std::nullopt;
}

Error multiple_commands() {
  // PostgreSQL's answer to the same request.
  return protocol_error("42601", "cannot insert multiple commands into a prepared statement");
}

}  // namespace wirepool::mysql::detail
