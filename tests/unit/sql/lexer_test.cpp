// The lexers of sql/lexer.cpp (split_statements, is_blank, leading_words,
// find_markers; command_verb_test and session_effects_test hold the rest), per
// dialect, as tables of cases:
//  - split_statements: top-level semicolons only; pieces trimmed; blank pieces dropped;
//    literals, quoted identifiers, comments and dollar bodies hold semicolons;
//    postgres: E'' backslash escapes, nested /* */, $$/$tag$ bodies ($1 is a marker,
//    not a tag), parentheses, BEGIN ATOMIC ... END in CREATE FUNCTION (psql's rule);
//    sqlite: [..] and `..`, CREATE [TEMP] TRIGGER ... END (sqlite3_complete's rule);
//    mysql: backslash escapes, "-- " needs the space, # comments, /*! */ is code,
//    BEGIN ... END in CREATE PROCEDURE; tsql: [..]] ..], nested /* */, BEGIN ... END
//    blocks but not BEGIN TRAN
//  - is_blank: whitespace, comments and semicolons only
//  - leading_words: upper-cased, comments skipped, stops at the first non-word
//  - find_markers: per dialect, never inside literals, identifiers or comments;
//    the mysql line from the seed has exactly one marker; "::" is a cast;
//    sqlite numbers ? as SQLite does and reads $1::int as one marker
//  - drop_national_prefixes: N'...' -> '...' for a SQLite backend of the TDS
//    front end; not in strings, identifiers or comments, nor a word ending in N

#include <gtest/gtest.h>

#include <array>

#include "sql/lexer.hpp"

namespace wirepool::sql {
namespace {

struct SplitCase {
  Dialect dialect;
  std::string_view text;
  std::vector<std::string_view> pieces;
};

void check_split(const std::vector<SplitCase>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(to_string(c.dialect)) + ": " + std::string(c.text));
    EXPECT_EQ(split_statements(c.text, c.dialect), c.pieces);
  }
}

TEST(SplitStatements, EveryDialectSplitsAtTopLevelSemicolonsAndDropsBlankPieces) {
  for (Dialect d :
       {Dialect::ansi, Dialect::postgres, Dialect::sqlite, Dialect::mysql, Dialect::tsql}) {
    check_split({
        {d, "SELECT 1; SELECT 2", {"SELECT 1", "SELECT 2"}},
        {d, "  SELECT 1  ;\n\tSELECT 2;  ", {"SELECT 1", "SELECT 2"}},
        {d, " ; ;; SELECT 1 ;; ", {"SELECT 1"}},
        {d, "", {}},
        {d, "/* only */ ; -- x", {}},
        {d, "SELECT 'a;b'; SELECT 'it''s;'", {"SELECT 'a;b'", "SELECT 'it''s;'"}},
        {d, "SELECT 1 /* ; */; SELECT 2 -- ;\n", {"SELECT 1 /* ; */", "SELECT 2 -- ;"}},
        {d, "SELECT 'unterminated; SELECT 2", {"SELECT 'unterminated; SELECT 2"}},
    });
  }
}

TEST(SplitStatements, DoubleQuotesHoldSemicolonsInEveryDialect) {
  for (Dialect d :
       {Dialect::ansi, Dialect::postgres, Dialect::sqlite, Dialect::mysql, Dialect::tsql}) {
    check_split({{d, "SELECT \"a;\"\"b\"; SELECT 2", {"SELECT \"a;\"\"b\"", "SELECT 2"}}});
  }
}

