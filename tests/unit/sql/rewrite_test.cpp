// sql::rewrite_pg_sql for a SQLite backend (sql/rewrite.hpp, docs/catalog.md):
//  - casts: x::type to CAST(x AS ...) or a conversion function, or dropped; the
//    operand found back through literals, markers, qualified names, calls,
//    parentheses, subscripts and earlier casts; multi-word, qualified, typmod
//    and array types; $N::type keeps $N (SQLite alone would read "$1::int" as
//    one named variable)
//  - keywords and functions: current_user, session_user, now(), ILIKE,
//    pg_catalog.f(), json_build_object, AS DEFAULT
//  - operators: ~, ~*, !~, OPERATOR(pg_catalog.~), = ANY / <> ALL, COLLATE
//    pg_catalog.default
//  - arrays: ARRAY(subquery), ARRAY[...], x[i], unnest()/generate_subscripts()
//  - E'...' and $$...$$ become SQLite literals with the same value
//  - never inside '...', "...", [...], `...`, -- and /* */ comments, $$ bodies
//  - the plain path: may_need_pg_rewrite() false for plain statements;
//    nothing changes (nullopt) for them and for postgres, tsql and ansi
//    (mysql: rewrite_mysql_test.cpp)

#include <gtest/gtest.h>

#include "sql/rewrite.hpp"

