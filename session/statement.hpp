#pragma once
// Where a statement goes, as the session layer sees it (both front ends):
// to the backend, or answered by the session (transaction control, settings,
// DISCARD, DEALLOCATE, LISTEN without notifications). sql::classify says what
// a statement is; this decides who runs it.

#include <cstdint>
#include <string>
#include <string_view>

#include "sql/classify.hpp"

namespace wirepool::server {

/// What a statement is, as far as the session layer is concerned.
enum class StatementKind : uint8_t {
  backend,     ///< runs on the backend
  begin,       ///< BEGIN / START TRANSACTION
  commit,      ///< COMMIT / END
  rollback,    ///< ROLLBACK / ABORT (not ROLLBACK TO SAVEPOINT)
  setting,     ///< SET / RESET / SHOW answered from the session's settings
  discard,     ///< DISCARD ALL (and the other DISCARD forms)
  deallocate,  ///< DEALLOCATE [PREPARE] name | ALL
  listen,      ///< LISTEN / UNLISTEN / NOTIFY on a backend without notifications
};

using sql::BlockRule;

struct Classified {
  StatementKind kind = StatementKind::backend;
  std::string verb;  ///< sql::command_verb, for command tags
  BlockRule block = BlockRule::any;
  const char* block_name = "";  ///< PostgreSQL's name for it in the block rule's message
};

/// Decides where a single statement goes (sql::classify says what it is).
/// Backends that keep their own settings (PostgreSQL) receive
/// SET/SHOW/DISCARD/LISTEN themselves.
Classified classify(std::string_view stmt, sql::Dialect dialect, bool backend_keeps_settings);

/// The first statement of `text` is a BEGIN / START TRANSACTION whose modes
/// make the transaction READ ONLY (`BEGIN ISOLATION LEVEL ... , READ ONLY`),
/// or one followed by SET TRANSACTION ... READ ONLY; never SERIALIZABLE,
/// which a hot standby refuses.
bool begins_read_only(std::string_view text, bool backslash_quotes = false);

/// `stmt` is SET [LOCAL | SESSION] TRANSACTION with READ ONLY among its
/// modes, and not SERIALIZABLE (a standby refuses that level); or one of the
/// forms of transaction_read_only = on that say the same exactly: `SET [LOCAL
/// | SESSION] transaction_read_only {= | TO} on` (or true, yes, 1, quoted or
/// not), `SELECT set_config('transaction_read_only', 'on', true | false)`.
bool sets_transaction_read_only(std::string_view stmt);

/// `text` is one BEGIN / START TRANSACTION alone, neither READ ONLY nor
/// SERIALIZABLE: a transaction that a SET TRANSACTION READ ONLY right after
/// it may move to a standby (read_only.route_transactions).
bool begins_movable(std::string_view text, bool backslash_quotes = false);

/// read_only.route_statements: every statement of `text` only reads, as far
/// as its words tell: each begins with SELECT, VALUES, TABLE or WITH, and none
/// names INSERT/UPDATE/DELETE/MERGE (a data-modifying CTE, FOR UPDATE), FOR
/// SHARE, INTO, or a function that writes or holds state (nextval, setval,
/// pg_advisory*, set_config, pg_notify, ...). A function of the client's that
/// writes passes: the standby refuses it (25006) and the caller retries it on
/// the primary. False for text read with backslash quotes (not split here).
bool reads_only(std::string_view text, bool backslash_quotes = false);

/// Why a statement was cancelled (57014's message says which).
enum class CancelReason : uint8_t { none, user, timeout, client_gone };

}  // namespace wirepool::server
