#pragma once
// ODBC driver internals that need no driver manager: the UTF-8 <-> UTF-16
// layer under the wide (W) entry points, parameter-marker rewriting, the
// connection string's keys, and which ODBC driver a connection reached.
// Unit-tested in tests/unit/backends/odbc/.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/db.hpp"
#include "sql/lexer.hpp"

namespace wirepool::odbc {

// ---- UTF-16 ------------------------------------------------------------------

/// UTF-8 -> UTF-16 (SQLWCHAR is a 16-bit unit in unixODBC, as on Windows).
/// nullopt for malformed UTF-8 (overlong forms, surrogates, beyond U+10FFFF).
std::optional<std::u16string> to_utf16(std::string_view utf8);
/// The same into `out` (its capacity reused); false for malformed UTF-8.
bool to_utf16(std::string_view utf8, std::u16string& out);
/// The same into `room` units at `out`: the units written, or kNoRoom for
/// malformed UTF-8 or a text that does not fit (`out` then holds anything).
/// Allocates nothing: a text parameter is converted into its bound buffer on
/// every execution (backends/odbc, bind_params).
inline constexpr size_t kNoRoom = static_cast<size_t>(-1);
size_t to_utf16(std::string_view utf8, char16_t* out, size_t room);
/// UTF-16 -> UTF-8, appended to `out`. A lone surrogate becomes U+FFFD.
void append_utf8(const char16_t* units, size_t count, std::string& out);
std::string to_utf8(const char16_t* units, size_t count);

// ---- parameter markers ---------------------------------------------------------

/// Statement text with PostgreSQL's $N markers rewritten to ODBC's ?, and for
/// each ? of the result the 0-based index of the caller's parameter it binds.
/// A repeated $N becomes another ? bound to the same value. Text without $N
/// keeps its ? markers, each bound in order.
struct Rewritten {
  std::string text;
  std::vector<size_t> binds;  ///< per ? in `text`: the caller's parameter index
  size_t needed = 0;          ///< parameters the text refers to (highest $N, or the ? count)
};
/// nullopt (with `error` set) when the text mixes $N and ? markers.
std::optional<Rewritten> rewrite_markers(std::string_view text, sql::Dialect d, db::Error* error);

// ---- connection strings ----------------------------------------------------------

/// The value of `key` (case-insensitive) in an ODBC connection string
/// ("KEY=value;KEY={braced;value}"), or nullopt.
std::optional<std::string> connection_value(std::string_view conn, std::string_view key);
/// The connection string with the values of PWD and PASSWORD replaced by "***".
std::string redact_connection(std::string_view conn);
/// What SQLDriverConnectW receives: the string as written; a bare name (no
/// '=') is a DSN name and becomes "DSN=<name>"; a password from
/// password_env/password_file is added as PWD={...} when the string has none.
/// With `user` (auth.mode passthrough) the string's UID, USER, PWD and PASSWORD
/// go and UID={user};PWD={password} take their place.
std::string full_connection_string(std::string_view conn, std::string_view password,
                                   std::string_view user = {});

// ---- the ODBC driver behind a connection ---------------------------------------

/// The ODBC drivers whose quirks this driver knows (docs/odbc.md).
enum class Flavor : uint8_t { generic, postgresql, mariadb, sqlite };
std::string_view to_string(Flavor f);

/// From SQLGetInfo's SQL_DBMS_NAME ("PostgreSQL", "MariaDB", "MySQL", "SQLite").
Flavor flavor_of(std::string_view dbms_name);
/// The lexer for the flavor's SQL: postgres, mysql, sqlite, else ansi.
sql::Dialect dialect_of(Flavor f);

}  // namespace wirepool::odbc
