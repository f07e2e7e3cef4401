#pragma once
// Every input the three classifiers before sql/classify.hpp told apart (the
// session layer's classify, the relay's first-word list, the TDS front end's
// word lists), with the decision each took: one table for the tests.

#include <string_view>

#include "sql/classify.hpp"

namespace wirepool::sql::cases {

struct PgCase {
  std::string_view stmt;
  StatementKind kind;
  RelayUse relay;
  Dialect dialect = Dialect::postgres;
};

using K = StatementKind;
using R = RelayUse;

inline constexpr PgCase kPgCases[] = {
    {"BEGIN", K::begin, R::transaction},
    {"begin immediate", K::begin, R::transaction, Dialect::sqlite},
    {"BEGIN ISOLATION LEVEL SERIALIZABLE", K::begin, R::transaction},
    {"START TRANSACTION READ ONLY", K::begin, R::transaction},
    {"START", K::other, R::transaction},
    {"COMMIT", K::commit, R::transaction},
    {"commit work", K::commit, R::transaction},
    {"/* x */ -- y\n commit work", K::commit, R::transaction},
    {"END", K::commit, R::transaction},
    {"COMMIT PREPARED 'x'", K::other, R::transaction},
    {"END PREPARED", K::other, R::transaction},
    {"ROLLBACK", K::rollback, R::transaction},
    {"ABORT", K::rollback, R::transaction},
    {"rollback transaction", K::rollback, R::transaction},
    {"ROLLBACK TO a", K::other, R::transaction},
    {"ROLLBACK TO SAVEPOINT a", K::other, R::transaction},
    {"ROLLBACK WORK TO a", K::other, R::transaction},
    {"ROLLBACK TRANSACTION TO SAVEPOINT a", K::other, R::transaction},
    {"ABORT TO a", K::other, R::transaction},
    {"ROLLBACK PREPARED 'x'", K::other, R::transaction},
    {"SAVEPOINT a", K::other, R::transaction},
    {"RELEASE SAVEPOINT a", K::other, R::transaction},
    {"DEALLOCATE a", K::deallocate, R::no},
    {"DEALLOCATE PREPARE a", K::deallocate, R::no},
    {"deallocate all", K::deallocate, R::no},
    {"DISCARD ALL", K::discard_all, R::no},
    {"DISCARD PLANS", K::discard, R::no},
    {"discard temp", K::discard, R::no},
    {"SET x = 1", K::set, R::no},
    {"SET LOCAL work_mem = '1MB'", K::set, R::no},
    {"SET TRANSACTION READ ONLY", K::set, R::no},
    {"RESET ALL", K::reset, R::no},
    {"SHOW server_version", K::show, R::no},
    {"SHOW TABLES", K::other, R::no, Dialect::mysql},
    {"SHOW VARIABLES LIKE 'x'", K::other, R::no, Dialect::mysql},
    {"show transaction isolation level", K::show, R::no, Dialect::mysql},
    {"SHOW standard_conforming_strings", K::show, R::no, Dialect::mysql},
    {"SET x = 1", K::set, R::no, Dialect::mysql},
    {"SHOW x", K::show, R::no, Dialect::sqlite},
    {"LISTEN ch", K::listen, R::no},
    {"UNLISTEN *", K::listen, R::no},
    {"NOTIFY ch, 'x'", K::listen, R::no},
    {"SELECT 1", K::other, R::plain},
    {"select 1", K::other, R::plain},
    {"INSERT INTO t VALUES (1)", K::other, R::plain},
    {"UPDATE t SET a = 1", K::other, R::plain},
    {"DELETE FROM t", K::other, R::plain},
    {"WITH a AS (SELECT 1) SELECT * FROM a", K::other, R::plain},
    {"VALUES (1)", K::other, R::plain},
    {"TABLE t", K::other, R::plain},
    {"EXPLAIN SELECT 1", K::other, R::plain},
    {"MERGE INTO t USING s ON true WHEN MATCHED THEN DO NOTHING", K::other, R::plain},
    {"PREPARE p AS SELECT 1", K::other, R::no},
    {"EXECUTE p", K::other, R::no},
    {"CALL p()", K::other, R::no},
    {"DO $$ BEGIN END $$", K::other, R::no},
    {"COPY t FROM STDIN", K::other, R::no},
    {"CREATE TABLE t (a int)", K::other, R::no},
    {"DECLARE c CURSOR FOR SELECT 1", K::other, R::no},
    {"LOCK TABLE t", K::other, R::no},
    {"VACUUM", K::other, R::no},
    {"", K::other, R::no},
    {"-- nothing", K::other, R::no},
};

struct TsqlCase {
  std::string_view stmt;
  TsqlKind kind;
  std::string_view option = {};
  std::string_view value = {};
};

using T = TsqlKind;

inline constexpr TsqlCase kTsqlCases[] = {
    {"BEGIN", T::begin},
    {"begin tran", T::begin},
    {"BEGIN TRANSACTION t1", T::begin},
    {"begin work", T::begin},
    {"START TRANSACTION", T::begin},
    {"START", T::other},
    {"BEGIN TRY SELECT 1 END TRY", T::other},
    {"BEGIN DISTRIBUTED TRANSACTION", T::other},
    {"COMMIT", T::commit},
    {"commit tran", T::commit},
    {"COMMIT TRANSACTION t1", T::commit},
    {"END", T::commit},
    {"END TRY", T::other},
    {"ROLLBACK", T::rollback},
    {"rollback transaction", T::rollback},
    {"ROLLBACK WORK", T::rollback},
    {"ROLLBACK TRAN t1", T::rollback_named},
    {"ROLLBACK TRANSACTION sp1", T::rollback_named},
    {"ROLLBACK sp1", T::other},
    {"SET NOCOUNT ON", T::set_option, "nocount", "on"},
    {"set nocount off", T::set_option, "nocount", "off"},
    {"SET NOCOUNT", T::set_option, "nocount", ""},
    {"SET ANSI_NULLS ON", T::set_option, "ansi_nulls", "on"},
    {"SET IMPLICIT_TRANSACTIONS ON", T::set_option, "implicit_transactions", "on"},
    {"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", T::set_option, "transaction", "isolation"},
    {"SET TEXTSIZE 2147483647", T::set_option, "textsize", ""},
    {"SET x = 1", T::other},
    {"SELECT 1", T::other},
    {"/* c */ begin tran", T::begin},
    {"", T::other},
};

}  // namespace wirepool::sql::cases
