// Streaming and the non-blocking state machine:
//  - a 200,000-row SELECT streams one row at a time: the reader never holds a
//    PGresult of more than one row (libpq 15: single-row mode) and every row
//    arrives in order
//  - calls answer would_block and resume when repeated (driven by hand here,
//    with poll(2) on io_interest()); a 32 MB parameter (write waits)
//  - a reader closed early leaves the connection usable; a reader destroyed
//    without close is drained by the next call
//  - multi-statement text: next_result walks every statement, with its own
//    columns, rows and command tag; an error in a later statement is answered by
//    the next_result that reaches it
//  - an empty query and a statement with no rows
//  - prepared statements: described parameter and column types, encoding into
//    the server's types with a range check (I64 into int4: 22003), reuse, and
//    DEALLOCATE on close (also while a reader is open, and for a dropped handle)

#include <poll.h>

#include "backends/postgresql/postgresql_connection.hpp"
#include "tests/integration/postgresql/pg_fixture.hpp"

namespace wirepool::pg_it {
namespace {

class Streaming : public PgTest {
 protected:
  void SetUp() override {
    PgTest::SetUp();
    if (IsSkipped()) return;
    conn = open();
  }
  int64_t prepared_count() {
    return scalar(conn, "SELECT count(*) FROM pg_prepared_statements").i64;
  }
  Connection conn;
};

TEST_F(Streaming, TwoHundredThousandRowsOneAtATime) {
  // Through the driver object, to see what the reader holds.
  db::ConnectionImpl& impl = *conn.impl();
  auto started = db::call_blocking(impl, [&] {
    return impl.query("SELECT g, repeat('x', 20) FROM generate_series(1, 200000) g", {}, {});
  });
  ASSERT_TRUE(started.ok()) << started.error().message;
  std::unique_ptr<db::RowsImpl> rows = std::move(started.value());
  std::vector<db::ValueView> row(2);
  int64_t n = 0;
  int max_held = 0;
  for (;;) {
    auto more = db::call_blocking(impl, [&] { return rows->next_borrowed(row); });
    ASSERT_TRUE(more.ok()) << more.error().message;
    if (!more.value()) break;
    ++n;
    ASSERT_EQ(row[0].i64, n);
    max_held = std::max(max_held, postgresql::held_rows_for_test(*rows));
  }
  EXPECT_EQ(n, 200000);
  EXPECT_EQ(max_held, 1) << "the reader buffered more than one row";
  EXPECT_EQ(rows->command().tag, "SELECT 200000");
  EXPECT_EQ(rows->command().verb, "SELECT");
  ASSERT_TRUE(db::call_blocking(impl, [&] { return rows->close(); }).ok());
}

TEST_F(Streaming, CallsAnswerWouldBlockAndResumeWhenRepeated) {
  db::ConnectionImpl& impl = *conn.impl();
  int would_block = 0;
  auto wait = [&] {
    ++would_block;
    const db::IoInterest io = impl.io_interest();
    ASSERT_FALSE(io.none());
    pollfd p{io.fd, static_cast<short>((io.read ? POLLIN : 0) | (io.write ? POLLOUT : 0)), 0};
    ASSERT_GT(::poll(&p, 1, 10000), 0);
  };
  db::Result<std::unique_ptr<db::RowsImpl>> r = db::Error{};
  for (;;) {
    r = impl.query("SELECT pg_sleep(0.05), 7", {}, {});
    if (!db::is_would_block(r)) break;
    wait();
  }
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GT(would_block, 0);
  std::vector<db::ValueView> row(2);
  db::Result<bool> more = false;
  for (;;) {
    more = r.value()->next_borrowed(row);
    if (!db::is_would_block(more)) break;
    wait();
  }
  ASSERT_TRUE(more.ok() && more.value());
  EXPECT_EQ(row[1].i64, 7);
  ASSERT_TRUE(db::call_blocking(impl, [&] { return r.value()->close(); }).ok());
}

TEST_F(Streaming, ALargeParameterIsSentAcrossWaitsAndResumes) {
  db::ConnectionImpl& impl = *conn.impl();
  // More than the socket buffers take at once, usually: PQflush then answers 1
  // and the call waits for write. Whether it does depends on how fast the
  // server reads (under ASan it may keep up), so the wait is recorded, not required.
  const std::string big(32 << 20, 'z');
  std::vector<Param> params{P(T(big))};
  bool waited_for_write = false;
  db::Result<std::unique_ptr<db::RowsImpl>> r = db::Error{};
  for (;;) {
    r = impl.query("SELECT length($1::text)", params, {});
    if (!db::is_would_block(r)) break;
    const db::IoInterest io = impl.io_interest();
    waited_for_write |= io.write;
    pollfd p{io.fd, static_cast<short>((io.read ? POLLIN : 0) | (io.write ? POLLOUT : 0)), 0};
    ASSERT_GT(::poll(&p, 1, 10000), 0);
  }
  ASSERT_TRUE(r.ok()) << r.error().message;
  RecordProperty("waited_for_write", waited_for_write ? "yes" : "no");
  std::vector<db::ValueView> row(1);
  auto more = db::call_blocking(impl, [&] { return r.value()->next_borrowed(row); });
  ASSERT_TRUE(more.ok() && more.value());
  EXPECT_EQ(row[0].i64, static_cast<int64_t>(big.size()));
  ASSERT_TRUE(db::call_blocking(impl, [&] { return r.value()->close(); }).ok());
}

TEST_F(Streaming, EarlyCloseAndDroppedReadersLeaveTheConnectionUsable) {
  auto rows = query(conn, "SELECT generate_series(1, 50000)");
  ASSERT_TRUE(rows.ok());
  std::vector<Value> row(1);
  ASSERT_TRUE(blocking(conn, [&] { return rows->next(row); }).value());
  ASSERT_TRUE(close_rows(conn, rows.value()).ok());
  EXPECT_EQ(scalar(conn, "SELECT 1").i64, 1);
  {
    auto dropped = query(conn, "SELECT generate_series(1, 50000)");
    ASSERT_TRUE(dropped.ok());
    ASSERT_TRUE(blocking(conn, [&] { return dropped->next(row); }).value());
  }  // destroyed without close: the next call drains it
  EXPECT_EQ(scalar(conn, "SELECT 2").i64, 2);
}

TEST_F(Streaming, MultiStatementTextWalksEveryResult) {
  const std::string t = table();
  auto rows =
      query(conn, "DROP TABLE IF EXISTS " + t + "; CREATE TABLE " + t + " (a int); INSERT INTO " +
                      t + " VALUES (1), (2); SELECT a, 'x' AS b FROM " + t +
                      " ORDER BY a; UPDATE " + t + " SET a = a + 1");
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  std::vector<std::string> tags;
  std::vector<size_t> widths;
  std::vector<size_t> counts;
  for (;;) {
    auto tbl = read_all(conn, rows.value());
    ASSERT_TRUE(tbl.ok()) << tbl.error().message;
    tags.push_back(tbl->info.tag);
    widths.push_back(tbl->columns.size());
    counts.push_back(tbl->rows.size());
    auto more = blocking(conn, [&] { return rows->next_result(); });
    ASSERT_TRUE(more.ok()) << more.error().message;
    if (!more.value()) break;
  }
  ASSERT_TRUE(close_rows(conn, rows.value()).ok());
  EXPECT_EQ(tags, (std::vector<std::string>{"DROP TABLE", "CREATE TABLE", "INSERT 0 2", "SELECT 2",
                                            "UPDATE 2"}));
  EXPECT_EQ(widths, (std::vector<size_t>{0, 0, 0, 2, 0}));
  EXPECT_EQ(counts, (std::vector<size_t>{0, 0, 0, 2, 0}));
}

TEST_F(Streaming, AnErrorInALaterStatementIsAnsweredByNextResult) {
  auto rows = query(conn, "SELECT 1; SELECT 1/0; SELECT 3");
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  auto first = read_all(conn, rows.value());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->rows.size(), 1u);
  auto more = blocking(conn, [&] { return rows->next_result(); });
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.error().sqlstate, "22012");
  ASSERT_TRUE(close_rows(conn, rows.value()).ok());
  EXPECT_EQ(scalar(conn, "SELECT 4").i64, 4);
}

