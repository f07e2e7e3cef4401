#pragma once
// The statement classifiers, one per statement language: what a statement is
// to the session layer (transaction control, settings, prepared-statement
// names), whether the PostgreSQL relay may send it to the server itself, and
// PostgreSQL's transaction-block rule for it. Neutral descriptions: what a
// front end or the session does with them is its own decision.

#include <cstdint>
#include <string>
#include <string_view>

#include "sql/lexer.hpp"

namespace wirepool::sql {

/// What a statement in PostgreSQL's language is, as far as wirepool cares.
enum class StatementKind : uint8_t {
  other,        ///< none of the below
  begin,        ///< BEGIN / START TRANSACTION
  commit,       ///< COMMIT / END (not COMMIT PREPARED)
  rollback,     ///< ROLLBACK / ABORT (not ROLLBACK TO SAVEPOINT, ROLLBACK PREPARED)
  set,          ///< SET
  reset,        ///< RESET
  show,         ///< SHOW (not in the mysql dialect, where SHOW is MySQL's own statement)
  discard_all,  ///< DISCARD ALL
  discard,      ///< DISCARD PLANS / SEQUENCES / TEMP
  deallocate,   ///< DEALLOCATE [PREPARE] name | ALL
  listen,       ///< LISTEN / UNLISTEN / NOTIFY
};

/// How a statement relates to transaction blocks in PostgreSQL: what it does
/// in the implicit transaction of an extended-query block (messages up to a
/// Sync), which is no transaction block.
enum class BlockRule : uint8_t {
  any,      ///< runs inside a transaction block or outside
  prevent,  ///< cannot run inside one (VACUUM, CREATE DATABASE, ... CONCURRENTLY)
  require,  ///< an error outside one (SAVEPOINT, RELEASE, ROLLBACK TO, LOCK, DECLARE)
  warn,     ///< a warning outside one, and no lasting effect (SET LOCAL, SET TRANSACTION)
};

/// Whether the relay may send a statement to a PostgreSQL server without the
/// session layer seeing it.
enum class RelayUse : uint8_t {
  no,           ///< the session layer must see it
  plain,        ///< a query or DML
  transaction,  ///< transaction control: may leave the backend in a transaction
};

/// What classify() tells of one statement.
struct StatementInfo {
  StatementKind kind = StatementKind::other;
  std::string verb;                  ///< command_verb(), for command tags
  BlockRule block = BlockRule::any;  ///< postgres dialect only; any elsewhere
  const char* block_name = "";       ///< PostgreSQL's name for it in the block rule's message
  RelayUse relay = RelayUse::no;
};

/// Classifies one statement (a piece of split_statements) written in
/// PostgreSQL's language, lexed as `d` lexes.
StatementInfo classify(std::string_view stmt, Dialect d);

/// The relay's use of a statement, from its first word (any case).
RelayUse relay_use(std::string_view first_word);

/// True when the relay may send `text` as it is: every statement in it has a
/// RelayUse other than no (`single`: exactly one statement), and none calls
/// set_config() or an advisory lock function. `plain` is cleared when one of
/// them is transaction control. The text is split as a PostgreSQL server with
/// standard_conforming_strings off splits it when `backslash_quotes`.
bool relay_may_send(std::string_view text, bool single, bool& plain, bool backslash_quotes);

/// What a T-SQL statement is to a TDS front end.
enum class TsqlKind : uint8_t {
  other,           ///< none of the below
  begin,           ///< BEGIN [TRAN | TRANSACTION | WORK] [name], START TRANSACTION
  commit,          ///< COMMIT / END [TRAN | TRANSACTION | WORK] [name]
  rollback,        ///< ROLLBACK [TRAN | TRANSACTION | WORK]
  rollback_named,  ///< ROLLBACK followed by two words: a savepoint or a named transaction
  set_option,      ///< SET <session option> (NOCOUNT, ANSI_NULLS, ...: tsql_option())
};

/// What classify_tsql() tells of one statement.
struct TsqlStatementInfo {
  TsqlKind kind = TsqlKind::other;
  std::string option;  ///< set_option: the option's name, lower-cased
  std::string value;   ///< set_option: the word after it, lower-cased ("on"), or empty
};

/// Classifies one T-SQL statement.
TsqlStatementInfo classify_tsql(std::string_view stmt);

/// True for the T-SQL session options a SQL Server client sets right after
/// login (lower-cased name).
bool is_tsql_option(std::string_view name);

}  // namespace wirepool::sql
