// What a PostgreSQL statement's text tells of its effect on session state
// (sql::session_effects, sql::mentions_session_functions).
//
// Cases: set_config() with a literal name and is_local false is a setting to
// follow (lower-cased, '' unescaped, qualified pg_catalog.set_config too),
// SET SESSION CHARACTERISTICS the three transaction defaults (not SET
// TRANSACTION, which ends with its transaction),
// with is_local true nothing, with a computed name, a computed scope or a
// backslash in the name opaque; several calls and nested parentheses in the
// value; session advisory locks opaque, transaction ones not; CREATE TEMP /
// TEMPORARY, SELECT INTO TEMP, DECLARE WITH HOLD, DO, CALL, PREPARE, LISTEN
// opaque, in any statement of several; text inside literals and comments is
// not code; plain DML has no effect; the cheap pre-check finds every case
// above and nothing in plain DML.

#include <gtest/gtest.h>

#include "sql/lexer.hpp"

namespace wirepool::sql {
namespace {

TEST(SessionEffects, SetConfigWithALiteralNameIsASettingToFollow) {
  auto e = session_effects("SELECT set_config('Search_Path', 'evil, public', false)");
  EXPECT_EQ(e.settings, std::vector<std::string>{"search_path"});
  EXPECT_FALSE(e.opaque);
  e = session_effects(
      "SELECT pg_catalog.set_config('role', 'x', false), SET_CONFIG('a.b''c', f(1, 2), FALSE)");
  EXPECT_EQ(e.settings, (std::vector<std::string>{"role", "a.b'c"}));
  EXPECT_FALSE(e.opaque);
}

TEST(SessionEffects, SessionCharacteristicsAreTheTransactionDefaults) {
  const std::vector<std::string> defaults = {"default_transaction_isolation",
                                             "default_transaction_read_only",
                                             "default_transaction_deferrable"};
  auto e = session_effects(
      "SELECT 1; set /* c */ session characteristics as transaction isolation level serializable");
  EXPECT_EQ(e.settings, defaults);
  EXPECT_FALSE(e.opaque);
  EXPECT_TRUE(session_effects("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE").settings.empty());
  EXPECT_TRUE(session_effects("SET SESSION search_path TO a").settings.empty());
  EXPECT_TRUE(session_effects("SELECT 'SET SESSION CHARACTERISTICS'").settings.empty());
}

TEST(SessionEffects, TransactionLocalSetConfigChangesNothing) {
  auto e = session_effects("SELECT set_config('app.user_id', '42', true); SELECT 1");
  EXPECT_TRUE(e.settings.empty());
  EXPECT_FALSE(e.opaque);
}

TEST(SessionEffects, WhatCannotBeFollowedIsOpaque) {
  for (auto text : {
           "SELECT set_config($1, 'x', false)",
           "SELECT set_config('search_path', 'x', $2)",
           "SELECT set_config('a\\b', 'x', false)",
           "SELECT pg_advisory_lock(1)",
           "SELECT pg_try_advisory_lock_shared(1, 2)",
           "create temporary table t (a int)",
           "CREATE TEMP VIEW v AS SELECT 1",
           "SELECT 1 INTO TEMP t",
           "DECLARE c CURSOR WITH HOLD FOR SELECT 1",
           "DO $$BEGIN EXECUTE 'DEALLOCATE ALL'; END$$",
           "CALL p()",
           "PREPARE q AS SELECT 1",
           "SELECT 1; LISTEN ch",
       }) {
    EXPECT_TRUE(session_effects(text).opaque) << text;
  }
}

TEST(SessionEffects, TransactionScopedAndQuotedTextHaveNone) {
  for (auto text : {
           "SELECT pg_advisory_xact_lock(1)",
           "SELECT 'set_config(''role'', ''x'', false)'",
           "SELECT 1 -- set_config('role', 'x', false)",
           "INSERT INTO temp_things VALUES (1)",
           "CREATE TABLE t (a int)",
           "UPDATE t SET a = 1 WHERE b = 'DO'",
           "SELECT abalance FROM pgbench_accounts WHERE aid = 1",
       }) {
    auto e = session_effects(text);
    EXPECT_FALSE(e.opaque) << text;
    EXPECT_TRUE(e.settings.empty()) << text;
  }
  EXPECT_FALSE(mentions_session_functions("SELECT abalance FROM pgbench_accounts WHERE aid = 1"));
  EXPECT_TRUE(mentions_session_functions("select SET_CONFIG('a', 'b', true)"));
  EXPECT_TRUE(mentions_session_functions("select pg_advisory_lock(1)"));
  // At either end of the text, in any case, after other underscores.
  EXPECT_TRUE(mentions_session_functions("set_config"));
  EXPECT_TRUE(mentions_session_functions("SELECT a_b, pg_try_ADVISORY_LOCK_shared(1)"));
  EXPECT_TRUE(mentions_session_functions("SELECT x FROM t_ WHERE f(set_config('a','b',false))"));
  for (std::string_view text :
       {"", "_", "set_confi", "et_config", "advisory_loc", "SELECT _config_"}) {
    EXPECT_FALSE(mentions_session_functions(text)) << text;
  }
}

}  // namespace
}  // namespace wirepool::sql