TEST_F(Streaming, EmptyQueryAndStatementsWithoutRows) {
  auto empty = fetch(conn, "");
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  EXPECT_TRUE(empty->columns.empty());
  auto none = fetch(conn, "SELECT 1 WHERE false");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->columns.size(), 1u);
  EXPECT_TRUE(none->rows.empty());
  EXPECT_EQ(none->info.tag, "SELECT 0");
  auto set = fetch(conn, "SET statement_timeout = 0");
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->info.tag, "SET");
  EXPECT_EQ(set->info.affected, -1);
}

TEST_F(Streaming, PreparedStatementsAreDescribedAndEncodeIntoServerTypes) {
  const std::string t = table();
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, "CREATE TABLE " + t + " (id int4 PRIMARY KEY, amount numeric(10,2), note text)");
  const int64_t before = prepared_count();
  auto st = blocking(conn, [&] {
    return conn.prepare("INSERT INTO " + t + " VALUES ($1, $2, $3) RETURNING id, amount");
  });
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_EQ(st->params().size(), 3u);
  EXPECT_EQ(st->params()[0].native.pg_oid, 23u);
  EXPECT_EQ(st->params()[0].kind, Kind::I64);
  EXPECT_EQ(st->params()[1].native.pg_oid, 1700u);
  EXPECT_EQ(st->params()[1].kind, Kind::Decimal);
  EXPECT_EQ(st->params()[2].kind, Kind::Text);
  ASSERT_EQ(st->columns().size(), 2u);
  EXPECT_EQ(st->columns()[1].native.pg_typmod, ((10 << 16) | 2) + 4);
  EXPECT_EQ(prepared_count(), before + 1);

  for (int64_t id : {1, 2}) {
    std::vector<Param> params{P(I(id)), P(Value::float64(2.5)), P(T("n"))};
    auto rows = blocking(conn, [&] { return st->query(params); });
    ASSERT_TRUE(rows.ok()) << rows.error().message;
    auto tbl = read_all(conn, rows.value());
    ASSERT_TRUE(close_rows(conn, rows.value()).ok());
    ASSERT_TRUE(tbl.ok());
    EXPECT_EQ(tbl->rows[0][0].i64, id);
    EXPECT_EQ(tbl->rows[0][1].str, "2.50");
    EXPECT_EQ(tbl->info.tag, "INSERT 0 1");
    EXPECT_EQ(tbl->info.affected, 1);
  }
  std::vector<Param> too_big{P(I(3000000000LL)), P(Value::null()), P(Value::null())};
  auto range = blocking(conn, [&] { return st->query(too_big); });
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.error().code, Errc::invalid_query);
  EXPECT_EQ(range.error().sqlstate, "22003");
  EXPECT_NE(range.error().message.find("out of range for type integer"), std::string::npos);

  ASSERT_TRUE(blocking(conn, [&] { return st->close(); }).ok());
  EXPECT_EQ(prepared_count(), before);
}

TEST_F(Streaming, StatementsClosedOrDroppedWhileBusyAreDeallocatedLater) {
  const int64_t before = prepared_count();
  auto a = blocking(conn, [&] { return conn.prepare("SELECT $1::int"); });
  ASSERT_TRUE(a.ok());
  {
    auto b = blocking(conn, [&] { return conn.prepare("SELECT $1::text"); });
    ASSERT_TRUE(b.ok());
  }  // dropped without close
  auto rows = query(conn, "SELECT generate_series(1, 3)");
  ASSERT_TRUE(rows.ok());
  ASSERT_TRUE(a->close().ok());  // a reader is open: deallocated after it closes
  ASSERT_TRUE(close_rows(conn, rows.value()).ok());
  EXPECT_EQ(prepared_count(), before);
  auto bad = blocking(conn, [&] { return conn.prepare("SELECT nope FROM nowhere"); });
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().sqlstate, "42P01");
  auto multi = blocking(conn, [&] { return conn.prepare("SELECT 1; SELECT 2"); });
  ASSERT_FALSE(multi.ok());
  EXPECT_EQ(multi.error().sqlstate, "42601");
}

}  // namespace
}  // namespace wirepool::pg_it
