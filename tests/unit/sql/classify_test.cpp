// The statement classifiers (sql/classify.hpp).
//
// Cases: every input the three earlier classifiers told apart, with their
// decisions (classify_cases.hpp): statement kind and relay use for
// PostgreSQL's language, the T-SQL transaction forms and session options; the
// command verb; the relay's batch check (one statement or several, comments,
// set_config, the empty query, the fast path's word boundary); PostgreSQL's
// transaction-block rules; standard_conforming_strings off
// (`SELECT 'x\''; DEALLOCATE ALL; SELECT '\''` hides no DEALLOCATE from the relay
// or the session layer).

#include "sql/classify.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "tests/unit/sql/classify_cases.hpp"

namespace wirepool::sql {
namespace {

TEST(Classify, EveryKnownInputGetsTheDecisionItHad) {
  for (const auto& c : cases::kPgCases) {
    auto info = classify(c.stmt, c.dialect);
    EXPECT_EQ(info.kind, c.kind) << c.stmt << " (" << to_string(c.dialect) << ")";
    EXPECT_EQ(info.relay, c.relay) << c.stmt;
  }
}

TEST(Classify, RelayUseOfTheFirstWordIgnoresCase) {
  for (const auto& c : cases::kPgCases) {
    auto words = leading_words(c.stmt, Dialect::postgres, 1);
    if (words.empty()) continue;
    EXPECT_EQ(relay_use(words[0]), c.relay) << c.stmt;
  }
  EXPECT_EQ(relay_use("sElEcT"), RelayUse::plain);
  EXPECT_EQ(relay_use("SELECTS"), RelayUse::no);
  EXPECT_EQ(relay_use(""), RelayUse::no);
}

TEST(Classify, VerbIsCommandVerbAndLetterCaseChangesNothing) {
  // classify() reads the first words as written and names common verbs without
  // command_verb(): the decisions must be those of the upper-cased words.
  for (const auto& c : cases::kPgCases) {
    const auto info = classify(c.stmt, c.dialect);
    EXPECT_EQ(info.verb, command_verb(c.stmt, c.dialect)) << c.stmt;
    for (bool up : {false, true}) {
      std::string other(c.stmt);
      for (auto& ch : other)
        ch = static_cast<char>(up ? std::toupper(static_cast<unsigned char>(ch))
                                  : std::tolower(static_cast<unsigned char>(ch)));
      const auto o = classify(other, c.dialect);
      EXPECT_EQ(o.kind, info.kind) << other;
      EXPECT_EQ(o.relay, info.relay) << other;
      EXPECT_EQ(o.block, info.block) << other;
      EXPECT_STREQ(o.block_name, info.block_name) << other;
      EXPECT_EQ(o.verb, command_verb(other, c.dialect)) << other;
    }
  }
  EXPECT_EQ(classify("Show server_version", Dialect::mysql).kind, StatementKind::show);
  EXPECT_EQ(classify("show tables", Dialect::mysql).kind, StatementKind::other);
  EXPECT_EQ(classify("table t", Dialect::postgres).verb, "SELECT");
  EXPECT_EQ(classify("end", Dialect::postgres).verb, "COMMIT");
}

TEST(Classify, EveryKnownTsqlInputGetsTheDecisionItHad) {
  for (const auto& c : cases::kTsqlCases) {
    auto info = classify_tsql(c.stmt);
    EXPECT_EQ(info.kind, c.kind) << c.stmt;
    EXPECT_EQ(info.option, c.option) << c.stmt;
    EXPECT_EQ(info.value, c.value) << c.stmt;
  }
  EXPECT_TRUE(is_tsql_option("xact_abort"));
  EXPECT_FALSE(is_tsql_option("XACT_ABORT"));
  EXPECT_FALSE(is_tsql_option("search_path"));
}

TEST(Classify, VerbForTags) {
  EXPECT_EQ(classify("insert into t values (1)", Dialect::sqlite).verb, "INSERT");
  EXPECT_EQ(classify("START TRANSACTION", Dialect::postgres).verb, "START TRANSACTION");
  EXPECT_EQ(classify("", Dialect::postgres).verb, "");
}

TEST(Classify, BlockRulesOnlyForPostgres) {
  auto pg = classify("SAVEPOINT a", Dialect::postgres);
  EXPECT_EQ(pg.block, BlockRule::require);
  EXPECT_STREQ(pg.block_name, "SAVEPOINT");
  EXPECT_EQ(classify("SAVEPOINT a", Dialect::sqlite).block, BlockRule::any);
  EXPECT_EQ(classify("CREATE INDEX CONCURRENTLY i ON t (a)", Dialect::postgres).block,
            BlockRule::prevent);
}

TEST(RelayMaySend, OneStatementOrSeveral) {
  bool plain = true;
  EXPECT_TRUE(relay_may_send("SELECT 1", true, plain, false));
  EXPECT_TRUE(plain);
  EXPECT_TRUE(relay_may_send("  select 1 ;\n", true, plain, false));
  EXPECT_TRUE(plain);
  EXPECT_TRUE(relay_may_send("SELECT 1; INSERT INTO t VALUES (1)", false, plain, false));
  EXPECT_TRUE(plain);
  EXPECT_FALSE(relay_may_send("SELECT 1; SELECT 2", true, plain, false));
  EXPECT_TRUE(relay_may_send("/* c */ SELECT 1", true, plain, false));
  EXPECT_TRUE(plain);
}

TEST(RelayMaySend, TransactionControlClearsPlain) {
  bool plain = true;
  EXPECT_TRUE(relay_may_send("BEGIN; SELECT 1; COMMIT", false, plain, false));
  EXPECT_FALSE(plain);
  plain = true;
  EXPECT_TRUE(relay_may_send("commit", true, plain, false));
  EXPECT_FALSE(plain);
}

TEST(RelayMaySend, TheSessionLayerKeepsWhatItMustSee) {
  bool plain = true;
  EXPECT_FALSE(relay_may_send("", true, plain, false));
  EXPECT_FALSE(relay_may_send(" ; ", true, plain, false));
  EXPECT_FALSE(relay_may_send("SELECT set_config('a', 'b', false)", true, plain, false));
  EXPECT_FALSE(relay_may_send("SELECT pg_advisory_lock(1)", true, plain, false));
  EXPECT_FALSE(relay_may_send("SELECT 1; DEALLOCATE ALL", false, plain, false));
  EXPECT_FALSE(relay_may_send("SET x = 1", true, plain, false));
  EXPECT_FALSE(relay_may_send("SELECT1", true, plain, false));
  EXPECT_FALSE(relay_may_send("-- only a comment", true, plain, false));
}

TEST(RelayMaySend, BackslashQuotesSplitAsTheServerDoes) {
  // With standard_conforming_strings off the server sees three statements,
  // the second a DEALLOCATE the session layer must run; with it on, one SELECT.
  constexpr std::string_view kText = R"(SELECT 'x\''; DEALLOCATE ALL; SELECT '\'')";
  bool plain = true;
  EXPECT_FALSE(relay_may_send(kText, false, plain, true));
  plain = true;
  EXPECT_TRUE(relay_may_send(kText, false, plain, false));
  EXPECT_TRUE(plain);

  auto pieces = split_statements(kText, Dialect::postgres, true);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(classify(pieces[1], Dialect::postgres).kind, StatementKind::deallocate);
  EXPECT_EQ(split_statements(kText, Dialect::postgres, false).size(), 1u);
}

}  // namespace
}  // namespace wirepool::sql