TEST(SplitStatements, PostgresFollowsPsql) {
  check_split({
      {Dialect::postgres, "SELECT $$a;b$$; SELECT 2", {"SELECT $$a;b$$", "SELECT 2"}},
      {Dialect::postgres,
       "CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $$ $body$ LANGUAGE sql; SELECT 2",
       {"CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $$ $body$ LANGUAGE sql", "SELECT 2"}},
      {Dialect::postgres, "SELECT $1; SELECT $2", {"SELECT $1", "SELECT $2"}},
      {Dialect::postgres, "SELECT a$b$; SELECT 2", {"SELECT a$b$", "SELECT 2"}},
      {Dialect::postgres, "SELECT E'\\';'; SELECT 2", {"SELECT E'\\';'", "SELECT 2"}},
      {Dialect::postgres, "SELECT e'\\\\'; SELECT 2", {"SELECT e'\\\\'", "SELECT 2"}},
      {Dialect::postgres, "SELECT '\\'; SELECT 2", {"SELECT '\\'", "SELECT 2"}},
      {Dialect::postgres,
       "SELECT /* a /* b; */ c; */ 1; SELECT 2",
       {"SELECT /* a /* b; */ c; */ 1", "SELECT 2"}},
      {Dialect::postgres,
       "CREATE RULE r AS ON INSERT TO t DO (INSERT INTO a VALUES (1); NOTIFY t); SELECT 1",
       {"CREATE RULE r AS ON INSERT TO t DO (INSERT INTO a VALUES (1); NOTIFY t)", "SELECT 1"}},
      {Dialect::postgres,
       "CREATE OR REPLACE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT CASE WHEN true "
       "THEN 1 END; SELECT 2; END; SELECT 3",
       {"CREATE OR REPLACE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT CASE WHEN "
        "true "
        "THEN 1 END; SELECT 2; END",
        "SELECT 3"}},
      {Dialect::postgres, "BEGIN; SELECT 1; END;", {"BEGIN", "SELECT 1", "END"}},
  });
}

TEST(SplitStatements, PostgresWithoutStandardConformingStringsEscapesWithBackslashes) {
  // What the server sees with standard_conforming_strings off: three statements.
  const std::string_view text = R"(SELECT 'x\''; DEALLOCATE ALL; SELECT '\'')";
  EXPECT_EQ(split_statements(text, Dialect::postgres, true).size(), 3u);
  // And with it on (the default), one.
  EXPECT_EQ(split_statements(text, Dialect::postgres).size(), 1u);
  EXPECT_EQ(split_statements(R"(SELECT 'a\'; SELECT 1)", Dialect::postgres).size(), 2u);
}

TEST(SplitStatements, SqliteKeepsTriggerBodiesWhole) {
  check_split({
      {Dialect::sqlite,
       "CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO log VALUES (1); UPDATE x SET y = 1; "
       "END; SELECT 1",
       {"CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO log VALUES (1); UPDATE x SET y = 1; "
        "END",
        "SELECT 1"}},
      {Dialect::sqlite,
       "create temp trigger tr after delete on t begin delete from u; end;select 2",
       {"create temp trigger tr after delete on t begin delete from u; end", "select 2"}},
      {Dialect::sqlite,
       "CREATE TEMPORARY TRIGGER IF NOT EXISTS tr BEFORE UPDATE ON t BEGIN SELECT RAISE(ABORT, "
       "'no; way'); END ; SELECT 3",
       {"CREATE TEMPORARY TRIGGER IF NOT EXISTS tr BEFORE UPDATE ON t BEGIN SELECT RAISE(ABORT, "
        "'no; way'); END",
        "SELECT 3"}},
      {Dialect::sqlite,
       "EXPLAIN CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END; SELECT 2",
       {"EXPLAIN CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END", "SELECT 2"}},
      {Dialect::sqlite,
       "CREATE TABLE t(a); BEGIN; END; SELECT 1",
       {"CREATE TABLE t(a)", "BEGIN", "END", "SELECT 1"}},
      {Dialect::sqlite,
       "SELECT [a;b], `c;``d` FROM t; SELECT 2",
       {"SELECT [a;b], `c;``d` FROM t", "SELECT 2"}},
      {Dialect::sqlite,
       "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1;",
       {"CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1;"}},
  });
}

