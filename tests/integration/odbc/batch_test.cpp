// Statement::execute_batch through each verified ODBC driver: parameter arrays
// (SQL_ATTR_PARAMSET_SIZE, column-wise binding) instead of one SQLExecute a row.
//  - every value kind, NULLs at varying rows and texts of varying length
//    (non-ASCII, one past 4000 characters) in one array, read back exactly;
//    the driver's counter says it went as one array
//  - affected counts: per row where the driver reports them (psqlODBC,
//    SQL_PARC_BATCH), the total otherwise (MariaDB ODBC, SQLite ODBC)
//  - a column whose values are of different kinds runs row by row, correctly
//  - a duplicate key in the array is 23505 and, in a transaction, leaves
//    none of the batch's rows and the transaction usable; single-row
//    executions of the same statement work after a batch (bindings reset)

#include <string>
#include <vector>

#include "tests/integration/odbc/odbc_fixture.hpp"

namespace wirepool::odbc_it {
namespace {

class Batch : public OdbcTest {
 protected:
  /// (id, i, f, n, s, by, ts) with the target's types.
  std::string create(const std::string& t) {
    switch (target()) {
      case Target::postgresql:
        return "CREATE TABLE " + t +
               " (id bigint PRIMARY KEY, i bigint, f double precision, n numeric(10,2), s text, "
               "by bytea, ts timestamp, b boolean)";
      case Target::mariadb:
        return "CREATE TABLE " + t +
               " (id bigint PRIMARY KEY, i bigint, f double, n decimal(10,2), s text, by_ blob, "
               "ts datetime(6), b boolean)";
      case Target::sqlite:
        return "CREATE TABLE " + t +
               " (id integer PRIMARY KEY, i bigint, f double, n numeric(10,2), s text, by_ blob, "
               "ts timestamp, b boolean)";
    }
    return {};
  }
  std::string by() const { return target() == Target::postgresql ? "by" : "by_"; }

  static int64_t count(Connection& c, const std::string& t) {
    auto got = fetch(c, "SELECT COUNT(*) FROM " + t);
    EXPECT_TRUE(got.ok());
    return got.ok() && !got->rows.empty() ? got->rows[0][0].i64 : -1;
  }
};

std::string text_of_row(int r) {
  if (r == 7) return std::string(5000, 'x');  // past 4000: a long text
  if (r % 5 == 0) return "h\xc3\xa9llo \xe2\x82\xac " + std::to_string(r);  // héllo €
  return std::string(static_cast<size_t>(r % 13), 'a' + static_cast<char>(r % 26));
}

// Of one length: SQLite ODBC cuts binary array values to the first row's
// length, so for it binary values of different lengths go row by row
// (MixedKindsInOneColumnRunRowByRow).
std::string bytes_of_row(int r) {
  return std::string("\0b", 2) + static_cast<char>('0' + r / 10) + static_cast<char>('0' + r % 10);
}

// 2024-02-29T13:45:30.123000 plus r seconds (SQLite ODBC keeps milliseconds).
int64_t ts_of_row(int r) {
  return 1709214330123000 + int64_t{r} * 1000000;
}

TEST_P(Batch, EveryKindWithNullsGoesAsOneArray) {
  const std::string t = table();
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, create(t));
  auto st = conn.prepare("INSERT INTO " + t + " (id, i, f, n, s, " + by() +
                         ", ts, b) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)");
  ASSERT_TRUE(st.ok()) << st.error().message;
  constexpr int kRows = 50;
  std::vector<std::vector<Param>> rows;
  for (int r = 0; r < kRows; ++r) {
    const bool null = r % 4 == 3;
    std::vector<Param> p;
    p.push_back(P(Value::int64(r)));
    p.push_back(P(null ? Value::null() : Value::int64(int64_t{r} * -1000003)));
    p.push_back(P(null ? Value::null() : Value::float64(r + 0.25)));
    p.push_back(P(null ? Value::null() : Value::decimal(std::to_string(r) + ".50")));
    p.push_back(P(r % 4 == 1 ? Value::null() : Value::text(text_of_row(r))));
    p.push_back(P(null ? Value::null() : Value::bytes(bytes_of_row(r))));
    p.push_back(P(null ? Value::null() : Value::time(ts_of_row(r))));
    p.push_back(P(null ? Value::null() : Value::boolean(r % 2 == 0)));
    rows.push_back(std::move(p));
  }
  std::vector<db::Params> spans(rows.begin(), rows.end());
  const auto before = odbc::fetch_stats_for_test(conn);
  auto info = st->execute_batch(spans);
  ASSERT_TRUE(info.ok()) << info.error().sqlstate << " " << info.error().message;
  EXPECT_EQ(odbc::fetch_stats_for_test(conn).batches, before.batches + 1);
  EXPECT_EQ(info->total, kRows);
  if (conn.capabilities().batch_row_counts) {
    EXPECT_EQ(info->affected, std::vector<int64_t>(kRows, 1));
  } else {
    EXPECT_TRUE(info->affected.empty());
  }

