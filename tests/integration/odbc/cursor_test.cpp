// Block cursors, cancel and a lost backend through each verified ODBC driver:
//  - a table with a TEXT column (which the drivers describe as unbounded) is
//    read back whole, nothing truncated; through psqlODBC with several rows
//    per SQLFetch (FetchStats) and the cells longer than the bound width
//    re-read with SQLSetPos + SQLGetData; through MariaDB ODBC (no working
//    re-read) TEXT bound whole at its 65,535-byte limit, 8 rows a fetch; through
//    SQLite ODBC (no re-read, no real bound) a row a fetch, and a result without
//    the TEXT column in large rowsets
//  - SQLCancel from another thread stops pg_sleep(20) and a long recursive
//    query on SQLite (57014, Errc::busy) and SLEEP(20) on MariaDB (which
//    answers 1, not an error) within seconds; the connection stays usable
//  - a backend connection killed by the server is reported as Errc::connection
//    and alive() turns false (psqlODBC: pg_terminate_backend; MariaDB: KILL)
//  - every network wait is bounded: the query_timeout option ends a long
//    statement (57014), and only a statement past its own deadline (quick
//    ones for 2.5 s with a 1 s timeout all complete); login_timeout a server
//    that accepts and never answers

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "tests/integration/odbc/odbc_fixture.hpp"

namespace wirepool::odbc_it {
namespace {

class Cursor : public OdbcTest {};

std::string text_of(int i) {
  // Every 10th cell is 3,000 characters with non-ASCII ones: longer than the
  // 2 KiB a TEXT column is bound at.
  std::string s = "row " + std::to_string(i) + " \xc3\xa9";
  if (i % 10 == 0) {
    while (s.size() < 4000)
      s += "abc\xe2\x82\xac";
  }
  return s;
}

/// A statement that runs for many seconds on each backend.
std::string long_statement(Target t) {
  switch (t) {
    case Target::postgresql:
      return "SELECT pg_sleep(20)";
    case Target::mariadb:
      return "SELECT SLEEP(20)";
    case Target::sqlite:
      break;
  }
  return "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) "
         "SELECT count(*) FROM c";
}

TEST_P(Cursor, TextColumnIsReadWithSeveralRowsPerFetchAndLongCellsWhole) {
  const std::string t = table();
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, "CREATE TABLE " + t + " (id int PRIMARY KEY, s text)");
  auto tx = conn.begin();
  ASSERT_TRUE(tx.ok());
  auto ins = conn.prepare("INSERT INTO " + t + " VALUES ($1, $2)");
  ASSERT_TRUE(ins.ok()) << ins.error().message;
  constexpr int kRows = 500;
  for (int i = 0; i < kRows; ++i) {
    auto r = ins->execute(std::vector<Param>{P(Value::int64(i)), P(Value::text(text_of(i)))});
    ASSERT_TRUE(r.ok()) << r.error().message;
  }
  ASSERT_TRUE(ins->close().ok());
  ASSERT_TRUE(tx->commit().ok());

