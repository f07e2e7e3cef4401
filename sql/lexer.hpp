#pragma once
// SQL lexing shared by drivers and the session layer: statement splitting,
// command verbs and parameter markers, one lexer per dialect. wirepool rewrites
// markers and splits text; it never rewrites SQL otherwise.
//
// What each dialect treats as "not code" (where a ';' or a marker is not one):
//   postgres: '...' ('' escape; E'...' with backslash escapes), "..." identifiers,
//             $tag$...$tag$ bodies, -- and nested /* */ comments
//   sqlite:   '...', "...", [...], `...`, -- and /* */ comments; CREATE TRIGGER ... END
//             bodies hold semicolons (as sqlite3_complete() knows)
//   mysql:    '...' and "..." with backslash escapes, `...`, #, "-- " and /* */
//   tsql:     '...', "...", [...] (]] escape), -- and /* */ (nested)
//   ansi:     '...', "...", -- and /* */ (the ODBC default)

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wirepool::sql {

enum class Dialect : uint8_t { ansi, postgres, sqlite, mysql, tsql };
std::string_view to_string(Dialect d);

/// Splits `text` at top-level semicolons. Each piece is trimmed of surrounding
/// whitespace; pieces that hold nothing but comments or whitespace are dropped.
/// `backslash_quotes`: a backslash escapes in every '...' literal, as for a
/// PostgreSQL session with standard_conforming_strings off.
std::vector<std::string_view> split_statements(std::string_view text, Dialect d,
                                               bool backslash_quotes = false);

/// True when `text` holds no statement: only whitespace, comments and semicolons.
bool is_blank(std::string_view text, Dialect d);

/// The first `n` words of a statement (identifiers and keywords, upper-cased;
/// comments skipped; stops at the first token that is not a word).
std::vector<std::string> leading_words(std::string_view stmt, Dialect d, size_t n);

/// The same words as written, without a copy, into `out` (at most its size):
/// how many. Compare them with iequals_upper().
size_t leading_words(std::string_view stmt, Dialect d, std::span<std::string_view> out);

/// `word` equals the upper-case ASCII `upper` in any case.
bool iequals_upper(std::string_view word, std::string_view upper);

/// The command verb PostgreSQL would put in the statement's command tag:
/// "SELECT", "INSERT", "UPDATE", "DELETE", "CREATE TABLE", "DROP INDEX", "BEGIN", ...
/// WITH ... resolves to its main statement; VALUES and TABLE to SELECT;
/// SQLite's REPLACE and INSERT OR ... to INSERT. Empty for blank text.
std::string command_verb(std::string_view stmt, Dialect d);

/// True when every successful execution of `stmt` inserts exactly one row:
/// `INSERT INTO name [(columns)] VALUES (...)` and nothing after it (no second
/// row, ON CONFLICT / ON DUPLICATE KEY, RETURNING, IGNORE, OR REPLACE, SELECT).
/// A batch of such a statement can be reported row by row from its total.
bool inserts_one_row(std::string_view stmt, Dialect d);

/// What PostgreSQL statements do to session state that outlives their
/// transaction, as far as their text tells: set_config() calls anywhere in it,
/// session-level advisory locks, and statements known by their leading words.
struct SessionEffects {
  /// Settings set for the session by set_config(name, value, false) with a
  /// literal name (lower-cased), or the three defaults SET SESSION
  /// CHARACTERISTICS changes: the session layer reads them back to follow
  /// the client (is_local true changes nothing beyond the transaction).
  std::vector<std::string> settings;
  /// Something wirepool cannot follow: a set_config() whose name or scope is
  /// computed, a session-level advisory lock, CREATE TEMP, SELECT INTO TEMP,
  /// DECLARE ... WITH HOLD, DO, CALL, PREPARE, LISTEN, LOAD. A pooled backend
  /// is reset (DISCARD ALL) before another client gets it.
  bool opaque = false;
};
SessionEffects session_effects(std::string_view text, bool backslash_quotes = false);
/// Conservative and cheap (no lexing): false when `text` cannot call
/// set_config() or an advisory lock function (case-insensitive substrings).
bool mentions_session_functions(std::string_view text);

/// A parameter marker found outside literals, quoted identifiers and comments.
struct Marker {
  enum class Type : uint8_t {
    dollar,    ///< $1 .. $N (PostgreSQL, SQLite)
    question,  ///< ? (numbered by order of appearance)
    named,     ///< :name, @name, $name
  };
  Type type;
  size_t offset;          ///< byte offset of the marker in the text
  size_t length;          ///< byte length of the marker
  int number = 0;         ///< $N's N, or the 1-based ordinal of a ?; 0 for named
  std::string_view name;  ///< named markers: the name without its sigil
};
/// Markers recognised in `d`: postgres: $N; sqlite: $N ? ?N :a @a $a; mysql: ? $N;
/// tsql: @name; ansi: ? $N. ($N in mysql and ansi text is a PostgreSQL client's marker.)
std::vector<Marker> find_markers(std::string_view text, Dialect d);
/// The markers a client of a backend of dialect `d` may write: for tsql (the
/// TDS driver, reached by PostgreSQL and other clients) `?` and `$N` as well as
/// `@name`, each outside strings, [bracketed] and "quoted" identifiers and
/// comments; for the other dialects the same as find_markers().
std::vector<Marker> find_client_markers(std::string_view text, Dialect d);

/// T-SQL text for a backend without N'...' literals (SQLite, whose '...' is
/// already Unicode): the N of each N'...' removed, outside strings, identifiers
/// and comments; nullopt when there is none.
std::optional<std::string> drop_national_prefixes(std::string_view tsql);

// ---------------------------------------------------------------------------
// Rewriting markers for the mysql driver

/// A statement for a backend whose only marker is `?` (MySQL).
struct QuestionText {
  std::string text;  ///< the statement with every $N replaced by ?
  /// For each ? of `text` in order, the 0-based positional parameter it binds:
  /// "$2 $1 $2" -> {1, 0, 1}; "? ?" -> {0, 1}.
  std::vector<int> slots;
  int required = 0;   ///< the number of positional parameters the text uses
  std::string error;  ///< non-empty: the text mixes $N and ?, or has $0
};
/// Rewrites a PostgreSQL client's $N markers to ? in order of appearance (a
/// repeated $N binds its value again), outside literals, quoted identifiers and
/// comments as `d` lexes them. Text with ? markers stays as it is.
QuestionText to_question_markers(std::string_view text, Dialect d);

}  // namespace wirepool::sql