  auto got = fetch(conn, "SELECT id, i, f, n, s, " + by() + ", ts, b FROM " + t + " ORDER BY id");
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->rows.size(), size_t{kRows});
  for (int r = 0; r < kRows; ++r) {
    SCOPED_TRACE("row " + std::to_string(r));
    const auto& row = got->rows[static_cast<size_t>(r)];
    EXPECT_EQ(row[0].i64, r);
    if (r % 4 == 1) {
      EXPECT_TRUE(row[4].is_null());
    } else {
      EXPECT_EQ(row[4].str, text_of_row(r));
    }
    if (r % 4 == 3) {
      for (size_t c : {1, 2, 3, 5, 6, 7})
        EXPECT_TRUE(row[c].is_null()) << "column " << c;
      continue;
    }
    EXPECT_EQ(row[1].i64, int64_t{r} * -1000003);
    EXPECT_DOUBLE_EQ(row[2].f64, r + 0.25);
    // NUMERIC(10,2) at its scale on every driver (SQLite ODBC: from the table).
    EXPECT_EQ(row[3].str, std::to_string(r) + ".50");
    EXPECT_EQ(row[5].str, bytes_of_row(r));
    EXPECT_EQ(row[6].micros, ts_of_row(r));
    // MariaDB's BOOLEAN is TINYINT(1), read back as I64.
    if (target() == Target::mariadb) {
      EXPECT_EQ(row[7].i64, r % 2 == 0 ? 1 : 0);
    } else {
      EXPECT_EQ(row[7].b, r % 2 == 0);
    }
  }
  // The same statement, one row, after the batch: bound afresh.
  auto one = st->execute(std::vector<Param>{P(Value::int64(1000)), P(Value::int64(1)),
                                            P(Value::float64(1)), P(Value::decimal("1.00")),
                                            P(Value::text("one")), P(Value::bytes("1")),
                                            P(Value::time(ts_of_row(0))), P(Value::boolean(true))});
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(one->affected, 1);
  EXPECT_EQ(count(conn, t), kRows + 1);
}

TEST_P(Batch, UpdateCountsPerRowOrInTotal) {
  const std::string t = table();
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, create(t));
  for (int r = 0; r < 10; ++r)
    exec(conn, "INSERT INTO " + t + " (id, i) VALUES ($1, 0)", {P(Value::int64(r))});
  auto st = conn.prepare("UPDATE " + t + " SET i = i + 1 WHERE id >= $1");
  ASSERT_TRUE(st.ok()) << st.error().message;
  std::vector<std::vector<Param>> rows;
  for (int64_t from : {0, 4, 20, 8})
    rows.push_back({P(Value::int64(from))});
  std::vector<db::Params> spans(rows.begin(), rows.end());
  auto info = st->execute_batch(spans);
  ASSERT_TRUE(info.ok()) << info.error().sqlstate << " " << info.error().message;
  EXPECT_EQ(info->total, 10 + 6 + 0 + 2);
  if (conn.capabilities().batch_row_counts) {
    EXPECT_EQ(info->affected, (std::vector<int64_t>{10, 6, 0, 2}));
  }
  auto got = fetch(conn, "SELECT SUM(i) FROM " + t);
  ASSERT_TRUE(got.ok());
  // psqlODBC and MariaDB answer SUM(bigint) as a decimal, SQLite as an integer.
  const auto& v = got->rows[0][0];
  EXPECT_EQ(v.kind == Kind::I64 ? std::to_string(v.i64) : v.str, "18");
}