namespace wirepool::sql {
namespace {

// Every statement here also holds the quick scan to the full token walk: when
// the walk changes the text, may_need_pg_rewrite() must have said maybe.
std::string rw(std::string_view text) {
  auto r = rewrite_pg_sql(text, Dialect::sqlite, {"alice"});
  auto full = detail::rewrite_sqlite_unscanned(text, {"alice"});
  EXPECT_TRUE(!full || may_need_pg_rewrite(text)) << "the quick scan passes over: " << text;
  EXPECT_EQ(r, full) << text;
  return r ? *r : std::string(text);
}

TEST(RewritePgSql, CastsBecomeCastOrAConversionFunction) {
  EXPECT_EQ(rw("SELECT 1::int4"), "SELECT CAST(1 AS INTEGER)");
  EXPECT_EQ(rw("SELECT '2'::int + 1"), "SELECT CAST('2' AS INTEGER) + 1");
  EXPECT_EQ(rw("SELECT x::double precision"), "SELECT CAST(x AS REAL)");
  EXPECT_EQ(rw("SELECT 'a'::character varying(20)"), "SELECT CAST('a' AS TEXT)");
  EXPECT_EQ(rw("SELECT v::numeric(10,2)"), "SELECT CAST(v AS NUMERIC)");
  EXPECT_EQ(rw("SELECT 't'::bool"), "SELECT pg_bool('t')");
  EXPECT_EQ(rw("SELECT '\\x01'::bytea"), "SELECT pg_bytea('\\x01')");
  EXPECT_EQ(rw("SELECT c.oid::pg_catalog.regclass"), "SELECT pg_regclass(c.oid)");
  // Types SQLite's CAST would damage keep the value as it is.
  EXPECT_EQ(rw("SELECT '2024-01-02'::timestamp"), "SELECT '2024-01-02'");
  EXPECT_EQ(rw("SELECT '2024-01-02 10:00'::timestamp with time zone"), "SELECT '2024-01-02 10:00'");
  EXPECT_EQ(rw("SELECT a::int2[]"), "SELECT a");
  EXPECT_EQ(rw("SELECT '{}'::jsonb"), "SELECT '{}'");
}

TEST(RewritePgSql, CastOperandIsThePrimaryBeforeIt) {
  EXPECT_EQ(rw("SELECT (a + b)::text"), "SELECT CAST((a + b) AS TEXT)");
  EXPECT_EQ(rw("SELECT f(x, g(y))::bigint"), "SELECT CAST(f(x, g(y)) AS INTEGER)");
  EXPECT_EQ(rw("SELECT s.t.c::int"), "SELECT CAST(s.t.c AS INTEGER)");
  EXPECT_EQ(rw("SELECT \"Col\"::text"), "SELECT CAST(\"Col\" AS TEXT)");
  EXPECT_EQ(rw("SELECT a + b::int"), "SELECT a + CAST(b AS INTEGER)");
  EXPECT_EQ(rw("SELECT x::regtype::text"), "SELECT CAST(pg_regtype(x) AS TEXT)");
  EXPECT_EQ(rw("SELECT a[1]::int"), "SELECT CAST(pg_array_get(a, 1) AS INTEGER)");
}

TEST(RewritePgSql, DollarMarkersKeepTheirNumbers) {
  EXPECT_EQ(rw("SELECT $1::int, $2"), "SELECT CAST($1 AS INTEGER), $2");
  EXPECT_EQ(rw("SELECT $2::text || $1::text"), "SELECT CAST($2 AS TEXT) || CAST($1 AS TEXT)");
  auto markers = find_markers(rw("SELECT $2::int + $1"), Dialect::sqlite);
  ASSERT_EQ(markers.size(), 2u);
  EXPECT_EQ(markers[0].number, 2);
  EXPECT_EQ(markers[1].number, 1);
}

TEST(RewritePgSql, SessionFunctionsAndKeywords) {
  EXPECT_EQ(rw("SELECT current_user, session_user"), "SELECT 'alice', 'alice'");
  EXPECT_EQ(rewrite_pg_sql("SELECT current_user", Dialect::sqlite, {"o'neil"}).value(),
            "SELECT 'o''neil'");
  EXPECT_EQ(rw("SELECT now()"), "SELECT strftime('%Y-%m-%d %H:%M:%f+00','now')");
  EXPECT_EQ(rw("SELECT a FROM t WHERE a ILIKE 'x%'"), "SELECT a FROM t WHERE a LIKE 'x%'");
  EXPECT_EQ(rw("select pg_catalog.version()"), "select version()");
  EXPECT_EQ(rw("SELECT json_build_object('a', 1)"), "SELECT json_object('a', 1)");
  EXPECT_EQ(rw("SELECT 1 AS DEFAULT"), "SELECT 1 AS \"default\"");
  // t.current_user is a column; now without () is a name.
  EXPECT_EQ(rw("SELECT t.current_user, now FROM t"), "SELECT t.current_user, now FROM t");
}

TEST(RewritePgSql, OperatorsBecomeSqliteForms) {
  EXPECT_EQ(
      rw("SELECT 1 WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default"),
      "SELECT 1 WHERE c.relname  REGEXP  '^(t)$' ");
  EXPECT_EQ(rw("SELECT a ~ 'x', a ~* 'x', a !~ 'x', a !~* 'x'"),
            "SELECT a  REGEXP  'x', a  REGEXP '(?i)' ||  'x', a  NOT REGEXP  'x', a  NOT REGEXP "
            "'(?i)' ||  'x'");
  EXPECT_EQ(rw("SELECT ~5"), "SELECT ~5");  // SQLite's bitwise NOT stays
  EXPECT_EQ(rw("SELECT 1 WHERE 'd' = any(k)"),
            "SELECT 1 WHERE 'd' IN (SELECT value FROM json_each(pg_array_json(k)))");
  EXPECT_EQ(rw("SELECT 1 WHERE a = ANY (SELECT b FROM t)"),
            "SELECT 1 WHERE a IN (SELECT b FROM t)");
  EXPECT_EQ(rw("SELECT 1 WHERE a <> ALL (SELECT b FROM t)"),
            "SELECT 1 WHERE a NOT IN (SELECT b FROM t)");
  EXPECT_EQ(rw("SELECT a COLLATE \"C\""), "SELECT a COLLATE BINARY");
}

TEST(RewritePgSql, ArraysAndSetReturningFunctions) {
  EXPECT_EQ(rw("SELECT array(select r from t order by 1)"),
            "SELECT (SELECT pg_array_agg(column1) FROM (SELECT NULL AS column1 WHERE 0 UNION ALL "
            "select r from t order by 1))");
  EXPECT_EQ(rw("SELECT ARRAY[1, 2]"), "SELECT pg_array(1, 2)");
  EXPECT_EQ(rw("SELECT k[s] FROM t"), "SELECT pg_array_get(k, s) FROM t");
  EXPECT_EQ(
      rw("SELECT unnest(ix.k) n, generate_subscripts(ix.k, 1) o FROM ix WHERE x"),
      "SELECT _wp_srf1.value n, (_wp_srf1.key + 1) o FROM ix , json_each(pg_array_json(ix.k)) "
      "AS _wp_srf1 WHERE x");
  // psql's \d+ on a partitioned table; the quick scan knows both names.
  EXPECT_EQ(rw("SELECT count(*) FROM pg_partition_tree('t') p"),
            "SELECT count(*) FROM (SELECT NULL AS relid WHERE 0) AS p");
  EXPECT_EQ(rw("SELECT * FROM pg_partition_ancestors('t') AS a(relid)"),
            "SELECT * FROM (SELECT NULL AS relid WHERE 0) AS a");
}

TEST(RewritePgSql, EscapeAndDollarStringsBecomeSqliteLiterals) {
  EXPECT_EQ(rw("SELECT E'a\\nb', E'it\\'s', E'\\x41\\101'"), "SELECT 'a\nb', 'it''s', 'AA'");
  EXPECT_EQ(rw("SELECT $$it's ::int$$, $f$x$f$"), "SELECT 'it''s ::int', 'x'");
  EXPECT_EQ(rw("SELECT $$abc$$"), "SELECT 'abc'");  // no other trigger in the text
  EXPECT_EQ(rw("SELECT $f$x$f$ AS v"), "SELECT 'x' AS v");
}

TEST(RewritePgSql, NeverTouchesStringsIdentifiersOrComments) {
  for (std::string_view text : {
           "SELECT 'a::int', 'current_user', 'now()', 'x ~ y' FROM t",
           "SELECT \"a::int\", \"current_user\" FROM t",
           "SELECT [a::int], `now()` FROM t",
           "SELECT 1 -- ::int current_user now()",
           "SELECT 1 /* ::int current_user ILIKE */",
       }) {
    SCOPED_TRACE(text);
    EXPECT_EQ(rw(text), text);
  }
}

// Random text over the bytes that matter: whenever the full walk rewrites it,
// the quick scan must have said maybe.
TEST(RewritePgSql, QuickScanIsConservativeOnRandomText) {
  static constexpr std::string_view kPieces[] = {" ",          "now",  "()",
                                                 "any",        "(",    ")",
                                                 "::",         ":",    "int",
                                                 "e",          "E",    "'",
                                                 "$",          "$$",   "$1",
                                                 "~",          "[",    "]",
                                                 "1",          "_",    "\"",
                                                 "--",         "\n",   "/*",
                                                 "*/",         "=",    "ilike",
                                                 "x",          "é",    "pg_",
                                                 "all",        "some", "cat",
                                                 "pg_catalog", ".",    "array",
                                                 "collate",    "as",   "default",
                                                 "oper",       "ator", "current_user",
                                                 "unnest",     ",",    "generate_series"};
  uint64_t state = 42;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<size_t>(state >> 33);
  };
  int rewritten = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    const size_t pieces = 1 + next() % 40;
    for (size_t i = 0; i < pieces; ++i)
      text += kPieces[next() % std::size(kPieces)];
    if (!detail::rewrite_sqlite_unscanned(text, {"u"})) continue;
    ++rewritten;
    ASSERT_TRUE(may_need_pg_rewrite(text)) << text;
  }
  EXPECT_GT(rewritten, 1000);
}

