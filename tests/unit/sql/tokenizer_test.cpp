// The tokenizer of sql/tokenizer.hpp, as tables of token kinds per dialect:
//  - what is not code is one token: '...' (and E'...', $$...$$ in postgres),
//    "...", [...] and `...` where the dialect quotes with them
//  - comments and whitespace produce no token; an unterminated literal runs
//    to the end of the text
//  - markers per dialect; pg-client text ends $N at its digits ($1::int)
//  - '[' after an operand is a subscript in pg-client text, not an identifier

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sql/tokenizer.hpp"

namespace wirepool::sql::detail {
namespace {

std::string kinds(std::string_view text, Dialect d, bool pg_client = false) {
  Lexer lex(text, d);
  if (pg_client) lex.set_pg_client();
  std::string out;
  for (;;) {
    const Token t = lex.next();
    if (t.type == Tok::end) break;
    static constexpr std::string_view kNames[] = {"w", "q", "s", "n", "m", ";",
                                                  "(", ")", ",", "o", "$"};
    if (!out.empty()) out += ' ';
    out += kNames[static_cast<int>(t.type)];
  }
  return out;
}

TEST(Tokenizer, LiteralsAndQuotedIdentifiersAreOneTokenEach) {
  EXPECT_EQ(kinds("SELECT 'a;b', \"c;d\" FROM t;", Dialect::postgres), "w s , q w w ;");
  EXPECT_EQ(kinds("SELECT $x$ ; $x$, E'\\';'", Dialect::postgres), "w s , s");
  EXPECT_EQ(kinds("SELECT [a b], `c`", Dialect::sqlite), "w q , q");
  EXPECT_EQ(kinds("SELECT [a b]", Dialect::tsql), "w q");
  EXPECT_EQ(kinds("SELECT 'a\\'b'", Dialect::mysql), "w s");
}

TEST(Tokenizer, CommentsAndWhitespaceProduceNoToken) {
  EXPECT_EQ(kinds("  -- c;\n /* a /* nested */ ; */ SELECT 1", Dialect::postgres), "w n");
  EXPECT_EQ(kinds("# c;\nSELECT 1", Dialect::mysql), "w n");
  EXPECT_EQ(kinds("SELECT 'open;", Dialect::ansi), "w s");
}

TEST(Tokenizer, MarkersPerDialect) {
  EXPECT_EQ(kinds("a = $1 AND b = ?", Dialect::postgres), "w o m w w o o");
  EXPECT_EQ(kinds("a = ? AND b = :n AND c = @m", Dialect::sqlite), "w o m w w o m w w o m");
  EXPECT_EQ(kinds("a = @p", Dialect::tsql), "w o m");
}

TEST(Tokenizer, PgClientTextEndsDollarMarkersAtTheirDigitsAndReadsSubscripts) {
  EXPECT_EQ(kinds("$1::int", Dialect::sqlite), "m");
  EXPECT_EQ(kinds("$1::int", Dialect::sqlite, true), "m o w");
  EXPECT_EQ(kinds("a[1]", Dialect::sqlite), "w q");
  EXPECT_EQ(kinds("a[1]", Dialect::sqlite, true), "w o n o");
}

}  // namespace
}  // namespace wirepool::sql::detail