  const auto before = odbc::fetch_stats_for_test(conn);
  auto got = fetch(conn, "SELECT id, s FROM " + t + " ORDER BY id");
  ASSERT_TRUE(got.ok()) << got.error().message;
  const auto after = odbc::fetch_stats_for_test(conn);
  ASSERT_EQ(got->rows.size(), static_cast<size_t>(kRows));
  EXPECT_EQ(got->columns[1].kind, Kind::Text);
  for (int i = 0; i < kRows; ++i) {
    ASSERT_EQ(got->rows[static_cast<size_t>(i)][0].i64, i);
    ASSERT_EQ(got->rows[static_cast<size_t>(i)][1].str, text_of(i)) << "row " << i;
  }
  const uint64_t fetches = after.fetches - before.fetches;
  if (target() == Target::mariadb) {
    // MariaDB ODBC cannot re-read a cell of a rowset, but TEXT holds at most
    // 65,535 bytes: bound whole, 8 rows a fetch (docs/odbc.md, quirks).
    EXPECT_EQ(after.rowset_size, 8u);
    EXPECT_EQ(after.max_rows_per_fetch, 8u);
    EXPECT_LE(fetches, static_cast<uint64_t>(kRows) / 8 + 1);
    EXPECT_EQ(after.rereads, before.rereads);
    // The limit itself: 65,535 ASCII bytes, and 16,383 four-byte characters.
    std::string emoji;
    for (int k = 0; k < 16383; ++k)
      emoji += "\xf0\x9f\x98\x80";
    const std::string ascii(65535, 'z');
    exec(conn, "INSERT INTO " + t + " VALUES ($1, $2), ($3, $4)",
         {P(Value::int64(1000)), P(Value::text(ascii)), P(Value::int64(1001)),
          P(Value::text(emoji))});
    auto edge = fetch(conn, "SELECT s FROM " + t + " WHERE id >= 999 ORDER BY id");
    ASSERT_TRUE(edge.ok()) << edge.error().message;
    ASSERT_EQ(edge->rows.size(), 2u);
    EXPECT_EQ(edge->rows[0][0].str, ascii);
    EXPECT_EQ(edge->rows[1][0].str, emoji);
    return;
  }
  if (target() == Target::sqlite) {
    // SQLite ODBC cannot re-read a cell of a rowset and SQLite's text has no
    // real bound (docs/odbc.md, quirks): a result with an unbounded column is
    // read a row a fetch, every cell whole through SQLGetData.
    EXPECT_EQ(after.rowset_size, 1u);
    EXPECT_EQ(fetches, static_cast<uint64_t>(kRows));
    // Without the unbounded column the rowset holds many rows again.
    auto ids = fetch(conn, "SELECT id FROM " + t + " ORDER BY id");
    ASSERT_TRUE(ids.ok());
    ASSERT_EQ(ids->rows.size(), static_cast<size_t>(kRows));
    const auto narrow = odbc::fetch_stats_for_test(conn);
    EXPECT_GT(narrow.rowset_size, 100u);
    EXPECT_LT(narrow.fetches - after.fetches, 10u);
    return;
  }
  EXPECT_GT(after.rowset_size, 1u);
  EXPECT_GT(after.max_rows_per_fetch, 1u);
  EXPECT_LT(fetches, static_cast<uint64_t>(kRows) / 4) << "the rowset collapsed";
  EXPECT_EQ(after.rereads - before.rereads, static_cast<uint64_t>(kRows / 10));
}

// A direct query's row arrays go back to the connection and the next direct
// query reads into them: one block for a run of queries whose rows need no
// more room than the first's, and every result still read right.
TEST_P(Cursor, DirectQueriesReuseOneRowBlock) {
  const std::string t = table();
  exec(conn, "DROP TABLE IF EXISTS " + t);
  exec(conn, "CREATE TABLE " + t + " (id int PRIMARY KEY, name varchar(64), score float)");
  exec(conn, "INSERT INTO " + t + " VALUES (1, 'one', 0.5), (2, 'two', 1.5), (3, NULL, 2.5)");
  const std::string wide = "SELECT id, name, score FROM " + t + " ORDER BY id";
  const auto before = odbc::fetch_stats_for_test(conn);
  for (int round = 0; round < 3; ++round) {
    auto all = fetch(conn, wide);
    ASSERT_TRUE(all.ok()) << all.error().message;
    ASSERT_EQ(all->rows.size(), 3u);
    EXPECT_EQ(all->rows[1][0].i64, 2);
    EXPECT_EQ(all->rows[1][1].str, "two");
    EXPECT_TRUE(all->rows[2][1].is_null());
    EXPECT_DOUBLE_EQ(all->rows[2][2].f64, 2.5);
    // A narrower result (one integer column: 4,096 rows of 16 bytes) fits
    // in the block the wide one left.
    auto one = fetch(conn, "SELECT id FROM " + t + " WHERE id = 3");
    ASSERT_TRUE(one.ok()) << one.error().message;
    ASSERT_EQ(one->rows.size(), 1u);
    EXPECT_EQ(one->rows[0][0].i64, 3);
  }
  EXPECT_EQ(odbc::fetch_stats_for_test(conn).row_blocks - before.row_blocks, 1u);
}

TEST_P(Cursor, CancelFromAnotherThreadStopsALongStatement) {
  const std::string sql = long_statement(target());
  const auto start = std::chrono::steady_clock::now();
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    conn.cancel();
  });
  auto r = fetch(conn, sql);
  canceller.join();
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(10));
  if (target() != Target::mariadb) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::busy);
    EXPECT_EQ(r.error().sqlstate, "57014");
  } else if (r.ok()) {
    // MariaDB: KILL QUERY ends SLEEP(), which then answers 1.
    ASSERT_EQ(r->rows.size(), 1u);
    EXPECT_EQ(r->rows[0][0].i64, 1);
  } else {
    EXPECT_EQ(r.error().sqlstate, "57014");
  }
  auto again = fetch(conn, "SELECT 1");
  ASSERT_TRUE(again.ok()) << again.error().message;
  // Idle: harmless.
  conn.cancel();
  EXPECT_TRUE(fetch(conn, "SELECT 2").ok());
}