TEST(RewritePgSql, PlainStatementsTakeTheCheapPath) {
  for (std::string_view text : {
           "SELECT abalance FROM pgbench_accounts WHERE aid = $1",
           "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
           "INSERT INTO t (a, b) VALUES ($1, 'x')",
       }) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(may_need_pg_rewrite(text));
    EXPECT_FALSE(rewrite_pg_sql(text, Dialect::sqlite, {"u"}).has_value());
  }
  EXPECT_TRUE(may_need_pg_rewrite("SELECT 1::int"));
  // Bytes that only look like a trigger: $N markers, a single ':', words that
  // share a rewrite word's first letter and length.
  for (std::string_view text : {"SELECT $1, $12 FROM t WHERE a = :x", "SELECT aid, ann, nov FROM t",
                                "UPDATE t SET unnset = 1", "SELECT é, ñow FROM t"}) {
    SCOPED_TRACE(text);
    EXPECT_FALSE(may_need_pg_rewrite(text));
  }
  // The scan reads 64 bytes at a time: words across a block's end, at its start.
  const std::string pad(61, 'x');
  for (const std::string& text : {pad + " now()", "SELECT " + pad + "::int", pad + "   now()",
                                  std::string(64, 'y') + " now()", pad + "  current_user",
                                  std::string(63, ' ') + "E'x'", std::string(120, ' ') + "~"}) {
    SCOPED_TRACE(text);
    EXPECT_TRUE(may_need_pg_rewrite(text));
  }
  EXPECT_FALSE(may_need_pg_rewrite(std::string(62, 'x') + "now()"));  // one word: xx...xnow
  for (Dialect d : {Dialect::postgres, Dialect::ansi}) {  // mysql, tsql: their own files
    EXPECT_FALSE(rewrite_pg_sql("SELECT 1::int, current_user", d, {"u"}).has_value());
  }
}

}  // namespace
}  // namespace wirepool::sql
