// Parameter binding against real SQLite:
//  - $N binds by N, not by SQLite's first-appearance index: SELECT $2, $1 swaps
//  - $1 used twice binds one value; $1::int binds as $1
//  - ? binds in order, ?NNN by number
//  - :a, @b, $c bind by name, given with or without the sigil
//  - count mismatches: too few / too many positional values -> 08P01 with
//    PostgreSQL's wording; a named marker without a value or a named value no
//    marker uses -> 42P02
//  - multi-statement text: each statement binds what it uses; leftovers are
//    checked against the whole text
//  - prepared statements report one parameter per $N up to the highest N
//    (or per ?), extended by the caller's type hints, and insist on that count

#include "tests/integration/sqlite/sqlite_fixture.hpp"

namespace wirepool::sqlite_it {
namespace {

class Params : public SqliteTest {
 protected:
  void SetUp() override {
    SqliteTest::SetUp();
    conn = open();
  }
  std::vector<std::string> texts(std::string_view sql, std::vector<Param> params) {
    auto t = fetch(conn, sql, std::move(params));
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    std::vector<std::string> out;
    if (t.ok() && !t->rows.empty()) {
      for (const auto& v : t->rows[0])
        out.push_back(v.kind == Kind::I64 ? std::to_string(v.i64) : v.str);
    }
    return out;
  }
  Connection conn;
};

using S = std::vector<std::string>;

TEST_F(Params, DollarNumbersBindByNumberNotByAppearance) {
  EXPECT_EQ(texts("SELECT $2, $1", {P(T("a")), P(T("b"))}), (S{"b", "a"}));
  EXPECT_EQ(texts("SELECT $3, $1, $2", {P(T("a")), P(T("b")), P(T("c"))}), (S{"c", "a", "b"}));
  EXPECT_EQ(texts("SELECT $1, $1 || $2", {P(T("x")), P(T("y"))}), (S{"x", "xy"}));
  EXPECT_EQ(texts("SELECT $2::int + 1, $1::text", {P(T("a")), P(I(41))}), (S{"42", "a"}));
}

TEST_F(Params, QuestionMarksBindInOrderAndByNumber) {
  EXPECT_EQ(texts("SELECT ?, ?", {P(T("a")), P(T("b"))}), (S{"a", "b"}));
  EXPECT_EQ(texts("SELECT ?2, ?1, ?2", {P(T("a")), P(T("b"))}), (S{"b", "a", "b"}));
}

TEST_F(Params, NamedMarkersBindByNameWithOrWithoutSigil) {
  EXPECT_EQ(texts("SELECT :a, @b, $c", {N("a", T("1")), N("@b", T("2")), N("$c", T("3"))}),
            (S{"1", "2", "3"}));
  EXPECT_EQ(texts("SELECT :a, :a", {N(":a", T("x"))}), (S{"x", "x"}));
}

void expect_error(const db::Result<Table>& r, std::string_view sqlstate, std::string_view message) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::invalid_query);
  EXPECT_EQ(r.error().sqlstate, sqlstate);
  EXPECT_EQ(r.error().message, message);
}

TEST_F(Params, TooFewOrTooManyPositionalValuesAre08P01) {
  expect_error(fetch(conn, "SELECT $1, $2", {P(I(1))}), "08P01",
               "bind message supplies 1 parameters, but the statement requires 2");
  expect_error(fetch(conn, "SELECT $1", {P(I(1)), P(I(2))}), "08P01",
               "bind message supplies 2 parameters, but the statement requires 1");
  expect_error(fetch(conn, "SELECT 1", {P(I(1))}), "08P01",
               "bind message supplies 1 parameters, but the statement requires 0");
  expect_error(fetch(conn, "SELECT $2", {P(I(1))}), "08P01",
               "bind message supplies 1 parameters, but the statement requires 2");
  expect_error(fetch(conn, "SELECT ?, ?", {}), "08P01",
               "bind message supplies 0 parameters, but the statement requires 2");
  expect_error(fetch(conn, "", {P(I(1))}), "08P01",
               "bind message supplies 1 parameters, but the statement requires 0");
}

TEST_F(Params, NamedMismatchesAre42P02) {
  expect_error(fetch(conn, "SELECT :a, :b", {N("a", I(1))}), "42P02",
               "no value supplied for parameter :b");
  expect_error(fetch(conn, "SELECT :a", {N("a", I(1)), N("zz", I(2))}), "42P02",
               "parameter \"zz\" does not appear in the statement");
}

TEST_F(Params, MultiStatementTextBindsEachStatementAndChecksLeftoversOverTheWhole) {
  exec(conn, "CREATE TABLE t (a)");
  auto rows = conn.query("INSERT INTO t VALUES ($1); SELECT a, $2 FROM t",
                         std::vector<Param>{P(I(7)), P(T("x"))});
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_TRUE(rows->next_result().value());
  auto t = read_all(rows.value());
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0][0].i64, 7);
  EXPECT_EQ(t->rows[0][1].str, "x");
  ASSERT_TRUE(rows->close().ok());

  auto extra = conn.query("SELECT $1; SELECT $2", std::vector<Param>{P(I(1)), P(I(2)), P(I(3))});
  ASSERT_FALSE(extra.ok());
  EXPECT_EQ(extra.error().sqlstate, "08P01");
  auto named = conn.query("SELECT 1; SELECT :later", std::vector<Param>{N("later", I(5))});
  ASSERT_TRUE(named.ok()) << named.error().message;
}

TEST_F(Params, PreparedStatementsReportParametersUpToTheHighestDollarNumber) {
  auto st = conn.prepare("SELECT $3, $1");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->params().size(), 3u);
  for (const auto& p : st->params())
    EXPECT_EQ(p.kind, Kind::Null);
  auto q = conn.prepare("SELECT ?, ?");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->params().size(), 2u);
  auto none = conn.prepare("SELECT 1");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->params().size(), 0u);

  std::vector<db::ParamInfo> hints(2);
  hints[0].kind = Kind::I64;
  hints[1].kind = Kind::Text;
  auto hinted = conn.prepare("SELECT $1", hints);
  ASSERT_TRUE(hinted.ok());
  ASSERT_EQ(hinted->params().size(), 2u);
  EXPECT_EQ(hinted->params()[0].kind, Kind::I64);
  EXPECT_EQ(hinted->params()[1].kind, Kind::Text);
  // The declared count is the count a client must supply (PostgreSQL's Bind rule).
  EXPECT_FALSE(hinted->query(std::vector<Param>{P(I(1))}).ok());
  auto rows = hinted->query(std::vector<Param>{P(I(1)), P(T("unused"))});
  ASSERT_TRUE(rows.ok()) << rows.error().message;

  auto r = st->query(std::vector<Param>{P(T("a")), P(T("b"))});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().sqlstate, "08P01");
  auto ok = st->query(std::vector<Param>{P(T("a")), P(T("b")), P(T("c"))});
  ASSERT_TRUE(ok.ok());
  auto t = read_all(ok.value());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows[0][0].str, "c");
  EXPECT_EQ(t->rows[0][1].str, "a");
}

TEST_F(Params, PreparedStatementsWithNamedMarkersTakeNamedValues) {
  auto st = conn.prepare("SELECT :a || @b");
  ASSERT_TRUE(st.ok());
  auto rows = st->query(std::vector<Param>{N("a", T("x")), N("b", T("y"))});
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  auto t = read_all(rows.value());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows[0][0].str, "xy");
}

}  // namespace
}  // namespace wirepool::sqlite_it