TEST(SplitStatements, MysqlCommentsEscapesAndRoutineBodies) {
  check_split({
      {Dialect::mysql, "SELECT 'a\\';b'; SELECT 2", {"SELECT 'a\\';b'", "SELECT 2"}},
      {Dialect::mysql, "SELECT \"a\\\";b\"; SELECT 2", {"SELECT \"a\\\";b\"", "SELECT 2"}},
      {Dialect::mysql, "SELECT 1 --x; SELECT 2", {"SELECT 1 --x", "SELECT 2"}},
      {Dialect::mysql,
       "SELECT 1 -- x; SELECT 2\n; SELECT 3",
       {"SELECT 1 -- x; SELECT 2", "SELECT 3"}},
      {Dialect::mysql, "SELECT 1 # x; y\n; SELECT 2", {"SELECT 1 # x; y", "SELECT 2"}},
      {Dialect::mysql, "SELECT `a;``b`; SELECT 2", {"SELECT `a;``b`", "SELECT 2"}},
      {Dialect::mysql,
       "/*!40101 SET NAMES utf8 */; SELECT 1",
       {"/*!40101 SET NAMES utf8 */", "SELECT 1"}},
      {Dialect::mysql,
       "CREATE PROCEDURE p() BEGIN SELECT 1; IF 1 THEN SELECT 2; END IF; SELECT CASE WHEN 1 THEN 2 "
       "END; END; CALL p()",
       {"CREATE PROCEDURE p() BEGIN SELECT 1; IF 1 THEN SELECT 2; END IF; SELECT CASE WHEN 1 THEN "
        "2 "
        "END; END",
        "CALL p()"}},
      {Dialect::mysql,
       "CREATE TABLE event (begin INT); SELECT 1",
       {"CREATE TABLE event (begin INT)", "SELECT 1"}},
  });
}

TEST(SplitStatements, TsqlBracketsNestedCommentsAndBlocks) {
  check_split({
      {Dialect::tsql, "SELECT [a;]]b]; SELECT 2", {"SELECT [a;]]b]", "SELECT 2"}},
      {Dialect::tsql,
       "/* a /* b */ ; */ SELECT 1; SELECT 2",
       {"/* a /* b */ ; */ SELECT 1", "SELECT 2"}},
      {Dialect::tsql,
       "IF 1=1 BEGIN SELECT 1; SELECT 2; END; SELECT 3",
       {"IF 1=1 BEGIN SELECT 1; SELECT 2; END", "SELECT 3"}},
      {Dialect::tsql, "BEGIN TRAN; SELECT 1; COMMIT", {"BEGIN TRAN", "SELECT 1", "COMMIT"}},
      {Dialect::tsql,
       "BEGIN TRANSACTION; SELECT CASE WHEN 1=1 THEN 1 END; COMMIT",
       {"BEGIN TRANSACTION", "SELECT CASE WHEN 1=1 THEN 1 END", "COMMIT"}},
  });
}

TEST(SplitStatements, BracketsAndBackquotesAreCodeWhereTheDialectHasNoSuchQuotes) {
  check_split({
      {Dialect::postgres, "SELECT a[1]; SELECT 2", {"SELECT a[1]", "SELECT 2"}},
      {Dialect::ansi, "SELECT `a; b`", {"SELECT `a", "b`"}},
  });
}

TEST(IsBlank, OnlyWhitespaceCommentsAndSemicolons) {
  struct Case {
    Dialect d;
    std::string_view text;
    bool blank;
  };
  const Case cases[] = {
      {Dialect::ansi, "", true},
      {Dialect::ansi, " \n\t ", true},
      {Dialect::ansi, ";;", true},
      {Dialect::ansi, "-- x", true},
      {Dialect::ansi, "/* a */ ; -- b\n", true},
      {Dialect::ansi, "/* a */ x", false},
      {Dialect::postgres, "/* a /* b */ c */", true},
      {Dialect::sqlite, "/* a /* b */ c */", false},
      {Dialect::mysql, "# x", true},
      {Dialect::postgres, "# x", false},
      {Dialect::mysql, "--x", false},
      {Dialect::mysql, "-- x", true},
      {Dialect::mysql, "--\tx", true},
      {Dialect::sqlite, "''", false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(to_string(c.d)) + ": " + std::string(c.text));
    EXPECT_EQ(is_blank(c.text, c.d), c.blank);
  }
}

