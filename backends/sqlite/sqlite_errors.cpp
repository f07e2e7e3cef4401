#include "backends/sqlite/sqlite_errors.hpp"

#include <sqlite3.h>

#include <optional>

namespace wirepool::sqlite {

namespace {

using db::Errc;

struct MessageRule {
  std::string_view needle;  // found anywhere in sqlite3_errmsg()
  std::string_view sqlstate;
};

// SQLITE_ERROR carries its detail only in the message. First match wins.
constexpr MessageRule kErrorRules[] = {
    {"syntax error", "42601"},
    {"incomplete input", "42601"},
    {"unrecognized token", "42601"},
    {"values were supplied", "42601"},  // "table t has 2 columns but 3 values were supplied"
    {" values for ", "42601"},          // "2 values for 1 columns"
    {"no such table", "42P01"},
    {"no such column", "42703"},
    {"no such function", "42883"},
    {"wrong number of arguments to function", "42883"},
    {"ambiguous column name", "42702"},
    {"already exists", "42P07"},  // table / index / view / trigger
    {"no such index", "42704"},
    {"no such view", "42P01"},
    {"no such trigger", "42704"},
    {"no such collation sequence", "42704"},
    {"no such savepoint", "3B001"},
    {"cannot start a transaction within a transaction", "25001"},
    {"no transaction is active", "25P01"},
    {"too many SQL variables", "54023"},
    {"too many levels of trigger recursion", "54001"},
    {"cannot modify", "42809"},  // "cannot modify v because it is a view"
    {"may not be modified", "42809"},
    {"not authorized", "42501"},
};

db::Error make(Errc code, std::string_view sqlstate, int extended, std::string_view message) {
  db::Error e;
  e.code = code;
  e.sqlstate = std::string(sqlstate);
  e.vendor_code = extended;
  e.message = std::string(message);
  return e;
}

/// A catalog relation or function the SQLite catalog (sqlite_catalog.cpp) does
/// not cover: 0A000 naming it, rather than an error that blames the user's SQL.
std::optional<db::Error> not_covered(int ext, std::string_view msg) {
  static constexpr std::string_view kTable = "no such table: ", kFunction = "no such function: ";
  const bool table = msg.rfind(kTable, 0) == 0, function = msg.rfind(kFunction, 0) == 0;
  if (!table && !function) return std::nullopt;
  const std::string_view name = msg.substr(table ? kTable.size() : kFunction.size());
  auto starts = [&](std::string_view p) {
    return name.size() >= p.size() &&
           sqlite3_strnicmp(name.data(), p.data(), static_cast<int>(p.size())) == 0;
  };
  static constexpr std::string_view kPgFunctions[] = {"pg_",
                                                      "format_type",
                                                      "obj_description",
                                                      "col_description",
                                                      "current_setting",
                                                      "set_config",
                                                      "array_",
                                                      "unnest",
                                                      "generate_subscripts",
                                                      "to_regclass",
                                                      "to_regtype",
                                                      "string_to_array",
                                                      "regexp_",
                                                      "age",
                                                      "txid_",
                                                      "json_build_",
                                                      "jsonb_",
                                                      "has_"};
  bool ours = table ? starts("pg_") || starts("information_schema.") : false;
  for (auto f : kPgFunctions)
    ours = ours || (function && starts(f));
  if (!ours) return std::nullopt;
  db::Error e = make(Errc::invalid_query, "0A000", ext,
                     std::string(table ? "relation " : "function ") + std::string(name) +
                         " is not covered by wirepool's PostgreSQL catalog on SQLite");
  e.detail = "SQLite: " + std::string(msg);
  e.hint = "See docs/catalog.md for what the catalog covers.";
  return e;
}

}  // namespace

db::Error map_error(int ext, std::string_view msg) {
  if ((ext & 0xff) == SQLITE_ERROR) {
    if (auto e = not_covered(ext, msg)) return *e;
  }
  switch (ext) {
    case SQLITE_CONSTRAINT_UNIQUE:
    case SQLITE_CONSTRAINT_PRIMARYKEY:
      return make(Errc::constraint, "23505", ext, msg);  // unique_violation
    case SQLITE_CONSTRAINT_FOREIGNKEY:
      return make(Errc::constraint, "23503", ext, msg);  // foreign_key_violation
    case SQLITE_CONSTRAINT_NOTNULL:
      return make(Errc::constraint, "23502", ext, msg);  // not_null_violation
    case SQLITE_CONSTRAINT_CHECK:
      return make(Errc::constraint, "23514", ext, msg);  // check_violation
    case SQLITE_CONSTRAINT_DATATYPE:  // STRICT table: "cannot store TEXT value in INTEGER column"
      return make(Errc::invalid_query, "22P02", ext, msg);
    case SQLITE_BUSY_SNAPSHOT:  // a deferred reader's snapshot went stale: retry the transaction
      return make(Errc::busy, "40001", ext, msg);
    default:
      break;
  }
  switch (ext & 0xff) {
    case SQLITE_CONSTRAINT:
      return make(Errc::constraint, "23000", ext, msg);  // integrity_constraint_violation
    case SQLITE_ERROR:
      for (const auto& rule : kErrorRules) {
        if (msg.find(rule.needle) != std::string_view::npos) {
          return make(Errc::invalid_query, rule.sqlstate, ext, msg);
        }
      }
      return make(Errc::invalid_query, "42000", ext, msg);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_PROTOCOL:
      return make(Errc::busy, "55P03", ext, msg);  // lock_not_available
    case SQLITE_INTERRUPT: {
      db::Error e = make(Errc::busy, "57014", ext, "canceling statement due to user request");
      e.detail = "SQLite: " + std::string(msg);
      return e;
    }
    case SQLITE_READONLY:
      return make(Errc::invalid_query, "25006", ext, msg);  // read_only_sql_transaction
    case SQLITE_FULL:
      return make(Errc::invalid_query, "53100", ext, msg);  // disk_full
    case SQLITE_NOMEM:
      return make(Errc::invalid_query, "53200", ext, msg);  // out_of_memory
    case SQLITE_TOOBIG:
      return make(Errc::invalid_query, "54000", ext, msg);  // program_limit_exceeded
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return make(Errc::invalid_query, "XX001", ext, msg);  // data_corrupted
    case SQLITE_CANTOPEN:
      return make(Errc::connection, "08006", ext, msg);  // connection_failure
    case SQLITE_IOERR:
    case SQLITE_NOLFS:
      return make(Errc::connection, "58030", ext, msg);  // io_error
    case SQLITE_MISMATCH:
      return make(Errc::invalid_query, "22023", ext, msg);  // invalid_parameter_value
    case SQLITE_RANGE:
      return make(Errc::invalid_query, "42P02", ext, msg);  // undefined_parameter
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return make(Errc::invalid_query, "42501", ext, msg);  // insufficient_privilege
    case SQLITE_ABORT:
      return make(Errc::busy, "40000", ext, msg);  // transaction_rollback
    case SQLITE_SCHEMA:
      return make(Errc::busy, "40001", ext, msg);  // the schema changed: retry
    default:
      return make(Errc::invalid_query, "XX000", ext, msg);  // internal_error
  }
}

}  // namespace wirepool::sqlite
