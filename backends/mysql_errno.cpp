#include "backends/mysql_errno.hpp"

namespace wirepool::mysql_errno {

namespace {

using db::Errc;

struct Entry {
  int64_t number;
  Mapping mapping;
};

// Server numbers from MariaDB 10.11 / MySQL 8 errmsg; client numbers (2xxx)
// from Connector/C. PostgreSQL's SQLSTATE for the same condition.
constexpr Entry kTable[] = {
    {1062, {Errc::constraint, "23505"}},     // ER_DUP_ENTRY
    {1586, {Errc::constraint, "23505"}},     // ER_DUP_ENTRY_WITH_KEY_NAME
    {1216, {Errc::constraint, "23503"}},     // ER_NO_REFERENCED_ROW
    {1217, {Errc::constraint, "23503"}},     // ER_ROW_IS_REFERENCED
    {1451, {Errc::constraint, "23503"}},     // ER_ROW_IS_REFERENCED_2
    {1452, {Errc::constraint, "23503"}},     // ER_NO_REFERENCED_ROW_2
    {1048, {Errc::constraint, "23502"}},     // ER_BAD_NULL_ERROR
    {1364, {Errc::constraint, "23502"}},     // ER_NO_DEFAULT_FOR_FIELD (strict mode)
    {3819, {Errc::constraint, "23514"}},     // MySQL ER_CHECK_CONSTRAINT_VIOLATED
    {4025, {Errc::constraint, "23514"}},     // MariaDB ER_CONSTRAINT_FAILED
    {1064, {Errc::invalid_query, "42601"}},  // ER_PARSE_ERROR
    {1149, {Errc::invalid_query, "42601"}},  // ER_SYNTAX_ERROR
    {1136, {Errc::invalid_query, "42601"}},  // ER_WRONG_VALUE_COUNT_ON_ROW
    {1146, {Errc::invalid_query, "42P01"}},  // ER_NO_SUCH_TABLE
    {1051, {Errc::invalid_query, "42P01"}},  // ER_BAD_TABLE_ERROR (DROP TABLE)
    {1054, {Errc::invalid_query, "42703"}},  // ER_BAD_FIELD_ERROR
    {1050, {Errc::invalid_query, "42P07"}},  // ER_TABLE_EXISTS_ERROR
    {1060, {Errc::invalid_query, "42701"}},  // ER_DUP_FIELDNAME
    {1305, {Errc::invalid_query, "42883"}},  // ER_SP_DOES_NOT_EXIST
    {1044, {Errc::invalid_query, "42501"}},  // ER_DBACCESS_DENIED_ERROR
    {1142, {Errc::invalid_query, "42501"}},  // ER_TABLEACCESS_DENIED_ERROR
    {1143, {Errc::invalid_query, "42501"}},  // ER_COLUMNACCESS_DENIED_ERROR
    {1365, {Errc::invalid_query, "22012"}},  // ER_DIVISION_BY_ZERO
    {1264, {Errc::invalid_query, "22003"}},  // ER_WARN_DATA_OUT_OF_RANGE
    {1690, {Errc::invalid_query, "22003"}},  // ER_DATA_OUT_OF_RANGE
    {1406, {Errc::invalid_query, "22001"}},  // ER_DATA_TOO_LONG
    {1366, {Errc::invalid_query, "22P02"}},  // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
    {1292, {Errc::invalid_query, "22007"}},  // ER_TRUNCATED_WRONG_VALUE (bad datetime)
    {1205, {Errc::busy, "55P03"}},           // ER_LOCK_WAIT_TIMEOUT (MariaDB: NOWAIT too)
    {3572, {Errc::busy, "55P03"}},           // MySQL ER_LOCK_NOWAIT
    {1213, {Errc::busy, "40P01"}},           // ER_LOCK_DEADLOCK
    {1317, {Errc::busy, "57014"}},           // ER_QUERY_INTERRUPTED (KILL QUERY)
    {3024, {Errc::busy, "57014"}},           // ER_QUERY_TIMEOUT (max_execution_time)
    {1969, {Errc::busy, "57014"}},           // MariaDB ER_STATEMENT_TIMEOUT
    {1045, {Errc::connection, "28P01"}},     // ER_ACCESS_DENIED_ERROR
    {1698, {Errc::connection, "28P01"}},     // ER_ACCESS_DENIED_NO_PASSWORD_ERROR
    {1049, {Errc::connection, "3D000"}},     // ER_BAD_DB_ERROR
    {1927, {Errc::connection, "08006"}},     // MariaDB ER_CONNECTION_KILLED
    {2002, {Errc::connection, "08006"}},     // CR_CONNECTION_ERROR
    {2003, {Errc::connection, "08006"}},     // CR_CONN_HOST_ERROR
    {2006, {Errc::connection, "08006"}},     // CR_SERVER_GONE_ERROR
    {2013, {Errc::connection, "08006"}},     // CR_SERVER_LOST
    {2055, {Errc::connection, "08006"}},     // CR_SERVER_LOST_EXTENDED
};

}  // namespace

std::optional<Mapping> lookup(int64_t error_number) {
  for (const auto& e : kTable) {
    if (e.number == error_number) return e.mapping;
  }
  return std::nullopt;
}

}  // namespace wirepool::mysql_errno