TEST(LeadingWords, UpperCasedCommentsSkippedStopsAtNonWord) {
  using W = std::vector<std::string>;
  EXPECT_EQ(leading_words("  -- c\n begin /* x */ transaction isolation level serializable",
                          Dialect::postgres, 3),
            (W{"BEGIN", "TRANSACTION", "ISOLATION"}));
  EXPECT_EQ(leading_words("begin;", Dialect::sqlite, 3), (W{"BEGIN"}));
  EXPECT_EQ(leading_words("SELECT (1)", Dialect::ansi, 5), (W{"SELECT"}));
  EXPECT_EQ(leading_words("\"Quoted\" x", Dialect::ansi, 2), (W{}));
  EXPECT_EQ(leading_words("", Dialect::ansi, 2), (W{}));
  EXPECT_EQ(leading_words("a b c", Dialect::ansi, 0), (W{}));
  EXPECT_EQ(leading_words("# c\nstart transaction", Dialect::mysql, 4),
            (W{"START", "TRANSACTION"}));
  EXPECT_EQ(leading_words("BEGIN 'x'", Dialect::ansi, 4), (W{"BEGIN"}));
}

TEST(LeadingWords, ViewsAsWrittenUpToTheSpan) {
  std::array<std::string_view, 3> w;
  EXPECT_EQ(
      leading_words("  -- c\n begin /* x */ Transaction isolation level", Dialect::postgres, w),
      3u);
  EXPECT_EQ(w[0], "begin");
  EXPECT_EQ(w[1], "Transaction");
  EXPECT_EQ(w[2], "isolation");
  EXPECT_EQ(leading_words("SELECT (1)", Dialect::ansi, w), 1u);
  EXPECT_EQ(leading_words("\"Quoted\" x", Dialect::ansi, w), 0u);
  EXPECT_EQ(leading_words("a b", Dialect::ansi, std::span<std::string_view>()), 0u);
  EXPECT_TRUE(iequals_upper("sElEcT", "SELECT"));
  EXPECT_FALSE(iequals_upper("SELECTS", "SELECT"));
}

struct MarkerCase {
  std::string_view text;
  std::vector<std::string_view> markers;  // each marker's text
};

void check_markers(Dialect d, const std::vector<MarkerCase>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(to_string(d)) + ": " + std::string(c.text));
    std::vector<std::string_view> got;
    for (const auto& m : find_markers(c.text, d))
      got.push_back(c.text.substr(m.offset, m.length));
    EXPECT_EQ(got, c.markers);
  }
}

TEST(FindMarkers, MysqlSeedLineHasExactlyOneMarker) {
  const std::string_view text = R"(SELECT CONCAT('?', ? /* ? */, "?") -- ?)";
  const auto markers = find_markers(text, Dialect::mysql);
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_EQ(markers[0].type, Marker::Type::question);
  EXPECT_EQ(markers[0].offset, text.find("? /*"));
  EXPECT_EQ(markers[0].length, 1u);
  EXPECT_EQ(markers[0].number, 1);
}

TEST(FindMarkers, MysqlQuestionMarksOutsideLiteralsAndComments) {
  check_markers(Dialect::mysql, {
                                    {"SELECT ?, ?", {"?", "?"}},
                                    {"SELECT 'a\\'?', ?", {"?"}},
                                    {"SELECT `?`, ? # ?\n, ?", {"?", "?"}},
                                    {"SELECT 1 --?\n, ?", {"?", "?"}},
                                    {"SELECT :a, @b", {}},
                                });
  const auto m = find_markers("SELECT ?, ?, ?", Dialect::mysql);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[2].number, 3);
}

TEST(FindMarkers, MysqlAndAnsiTakeAPostgresClientsDollarNumbers) {
  // $N is what a PostgreSQL client writes; the mysql and odbc drivers rewrite it.
  for (Dialect d : {Dialect::mysql, Dialect::ansi}) {
    check_markers(d, {
                         {"SELECT $1, ?, $12", {"$1", "?", "$12"}},
                         {"SELECT '$1', \"$2\", $ , $a -- $3\n/* $4 */", {}},
                     });
  }
  check_markers(Dialect::mysql, {{"SELECT a$1, `$2`, '\\'$3'", {}}});
  const auto m = find_markers("SELECT $2, $1", Dialect::ansi);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].type, Marker::Type::dollar);
  EXPECT_EQ(m[0].number, 2);
}

