#include "backends/sqlite/sqlite_pg_functions.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <string>

namespace wirepool::sqlite {

namespace {

void text_result(sqlite3_context* ctx, int, sqlite3_value**) {
  const auto* text = static_cast<const std::string*>(sqlite3_user_data(ctx));
  sqlite3_result_text(ctx, text->data(), static_cast<int>(text->size()), SQLITE_STATIC);
}

// SQLAlchemy, psycopg and PgJDBC parse "PostgreSQL <major>.<minor>" from version().
const std::string& version_text() {
  static const std::string v =
      std::string("PostgreSQL 15.0 (wirepool, SQLite ") + sqlite3_libversion() + ")";
  return v;
}

void backend_pid(sqlite3_context* ctx, int, sqlite3_value**) {
  sqlite3_result_int64(ctx, static_cast<sqlite3_int64>(getpid()));
}

}  // namespace

int register_pg_functions(sqlite3* db) {
  static const std::string database = "main";
  static const std::string schema = "public";
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS;
  struct Fn {
    const char* name;
    const std::string* text;
  };
  for (const Fn& f : {Fn{"version", &version_text()}, Fn{"current_database", &database},
                      Fn{"current_schema", &schema}}) {
    const int rc =
        sqlite3_create_function_v2(db, f.name, 0, flags, const_cast<std::string*>(f.text),
                                   text_result, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return rc;
  }
  return sqlite3_create_function_v2(db, "pg_backend_pid", 0, SQLITE_UTF8 | SQLITE_INNOCUOUS,
                                    nullptr, backend_pid, nullptr, nullptr, nullptr);
}

}  // namespace wirepool::sqlite