TEST_P(Batch, MixedKindsInOneColumnRunRowByRow) {
  const std::string t = table();
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, create(t));
  {
    // Binary values of different lengths: one array, except on SQLite ODBC.
    auto st = conn.prepare("INSERT INTO " + t + " (id, " + by() + ") VALUES ($1, $2)");
    ASSERT_TRUE(st.ok());
    std::vector<std::vector<Param>> rows{{P(Value::int64(11)), P(Value::bytes("abc"))},
                                         {P(Value::int64(12)), P(Value::bytes("abcdefgh"))},
                                         {P(Value::int64(13)), P(Value::bytes("a"))}};
    std::vector<db::Params> spans(rows.begin(), rows.end());
    const auto before = odbc::fetch_stats_for_test(conn);
    auto info = st->execute_batch(spans);
    ASSERT_TRUE(info.ok()) << info.error().message;
    EXPECT_EQ(odbc::fetch_stats_for_test(conn).batches,
              before.batches + (target() == Target::sqlite ? 0 : 1));
    EXPECT_EQ(info->total, 3);
    auto got = fetch(conn, "SELECT " + by() + " FROM " + t + " ORDER BY id");
    ASSERT_TRUE(got.ok());
    ASSERT_EQ(got->rows.size(), 3u);
    EXPECT_EQ(got->rows[0][0].str, "abc");
    EXPECT_EQ(got->rows[1][0].str, "abcdefgh");
    EXPECT_EQ(got->rows[2][0].str, "a");
    exec(conn, "DELETE FROM " + t);
  }
  auto st = conn.prepare("INSERT INTO " + t + " (id, s) VALUES ($1, $2)");
  ASSERT_TRUE(st.ok());
  std::vector<std::vector<Param>> rows{{P(Value::int64(1)), P(Value::text("one"))},
                                       {P(Value::int64(2)), P(Value::int64(2))},
                                       {P(Value::int64(3)), P(Value::null())}};
  std::vector<db::Params> spans(rows.begin(), rows.end());
  const auto before = odbc::fetch_stats_for_test(conn);
  auto info = st->execute_batch(spans);
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(odbc::fetch_stats_for_test(conn).batches, before.batches);  // not an array
  EXPECT_EQ(info->affected, (std::vector<int64_t>{1, 1, 1}));
  auto got = fetch(conn, "SELECT s FROM " + t + " ORDER BY id");
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->rows.size(), 3u);
  EXPECT_EQ(got->rows[0][0].str, "one");
  EXPECT_EQ(got->rows[1][0].str, "2");
  EXPECT_TRUE(got->rows[2][0].is_null());
}

TEST_P(Batch, DuplicateKeyIsAConstraintErrorAndLeavesNoRowBehind) {
  const std::string t = table();
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, create(t));
  exec(conn, "INSERT INTO " + t + " (id) VALUES (3)");
  // Prepared before the transaction, as a client's Parse may be.
  auto st = conn.prepare("INSERT INTO " + t + " (id, s) VALUES ($1, $2)");
  ASSERT_TRUE(st.ok());
  auto tx = conn.begin();
  ASSERT_TRUE(tx.ok()) << tx.error().message;
  exec(conn, "INSERT INTO " + t + " (id) VALUES (100)");  // before the batch: kept
  std::vector<std::vector<Param>> rows;
  for (int r = 0; r < 6; ++r)
    rows.push_back({P(Value::int64(r)), P(Value::text("r" + std::to_string(r)))});
  std::vector<db::Params> spans(rows.begin(), rows.end());
  auto info = st->execute_batch(spans);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().code, Errc::constraint);
  EXPECT_EQ(info.error().sqlstate, "23505") << info.error().message;
  EXPECT_EQ(count(conn, t), 2);  // none of the batch's rows (SQLite ODBC kept 0-2 unguarded)
  // The transaction goes on, and the statement runs a row at a time after it.
  auto one = st->execute(std::vector<Param>{P(Value::int64(10)), P(Value::text("ten"))});
  ASSERT_TRUE(one.ok()) << one.error().sqlstate << " " << one.error().message;
  ASSERT_TRUE(tx->commit().ok());
  EXPECT_EQ(count(conn, t), 3);
}

INSTANTIATE_TEST_SUITE_P(Odbc, Batch, WP_ODBC_TARGETS);

}  // namespace
}  // namespace wirepool::odbc_it