TEST_P(Cursor, CancelReachesAScanWhoseWorkIsInTheFetches) {
  // SQLite ODBC steps the statement in each SQLFetch, and its SQLCancel would
  // free the rows a fetch is reading: there the cancel is a mark the reader
  // answers when the fetch returns (docs/odbc.md, quirks). The others cancel
  // through SQLCancel; this scan is SQLite's case.
  if (target() != Target::sqlite) GTEST_SKIP() << "the fetch-time cancel is SQLite ODBC's";
  const auto start = std::chrono::steady_clock::now();
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    conn.cancel();
  });
  auto r = fetch(conn,
                 "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                 "WHERE x < 2000000000) SELECT x FROM c");
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_FALSE(r.ok()) << "2,000,000,000 rows read: the cancel was lost";
  EXPECT_EQ(r.error().code, Errc::busy);
  EXPECT_EQ(r.error().sqlstate, "57014");
  EXPECT_EQ(r.error().message, "canceling statement due to user request");
  auto again = fetch(conn, "SELECT 1");
  ASSERT_TRUE(again.ok()) << again.error().message;
}

TEST_P(Cursor, CancelsFromAnotherThreadNeverTouchAFreedHandle) {
  // A cancel storm against short statements, each on a handle allocated and
  // freed per query: SQLCancel must only ever reach a live handle (the
  // AddressSanitizer build runs this too), and every statement either
  // completes or is cancelled, never anything else.
  std::atomic<bool> stop{false};
  std::atomic<int> cancels{0};
  std::thread canceller([&] {
    while (!stop.load()) {
      conn.cancel();
      cancels.fetch_add(1);
      std::this_thread::yield();
    }
  });
  int completed = 0;
  int cancelled = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < until) {
    auto r = fetch(conn, "SELECT 1");
    if (r.ok()) {
      // Never a result cut short and passed off as complete.
      EXPECT_EQ(r->rows.size(), 1u);
      if (r->rows.size() != 1u) break;
      ++completed;
    } else {
      EXPECT_EQ(r.error().sqlstate, "57014") << r.error().message;
      ++cancelled;
    }
  }
  stop = true;
  canceller.join();
  EXPECT_GT(completed + cancelled, 10);
  EXPECT_GT(cancels.load(), 10);
  // The storm must have reached statements (each driver: hundreds a second),
  // or the test above proves nothing about a cancel meeting an execution.
  EXPECT_GT(cancelled, 0) << "no cancel reached a statement";
  auto again = fetch(conn, "SELECT 2");
  ASSERT_TRUE(again.ok()) << again.error().message;
  std::printf("%d completed, %d cancelled, %d cancels\n", completed, cancelled, cancels.load());
}