TEST(FindMarkers, PostgresDollarNumbersOnly) {
  check_markers(
      Dialect::postgres,
      {
          {"SELECT $1, $2", {"$1", "$2"}},
          {"SELECT $1, '$2', \"$3\", $$ $4 $$, $tag$ $5 $tag$, E'\\' $6', a$7, $8 -- $9\n/* "
           "$10 /* $11 */ */",
           {"$1", "$8"}},
          {"SELECT x::int, $1::text", {"$1"}},
          {"SELECT '{}'::jsonb ? 'a', :name, @x", {}},
          {"SELECT $12", {"$12"}},
      });
  const auto m = find_markers("SELECT $2, $1, $2", Dialect::postgres);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].type, Marker::Type::dollar);
  EXPECT_EQ(m[0].number, 2);
  EXPECT_EQ(m[1].number, 1);
}

TEST(FindMarkers, SqliteAllForms) {
  check_markers(Dialect::sqlite, {
                                     {"SELECT ?, ?5, ?, :a, @b, $c, $2, :a",
                                      {"?", "?5", "?", ":a", "@b", "$c", "$2", ":a"}},
                                     {"SELECT '?', \"?\", [?], `?`, -- ?\n /* :a */ 1", {}},
                                     {"SELECT x::int, a:b", {":b"}},
                                     {"SELECT $1::int, $a::b", {"$1::int", "$a::b"}},
                                     {"SELECT :, @, $", {}},
                                 });
  const auto m = find_markers("SELECT ?, ?5, ?, :a, $2, :a, ?", Dialect::sqlite);
  ASSERT_EQ(m.size(), 7u);
  EXPECT_EQ(m[0].number, 1);  // SQLite's indexes: ? takes the largest so far + 1
  EXPECT_EQ(m[1].number, 5);
  EXPECT_EQ(m[2].number, 6);
  EXPECT_EQ(m[3].type, Marker::Type::named);
  EXPECT_EQ(m[3].name, "a");
  EXPECT_EQ(m[4].type, Marker::Type::dollar);
  EXPECT_EQ(m[4].number, 2);
  EXPECT_EQ(m[6].number, 9);  // :a is 7, $2 is 8 (a name, to SQLite)
  const auto cast = find_markers("SELECT $1::int", Dialect::sqlite);
  ASSERT_EQ(cast.size(), 1u);
  EXPECT_EQ(cast[0].type, Marker::Type::dollar);
  EXPECT_EQ(cast[0].number, 1);
}

TEST(FindMarkers, TsqlAtNamesButNotGlobals) {
  check_markers(Dialect::tsql,
                {
                    {"SELECT @a, @@ROWCOUNT, '@b', [@c], N'@d', \"@e\", @f_1", {"@a", "@f_1"}},
                    {"SELECT ?, $1, :x", {}},
                    {"/* @a /* @b */ @c */ SELECT @d -- @e", {"@d"}},
                });
  const auto m = find_markers("EXEC p @p1 = @value", Dialect::tsql);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[1].name, "value");
}

TEST(FindMarkers, AnsiQuestionMarks) {
  check_markers(Dialect::ansi, {
                                   {"SELECT ?, '?', \"?\" -- ?\n, ? /* ? */", {"?", "?"}},
                                   {"SELECT $1, :a, @b", {"$1"}},
                               });
}

TEST(DropNationalPrefixes, NOfNLiteralsOnly) {
  EXPECT_EQ(drop_national_prefixes("SELECT N'Zoë', n'x' FROM t WHERE a = N'y'"),
            "SELECT 'Zoë', 'x' FROM t WHERE a = 'y'");
  EXPECT_EQ(drop_national_prefixes("N'a'"), "'a'");
  for (const char* text : {"SELECT 'N''x', [N'y], \"N'z\" -- N'c\n", "SELECT 1 /* N'a' */",
                           "SELECT N 'x'", "SELECT an'x'", "SELECT 1"}) {
    EXPECT_EQ(drop_national_prefixes(text), std::nullopt) << text;
  }
}

}  // namespace
}  // namespace wirepool::sql
