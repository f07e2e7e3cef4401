#include "backends/mysql/mysql_errors.hpp"

namespace wirepool::mysql {

namespace {

using db::Errc;

struct Rule {
  unsigned errnum;
  std::string_view sqlstate;
  Errc code;
};

// Error numbers: MySQL's include/mysqld_error.h, MariaDB's include/mysqld_error.h,
// and the client's errmsg.h (2000+). First match wins.
constexpr Rule kRules[] = {
    {1062, "23505", Errc::constraint},     // ER_DUP_ENTRY
    {1586, "23505", Errc::constraint},     // ER_DUP_ENTRY_WITH_KEY_NAME
    {1451, "23503", Errc::constraint},     // ER_ROW_IS_REFERENCED_2
    {1452, "23503", Errc::constraint},     // ER_NO_REFERENCED_ROW_2
    {1216, "23503", Errc::constraint},     // ER_NO_REFERENCED_ROW
    {1217, "23503", Errc::constraint},     // ER_ROW_IS_REFERENCED
    {1048, "23502", Errc::constraint},     // ER_BAD_NULL_ERROR
    {1364, "23502", Errc::constraint},     // ER_NO_DEFAULT_FOR_FIELD (strict mode)
    {3819, "23514", Errc::constraint},     // ER_CHECK_CONSTRAINT_VIOLATED (MySQL 8)
    {4025, "23514", Errc::constraint},     // ER_CONSTRAINT_FAILED (MariaDB)
    {1064, "42601", Errc::invalid_query},  // ER_PARSE_ERROR
    {1149, "42601", Errc::invalid_query},  // ER_SYNTAX_ERROR
    {1146, "42P01", Errc::invalid_query},  // ER_NO_SUCH_TABLE
    {1051, "42P01", Errc::invalid_query},  // ER_BAD_TABLE_ERROR (DROP TABLE of a missing one)
    {1054, "42703", Errc::invalid_query},  // ER_BAD_FIELD_ERROR
    {1050, "42P07", Errc::invalid_query},  // ER_TABLE_EXISTS_ERROR
    {1060, "42701", Errc::invalid_query},  // ER_DUP_FIELDNAME
    {1052, "42702", Errc::invalid_query},  // ER_NON_UNIQ_ERROR (ambiguous column)
    {1305, "42883", Errc::invalid_query},  // ER_SP_DOES_NOT_EXIST (unknown function)
    {1049, "3D000", Errc::invalid_query},  // ER_BAD_DB_ERROR
    {1044, "42501", Errc::invalid_query},  // ER_DBACCESS_DENIED_ERROR
    {1142, "42501", Errc::invalid_query},  // ER_TABLEACCESS_DENIED_ERROR
    {1045, "28000", Errc::connection},     // ER_ACCESS_DENIED_ERROR (at login)
    {1210, "08P01", Errc::invalid_query},  // ER_WRONG_ARGUMENTS (e.g. bad parameter count)
    {1406, "22001", Errc::invalid_query},  // ER_DATA_TOO_LONG
    {1264, "22003", Errc::invalid_query},  // ER_WARN_DATA_OUT_OF_RANGE
    {1690, "22003", Errc::invalid_query},  // ER_DATA_OUT_OF_RANGE
    {1365, "22012", Errc::invalid_query},  // ER_DIVISION_BY_ZERO
    {1292, "22007", Errc::invalid_query},  // ER_TRUNCATED_WRONG_VALUE (bad date/number text)
    {1366, "22P02", Errc::invalid_query},  // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
    {1792, "25006", Errc::invalid_query},  // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
    {1568, "25001", Errc::invalid_query},  // ER_CANT_CHANGE_TX_ISOLATION (in a transaction)
    {1205, "55P03", Errc::busy},           // ER_LOCK_WAIT_TIMEOUT (MariaDB's NOWAIT too)
    {3572, "55P03", Errc::busy},           // ER_LOCK_NOWAIT (MySQL 8)
    {1213, "40P01", Errc::busy},           // ER_LOCK_DEADLOCK
    {1317, "57014", Errc::busy},           // ER_QUERY_INTERRUPTED (KILL QUERY)
    {3024, "57014", Errc::busy},           // ER_QUERY_TIMEOUT (MySQL max_execution_time)
    {1969, "57014", Errc::busy},           // ER_STATEMENT_TIMEOUT (MariaDB max_statement_time)
    {1040, "53300", Errc::connection},     // ER_CON_COUNT_ERROR
    {1053, "57P01", Errc::connection},     // ER_SERVER_SHUTDOWN
    {1927, "57P01", Errc::connection},     // ER_CONNECTION_KILLED (MariaDB)
    {2006, "08006", Errc::connection},     // CR_SERVER_GONE_ERROR
    {2013, "08006", Errc::connection},     // CR_SERVER_LOST
    {2055, "08006", Errc::connection},     // CR_SERVER_LOST_EXTENDED
    {2002, "08001", Errc::connection},     // CR_CONNECTION_ERROR
    {2003, "08001", Errc::connection},     // CR_CONN_HOST_ERROR
    {2005, "08001", Errc::connection},     // CR_UNKNOWN_HOST
    {2026, "08001", Errc::connection},     // CR_SSL_CONNECTION_ERROR
    {2014, "55000", Errc::busy},           // CR_COMMANDS_OUT_OF_SYNC
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
