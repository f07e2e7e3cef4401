#include "backends/mysql/mysql_errors.hpp"

#include "backends/mysql_errno.hpp"

namespace wirepool::mysql {

namespace {

using db::Errc;

struct Rule {
  unsigned errnum;
  std::string_view sqlstate;
  Errc code;
};

// The numbers the shared table (backends/mysql_errno.cpp, also used by the
// ODBC driver for MariaDB Connector/ODBC) does not have, mostly conditions of
// the client library, checked first. 1049 is in both: a `USE nosuchdb` on a
// live session must not mark the connection broken (at login open() makes
// every error a connection error anyway).
constexpr Rule kRules[] = {
    {1049, "3D000", Errc::invalid_query},  // ER_BAD_DB_ERROR
    {1052, "42702", Errc::invalid_query},  // ER_NON_UNIQ_ERROR (ambiguous column)
    {1210, "08P01", Errc::invalid_query},  // ER_WRONG_ARGUMENTS (e.g. bad parameter count)
    {1792, "25006", Errc::invalid_query},  // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
    {1568, "25001", Errc::invalid_query},  // ER_CANT_CHANGE_TX_ISOLATION (in a transaction)
    {1040, "53300", Errc::connection},     // ER_CON_COUNT_ERROR
    {1053, "57P01", Errc::connection},     // ER_SERVER_SHUTDOWN
    {2005, "08001", Errc::connection},     // CR_UNKNOWN_HOST
    {2026, "08001", Errc::connection},     // CR_SSL_CONNECTION_ERROR
    {2014, "55000", Errc::busy},           // CR_COMMANDS_OUT_OF_SYNC
    // CR_NET_PACKET_TOO_LARGE: a packet above MYSQL_OPT_MAX_ALLOWED_PACKET was
    // left half read, so the connection is unusable.
    {2020, "54000", Errc::connection},
    {2031, "08P01", Errc::invalid_query},  // CR_PARAMS_NOT_BOUND
    {2034, "08P01", Errc::invalid_query},  // CR_INVALID_PARAMETER_NO
};

bool generic(std::string_view sqlstate) {
  return sqlstate.size() != 5 || sqlstate == "HY000" || sqlstate == "42000" ||
         sqlstate == "23000" || sqlstate == "S1000" || sqlstate == "00000";
}

}  // namespace

bool is_connection_lost(unsigned errnum) {
  return errnum == 2006 || errnum == 2013 || errnum == 2055 || errnum == 1927 || errnum == 1053;
}

db::Error map_error(unsigned errnum, std::string_view sqlstate, std::string_view message) {
  db::Error e;
  e.vendor_code = errnum;
  e.message = std::string(message);
  for (const Rule& r : kRules) {
    if (r.errnum == errnum) {
      e.code = r.code;
      e.sqlstate = std::string(r.sqlstate);
      return e;
    }
  }
  if (auto m = mysql_errno::lookup(errnum)) {
    e.code = m->code;
    e.sqlstate = std::string(m->sqlstate);
    return e;
  }
  if (errnum >= 2000 && errnum < 3000) {
    // Other client-side errors (CR_*): the library or the link failed.
    e.code = Errc::connection;
    e.sqlstate = "08006";
    return e;
  }
  if (!generic(sqlstate)) {
    e.sqlstate = std::string(sqlstate);
    e.code = sqlstate.substr(0, 2) == "23" ? Errc::constraint : Errc::invalid_query;
    return e;
  }
  // Generic classes: keep the class, as PostgreSQL would name it.
  if (sqlstate == "23000") {
    e.code = Errc::constraint;
    e.sqlstate = "23000";  // integrity_constraint_violation
  } else if (sqlstate == "42000") {
    e.code = Errc::invalid_query;
    e.sqlstate = "42000";  // syntax_error_or_access_rule_violation
  } else {
    e.code = Errc::invalid_query;
    e.sqlstate = "XX000";  // internal_error: HY000 has no precise meaning
  }
  return e;
}

}  // namespace wirepool::mysql