TEST_P(Cursor, KilledBackendIsAConnectionError) {
  if (target() == Target::sqlite) GTEST_SKIP() << "a file has no server to lose";
  const bool pg = target() == Target::postgresql;
  auto id = fetch(conn, pg ? "SELECT pg_backend_pid()" : "SELECT CONNECTION_ID()");
  ASSERT_TRUE(id.ok()) << id.error().message;
  const int64_t pid = id->rows[0][0].kind == Kind::U64 ? static_cast<int64_t>(id->rows[0][0].u64)
                                                       : id->rows[0][0].i64;
  Connection killer = open();
  exec(killer, pg ? "SELECT pg_terminate_backend(" + std::to_string(pid) + ")"
                  : "KILL " + std::to_string(pid));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto r = fetch(conn, "SELECT 1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::connection) << r.error().sqlstate << " " << r.error().message;
  EXPECT_FALSE(conn.alive());
}

TEST_P(Cursor, QueryTimeoutEndsALongStatement) {
  // MariaDB ODBC ignores SQL_ATTR_QUERY_TIMEOUT: the driver's watchdog cancels.
  db::OpenOptions o = options_for(target());
  o.options["query_timeout"] = "1s";
  auto c = driver().open(o);
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto start = std::chrono::steady_clock::now();
  auto r = fetch(c.value(), long_statement(target()));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(10));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Errc::busy);
  EXPECT_EQ(r.error().sqlstate, "57014") << r.error().message;
  // The connection stays usable.
  auto again = fetch(c.value(), "SELECT 1");
  ASSERT_TRUE(again.ok()) << again.error().message;
}

TEST_P(Cursor, QueryTimeoutIsEachExecutionsOwn) {
  // The watchdog reads each execution's deadline from its session: quick
  // statements one after another for 2.5 s (the deadline 1 s) are never
  // cancelled, and a long one after them still is.
  db::OpenOptions o = options_for(target());
  o.options["query_timeout"] = "1s";
  auto c = driver().open(o);
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto start = std::chrono::steady_clock::now();
  int runs = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2500)) {
    auto r = fetch(c.value(), "SELECT 1");
    ASSERT_TRUE(r.ok()) << "run " << runs << ": " << r.error().sqlstate << " " << r.error().message;
    ++runs;
  }
  EXPECT_GT(runs, 10);
  const auto long_start = std::chrono::steady_clock::now();
  auto r = fetch(c.value(), long_statement(target()));
  EXPECT_LT(std::chrono::steady_clock::now() - long_start, std::chrono::seconds(10));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().sqlstate, "57014") << r.error().message;
}

TEST_P(Cursor, LoginTimeoutBoundsAServerThatNeverAnswers) {
  if (target() == Target::sqlite) GTEST_SKIP() << "a file has no server";
  // A socket that accepts connections (the kernel's backlog) and never speaks.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 8), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  db::OpenOptions o;
  o.connection = (target() == Target::postgresql ? "Driver={PostgreSQL Unicode}"
                                                 : "Driver={MariaDB Unicode}") +
                 std::string(";Server=127.0.0.1;Port=") + port + ";Database=x;Uid=x";
  o.password = "x";
  o.options["login_timeout"] = "2s";
  const auto start = std::chrono::steady_clock::now();
  auto c = driver().open(o);
  const auto took = std::chrono::steady_clock::now() - start;
  ::close(fd);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_LT(took, std::chrono::seconds(10));
}

INSTANTIATE_TEST_SUITE_P(Odbc, Cursor, WP_ODBC_TARGETS);

}  // namespace
}  // namespace wirepool::odbc_it
