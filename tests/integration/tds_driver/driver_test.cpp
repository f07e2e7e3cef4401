// The SQL Server driver against wirepool's own TDS 8.0 front end (no SQL Server
// runs here; tests/fixtures/tdsserver.py). Cases:
//  - connect: TLS 1.3 + ALPN tds/8.0, CA and pin verified, LOGIN7, ENVCHANGE
//    database; a pin mismatch, a wrong CA and an entry without tls.ca refused;
//    a wrong password refused with 28000
//  - values: every kind the SQLite back end serves round-tripped as parameters
//    (sp_executesql) and as batch literals; NULL parameters as the literal NULL;
//    an NBCROW with NULLs at both ends of its bitmap; 100 KB text and bytes;
//    a statement longer than one packet; 10,000 rows streamed
//  - markers: ?, $N and @name rewritten; a ? inside [brackets], quotes,
//    strings and comments left alone
//  - command info: affected rows of INSERT/UPDATE/DELETE, none for SELECT
//  - errors: 42601, 42P01, 42703, 23505, 23502, 23503, 23514, 55P03 with the
//    portable code, the message and "SQL Server error N" in the detail
//  - transactions through TM requests: commit, rollback, a failed statement
//    makes COMMIT an error, a transaction the server ended is reported
//  - prepared statements (sp_prepare / sp_execute / sp_unprepare)
//  - cancel with ATTENTION, connection usable afterwards; a reader closed early
//  - more concurrent connections than the front end's backend connections
//  - TLS records: one per packet, packets at most 16,383 bytes
//  - the same against PostgreSQL behind the front end (decimal, timestamptz,
//    timestamp, date, uuid, bytea, bool, smallint, real, varchar) and its
//    cancel when the pg fixture is there
//  - reset(): rollback and RESETCONNECTION on the next request

#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include "backends/tds/tds_transport.hpp"
#include "tds_fixture.hpp"

namespace wirepool::tds_it {
namespace {

Connection connect(const std::string& database = "app") {
  auto c = open(open_options(database));
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  if (!c.ok()) return {};
  return std::move(c.value());
}

void exec(Connection& c, std::string_view sql, std::vector<Param> params = {}) {
  auto r = c.execute(sql, params);
  ASSERT_TRUE(r.ok()) << sql << ": " << r.error().sqlstate << " " << r.error().message;
}

TEST(TdsConnect, LogsInOverVerifiedTls) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  ASSERT_TRUE(c.is_open());
  EXPECT_TRUE(c.alive());
  EXPECT_EQ(c.capabilities().dialect, sql::Dialect::tsql);
  bool database_seen = false;
  std::string collation;
  for (const auto& [k, v] : c.impl()->server_parameters()) {
    if (k == "database") database_seen = v == "app";
    if (k == "collation") collation = v;
  }
  EXPECT_TRUE(database_seen);
  // SQL_Latin1_General_CP1_CI_AS, the front end's collation ENVCHANGE.
  EXPECT_EQ(collation, "lcid 0x0409, code page");
  auto t = fetch(c, "SELECT 1 AS one");
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0][0].i64, 1);
  EXPECT_EQ(t->columns[0].name, "one");
  EXPECT_TRUE(c.close().ok());
}

TEST(TdsConnect, PinMismatchIsRefused) {
  TDS_FIXTURE_OR_SKIP();
  auto o = open_options();
  o.tls_pins = {std::string(64, 'a')};
  auto c = open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_NE(c.error().message.find("pin_sha256"), std::string::npos) << c.error().message;
}

TEST(TdsConnect, WrongCaIsRefused) {
  TDS_FIXTURE_OR_SKIP();
  auto o = open_options();
  o.tls_ca = ServerInfo::get().str("tls.other_ca");
  o.tls_pins.clear();
  auto c = open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_NE(c.error().message.find("certificate verify failed"), std::string::npos)
      << c.error().message;
}

TEST(TdsConnect, NoCaIsRefusedByValidation) {
  auto o = open_options();
  o.tls_ca.clear();
  const db::Driver* d = db::find_driver("tds");
  ASSERT_NE(d, nullptr);
  auto problems = d->validate(o);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].second.find("tls.ca"), std::string::npos) << problems[0].second;
  EXPECT_FALSE(d->open(o).ok());
}

TEST(TdsConnect, WrongPasswordIsALoginError) {
  TDS_FIXTURE_OR_SKIP();
  auto o = open_options();
  o.password = "not the password";
  auto c = open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_EQ(c.error().sqlstate, "28000");
  EXPECT_EQ(c.error().vendor_code, 18456);
}

TEST(TdsValues, ParametersRoundTrip) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  auto t = fetch(c, "SELECT ? AS i, ? AS t, ? AS b, ? AS f, $5 AS n, $6 AS neg",
                 {P(I(42)), P(T("grüße ✓ 𝄞")), P(Value::bytes(std::string("\x00\x01\xff", 3))),
                  P(Value::float64(2.5)), P(Value::null()), P(I(-9000000000))});
  // Mixed ? and $N: the ?s count 1..4 by position, $5 and $6 by number.
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 1u);
  const auto& r = t->rows[0];
  EXPECT_EQ(r[0].kind, Kind::I64);
  EXPECT_EQ(r[0].i64, 42);
  EXPECT_EQ(r[1].kind, Kind::Text);
  EXPECT_EQ(r[1].str, "grüße ✓ 𝄞");
  EXPECT_EQ(r[2].kind, Kind::Bytes);
  EXPECT_EQ(r[2].str, std::string("\x00\x01\xff", 3));
  EXPECT_EQ(r[3].kind, Kind::F64);
  EXPECT_EQ(r[3].f64, 2.5);
  EXPECT_TRUE(r[4].is_null());
  EXPECT_EQ(r[5].i64, -9000000000);
}

TEST(TdsValues, NullParameterGoesIntoEveryColumnType) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  exec(c, "DROP TABLE IF EXISTS tds_nulls");
  exec(c, "CREATE TABLE tds_nulls (a INTEGER, b BLOB, t TEXT, r REAL)");
  exec(c, "INSERT INTO tds_nulls VALUES (?, ?, ?, ?)",
       {P(Value::null()), P(Value::null()), P(Value::null()), P(Value::null())});
  auto t = fetch(c, "SELECT a, b, t, r FROM tds_nulls");
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 1u);
  for (const auto& v : t->rows[0])
    EXPECT_TRUE(v.is_null());
}

TEST(TdsValues, NbcrowNullBitmapIsReadFromItsLowBit) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  exec(c, "DROP TABLE IF EXISTS tds_nbc");
  exec(c,
       "CREATE TABLE tds_nbc (a INTEGER, b INTEGER, c INTEGER, d INTEGER, e INTEGER, f INTEGER, "
       "g INTEGER, h INTEGER, i INTEGER, j INTEGER)");
  exec(c, "INSERT INTO tds_nbc VALUES (NULL, 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 10)");
  exec(c, "INSERT INTO tds_nbc VALUES (1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 9, NULL)");
  auto t = fetch(c, "SELECT * FROM tds_nbc ORDER BY j DESC");
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 2u);
  const auto& r0 = t->rows[0];
  EXPECT_TRUE(r0[0].is_null());
  ASSERT_EQ(r0[1].kind, Kind::I64);
  EXPECT_EQ(r0[1].i64, 2);
  for (int i = 2; i < 9; ++i)
    EXPECT_TRUE(r0[i].is_null()) << i;
  ASSERT_EQ(r0[9].kind, Kind::I64);
  EXPECT_EQ(r0[9].i64, 10);
  const auto& r1 = t->rows[1];
  ASSERT_EQ(r1[0].kind, Kind::I64);
  EXPECT_EQ(r1[0].i64, 1);
  EXPECT_EQ(r1[8].i64, 9);
  EXPECT_TRUE(r1[9].is_null());
}

TEST(TdsValues, HundredKilobyteValuesAndLongStatements) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  const auto before = tdsdrv::record_stats();
  std::string text;
  while (text.size() < 100000)
    text += "é0123456789abcdefghijklmnopqrstuvwxyz✓";
  std::string bytes(100 * 1024, '\0');
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(i * 7);
  auto t = fetch(c, "SELECT ? AS t, ? AS b", {P(T(text)), P(Value::bytes(bytes))});
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0][0].str, text);
  EXPECT_EQ(t->rows[0][1].str, bytes);
  // A batch of about 40 KB: several packets, each its own TLS record.
  const std::string literal(40000, 'x');
  auto l = fetch(c, "SELECT '" + literal + "' AS s");
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_EQ(l->rows[0][0].str, literal);
  const auto after = tdsdrv::record_stats();
  const uint64_t packets = after.packets_written - before.packets_written;
  const uint64_t records = after.records_written - before.records_written;
  EXPECT_GE(packets, 30u);
  EXPECT_EQ(records, packets) << "every packet is one TLS record";
  EXPECT_LE(after.packet_max, 16383u);
  // TLS 1.3 adds a content-type byte and a 16-byte tag to each record.
  EXPECT_LE(after.record_written_max, after.packet_max + 17);
  std::cout << "[ tls ] packets written " << packets << ", records written " << records
            << ", largest packet " << after.packet_max << " B, largest record written "
            << after.record_written_max << " B, records read "
            << after.records_read - before.records_read << ", largest record read "
            << after.record_read_max << " B\n";
}

TEST(TdsValues, LargestPacketsStillFitOneTlsRecord) {
  TDS_FIXTURE_OR_SKIP();
  auto o = open_options();
  o.options["packet_size"] = "16383";
  auto c = open(o);
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto before = tdsdrv::record_stats();
  const std::string text(60000, 'q');
  auto t = fetch(c.value(), "SELECT ? AS t", {P(T(text))});
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->rows[0][0].str, text);
  const auto after = tdsdrv::record_stats();
  EXPECT_EQ(after.packet_max, 16383u);
  EXPECT_EQ(after.records_written - before.records_written,
            after.packets_written - before.packets_written);
  // 16,383 bytes of plaintext + content type + tag: one record, never two.
  EXPECT_EQ(after.record_written_max, 16383u + 17);
}

TEST(TdsValues, RowsStream) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  auto r = c.query(
      "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 10000) "
      "SELECT x, 'row ' || x AS label FROM n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::vector<db::ValueView> row(2);
  int64_t count = 0, sum = 0;
  for (;;) {
    auto more = r->next_borrowed(row);
    ASSERT_TRUE(more.ok()) << more.error().message;
    if (!more.value()) break;
    ++count;
    sum += row[0].i64;
    if (row[0].i64 == 777) {
      EXPECT_EQ(row[1].str, "row 777");
    }
  }
  EXPECT_EQ(count, 10000);
  EXPECT_EQ(sum, 10000LL * 10001 / 2);
  EXPECT_EQ(r->command().verb, "SELECT");
}

TEST(TdsMarkers, QuestionMarkInsideBracketsIsNotAMarker) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  auto t = fetch(c, "SELECT 1 AS [a?b], '?' AS \"q?\", ? AS v /* ? */ -- ?\n", {P(I(7))});
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->columns.size(), 3u);
  EXPECT_EQ(t->columns[0].name, "a?b");
  EXPECT_EQ(t->columns[1].name, "q?");
  EXPECT_EQ(t->rows[0][1].str, "?");
  EXPECT_EQ(t->rows[0][2].i64, 7);
}

TEST(TdsMarkers, DollarAndNamedMarkers) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  auto t = fetch(c, "SELECT $2 AS two, $1 AS one, $2 AS again", {P(I(1)), P(I(2))});
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->rows[0][0].i64, 2);
  EXPECT_EQ(t->rows[0][1].i64, 1);
  EXPECT_EQ(t->rows[0][2].i64, 2);
  Param named;
  named.name = "x";
  named.value = I(5);
  auto n = fetch(c, "SELECT @x AS x, @x + 1 AS y", {named});
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(n->rows[0][0].i64, 5);
  EXPECT_EQ(n->rows[0][1].i64, 6);
  auto bad = c.query("SELECT ? AS a, ? AS b", std::vector<Param>{P(I(1))});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().sqlstate, "08P01");
}

TEST(TdsCommand, AffectedRowsAreNotSelectCounts) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  exec(c, "DROP TABLE IF EXISTS tds_cmd");
  exec(c, "CREATE TABLE tds_cmd (id INTEGER PRIMARY KEY, v TEXT)");
  auto ins = c.execute("INSERT INTO tds_cmd (v) VALUES ('a'), ('b'), ('c')");
  ASSERT_TRUE(ins.ok()) << ins.error().message;
  EXPECT_EQ(ins->affected, 3);
  EXPECT_EQ(ins->verb, "INSERT");
  auto sel = fetch(c, "SELECT v FROM tds_cmd");
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->rows.size(), 3u);
  EXPECT_EQ(sel->info.affected, -1) << "a SELECT's count is not affected rows";
  EXPECT_EQ(sel->info.verb, "SELECT");
  std::vector<Param> from2{P(I(2))};
  auto upd = c.execute("UPDATE tds_cmd SET v = 'z' WHERE id >= ?", from2);
  ASSERT_TRUE(upd.ok()) << upd.error().message;
  EXPECT_EQ(upd->affected, 2);
  auto del = c.execute("DELETE FROM tds_cmd");
  ASSERT_TRUE(del.ok());
  EXPECT_EQ(del->affected, 3);
}

TEST(TdsCommand, SeveralStatementsInOneBatch) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  auto r = c.query("SELECT 1 AS a; SELECT 'two' AS b");
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto first = read_all(r.value());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->rows[0][0].i64, 1);
  auto more = r->next_result();
  ASSERT_TRUE(more.ok()) << more.error().message;
  ASSERT_TRUE(more.value());
  auto second = read_all(r.value());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->columns[0].name, "b");
  EXPECT_EQ(second->rows[0][0].str, "two");
  auto end = r->next_result();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end.value());
}

struct ErrorCase {
  const char* sql;
  const char* sqlstate;
  Errc code;
};

TEST(TdsErrors, MappedToSqlstate) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  exec(c, "DROP TABLE IF EXISTS tds_child");
  exec(c, "DROP TABLE IF EXISTS tds_parent");
  exec(c,
       "CREATE TABLE tds_parent (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
       "n INTEGER CHECK (n > 0))");
  exec(c, "CREATE TABLE tds_child (id INTEGER PRIMARY KEY, p INTEGER REFERENCES tds_parent(id))");
  exec(c, "INSERT INTO tds_parent VALUES (1, 'one', 1)");
  const ErrorCase cases[] = {
      {"SELEC 1", "42601", Errc::invalid_query},
      {"SELECT * FROM tds_missing", "42P01", Errc::invalid_query},
      {"SELECT nope FROM tds_parent", "42703", Errc::invalid_query},
      {"INSERT INTO tds_parent VALUES (2, 'one', 1)", "23505", Errc::constraint},
      {"INSERT INTO tds_parent VALUES (3, NULL, 1)", "23502", Errc::constraint},
      {"INSERT INTO tds_child VALUES (1, 99)", "23503", Errc::constraint},
      {"INSERT INTO tds_parent VALUES (4, 'four', -1)", "23514", Errc::constraint},
  };
  for (const auto& e : cases) {
    auto r = c.execute(e.sql);
    ASSERT_FALSE(r.ok()) << e.sql;
    EXPECT_EQ(r.error().sqlstate, e.sqlstate) << e.sql << ": " << r.error().message;
    EXPECT_EQ(r.error().code, e.code) << e.sql;
    EXPECT_FALSE(r.error().message.empty());
    EXPECT_NE(r.error().detail.find("SQL Server error"), std::string::npos) << r.error().detail;
    EXPECT_NE(r.error().vendor_code, 0);
    // The connection goes on after an error.
    auto ok = fetch(c, "SELECT 2 AS two");
    ASSERT_TRUE(ok.ok()) << ok.error().message;
    EXPECT_EQ(ok->rows[0][0].i64, 2);
  }
}

TEST(TdsErrors, LockNotAvailableIsBusy) {
  TDS_FIXTURE_OR_SKIP();
  auto a = connect();
  auto b = connect();
  exec(a, "DROP TABLE IF EXISTS tds_lock");
  exec(a, "CREATE TABLE tds_lock (id INTEGER PRIMARY KEY)");
  auto tx = a.begin();
  ASSERT_TRUE(tx.ok()) << tx.error().message;
  exec(a, "INSERT INTO tds_lock VALUES (1)");
  auto r = b.execute("INSERT INTO tds_lock VALUES (2)");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().sqlstate, "55P03") << r.error().message;
  EXPECT_EQ(r.error().code, Errc::busy);
  EXPECT_TRUE(tx->rollback().ok());
}

TEST(TdsTransactions, CommitAndRollbackWithTheDescriptor) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  exec(c, "DROP TABLE IF EXISTS tds_tx");
  exec(c, "CREATE TABLE tds_tx (id INTEGER PRIMARY KEY)");
  EXPECT_EQ(c.tx_state(), db::TxState::idle);
  {
    auto tx = c.begin();
    ASSERT_TRUE(tx.ok()) << tx.error().message;
    EXPECT_EQ(c.tx_state(), db::TxState::in_transaction);
    exec(c, "INSERT INTO tds_tx VALUES (1)");
    ASSERT_TRUE(tx->rollback().ok());
    EXPECT_EQ(c.tx_state(), db::TxState::idle);
  }
  {
    auto tx = c.begin();
    ASSERT_TRUE(tx.ok());
    exec(c, "INSERT INTO tds_tx VALUES (2)");
    auto st = tx->commit();
    ASSERT_TRUE(st.ok()) << st.error().message;
  }
  auto t = fetch(c, "SELECT id FROM tds_tx");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0][0].i64, 2);
}

TEST(TdsTransactions, AFailedStatementNeverCommits) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  exec(c, "DROP TABLE IF EXISTS tds_txf");
  exec(c, "CREATE TABLE tds_txf (id INTEGER PRIMARY KEY)");
  auto tx = c.begin();
  ASSERT_TRUE(tx.ok());
  exec(c, "INSERT INTO tds_txf VALUES (1)");
  EXPECT_FALSE(c.execute("INSERT INTO tds_txf VALUES (1)").ok());
  EXPECT_EQ(c.tx_state(), db::TxState::failed);
  auto refused = c.execute("INSERT INTO tds_txf VALUES (2)");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().sqlstate, "25P02");
  auto st = tx->commit();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().sqlstate, "40000");
  EXPECT_EQ(c.tx_state(), db::TxState::idle);
  auto t = fetch(c, "SELECT count(*) AS n FROM tds_txf");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows[0][0].i64, 0);
}

TEST(TdsTransactions, ATransactionTheServerEndedIsReported) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  exec(c, "DROP TABLE IF EXISTS tds_txe");
  exec(c, "CREATE TABLE tds_txe (id INTEGER PRIMARY KEY)");
  auto tx = c.begin();
  ASSERT_TRUE(tx.ok());
  exec(c, "INSERT INTO tds_txe VALUES (1)");
  // The server rolls back on its own (here: a ROLLBACK in the text; on SQL
  // Server also XACT_ABORT): the driver sees ENVCHANGE 10 it did not ask for.
  exec(c, "ROLLBACK");
  EXPECT_EQ(c.tx_state(), db::TxState::failed);
  auto st = tx->commit();
  ASSERT_FALSE(st.ok()) << "never a false COMMIT";
  EXPECT_EQ(st.error().sqlstate, "40000");
  EXPECT_EQ(c.tx_state(), db::TxState::idle);
  auto t = fetch(c, "SELECT count(*) AS n FROM tds_txe");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->rows[0][0].i64, 0);
}

TEST(TdsPrepared, PrepareExecuteUnprepare) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  auto s = c.prepare("SELECT ? + 1 AS v");
  ASSERT_TRUE(s.ok()) << s.error().message;
  for (int64_t i : {1, 10, 41}) {
    auto r = s->query(std::vector<Param>{P(I(i))});
    ASSERT_TRUE(r.ok()) << r.error().message;
    auto t = read_all(r.value());
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->rows[0][0].i64, i + 1);
  }
  auto n = s->query(std::vector<Param>{P(Value::null())});
  ASSERT_TRUE(n.ok()) << n.error().message;
  auto t = read_all(n.value());
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->rows[0][0].is_null());
  (void)n->close();
  EXPECT_TRUE(s->close().ok());
}

TEST(TdsCancel, AttentionStopsALongQuery) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  std::atomic<bool> done{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    if (!done.load()) c.cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  auto r = c.execute(
      "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 1000000000) "
      "SELECT max(x) FROM n");
  done = true;
  canceller.join();
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().sqlstate, "57014") << r.error().message;
  EXPECT_EQ(r.error().code, Errc::busy);
  EXPECT_LT(took, std::chrono::seconds(10));
  auto t = fetch(c, "SELECT 3 AS three");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->rows[0][0].i64, 3);
}

TEST(TdsCancel, ClosingAReaderEarlyLeavesTheConnectionUsable) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  auto r = c.query(
      "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 200000) "
      "SELECT x FROM n");
  ASSERT_TRUE(r.ok());
  std::vector<Value> row(1);
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(r->next(row).value());
  EXPECT_TRUE(r->close().ok());
  auto t = fetch(c, "SELECT 4 AS four");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->rows[0][0].i64, 4);
}

TEST(TdsPool, MoreConnectionsThanBackendConnections) {
  TDS_FIXTURE_OR_SKIP();
  // The fixture's pool has 8 backend connections; 12 driver connections share them.
  constexpr int kClients = 12;
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      auto c = open(open_options());
      if (!c.ok()) return;
      int ok = 0;
      for (int k = 0; k < 20; ++k) {
        auto t = fetch(c.value(), "SELECT ? * 2 AS v", {P(I(i * 100 + k))});
        if (t.ok() && t->rows.size() == 1 && t->rows[0][0].i64 == 2 * (i * 100 + k)) ++ok;
      }
      if (ok == 20) ++good;
    });
  }
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(good.load(), kClients);
}

// ---- PostgreSQL behind the front end ----------------------------------------

TEST(TdsPostgres, TypedValuesRoundTrip) {
  TDS_FIXTURE_OR_SKIP();
  if (!ServerInfo::get().has_pg()) GTEST_SKIP() << "no PostgreSQL behind the fixture";
  auto c = connect("pgapp");
  exec(c, "DROP TABLE IF EXISTS tds_pg");
  exec(c,
       "CREATE TABLE tds_pg (b boolean, i int4, big int8, t text, by bytea, d numeric(12,3), "
       "ts timestamptz, dt date, u uuid, f float8)");
  exec(c,
       "INSERT INTO tds_pg VALUES (?, ?, ?, ?, ?, ?, ?, '2024-02-29', "
       "'6f9619ff-8b86-d011-b42d-00c04fc964ff', ?)",
       {P(Value::boolean(true)), P(I(-7)), P(I(1LL << 40)), P(T("añb")),
        P(Value::bytes(std::string("\x00\x10", 2))), P(Value::decimal("-123456789.125")),
        P(Value::time(1700000000123456)), P(Value::float64(0.25))});
  auto t = fetch(c, "SELECT b, i, big, t, by, d, ts, dt, u, f FROM tds_pg");
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 1u);
  const auto& r = t->rows[0];
  EXPECT_EQ(r[0].kind, Kind::Bool);
  EXPECT_TRUE(r[0].b);
  EXPECT_EQ(r[1].i64, -7);
  EXPECT_EQ(t->columns[1].native.name, "int");
  EXPECT_EQ(r[2].i64, 1LL << 40);
  EXPECT_EQ(r[3].str, "añb");
  EXPECT_EQ(r[4].str, std::string("\x00\x10", 2));
  EXPECT_EQ(r[5].kind, Kind::Decimal);
  EXPECT_EQ(r[5].str, "-123456789.125");
  EXPECT_EQ(t->columns[5].native.scale, 3);
  EXPECT_EQ(r[6].kind, Kind::Time);
  EXPECT_EQ(r[6].micros, 1700000000123456);
  EXPECT_EQ(t->columns[6].native.time_form, db::TimeForm::timestamptz);
  EXPECT_EQ(r[7].kind, Kind::Time);
  EXPECT_EQ(t->columns[7].native.time_form, db::TimeForm::date);
  EXPECT_EQ(r[8].str, "6F9619FF-8B86-D011-B42D-00C04FC964FF");
  EXPECT_EQ(r[9].f64, 0.25);
}

TEST(TdsPostgres, ErrorsAndTransactions) {
  TDS_FIXTURE_OR_SKIP();
  if (!ServerInfo::get().has_pg()) GTEST_SKIP() << "no PostgreSQL behind the fixture";
  auto c = connect("pgapp");
  exec(c, "DROP TABLE IF EXISTS tds_pgu");
  exec(c, "CREATE TABLE tds_pgu (id int PRIMARY KEY)");
  auto tx = c.begin();
  ASSERT_TRUE(tx.ok()) << tx.error().message;
  exec(c, "INSERT INTO tds_pgu VALUES (1)");
  auto dup = c.execute("INSERT INTO tds_pgu VALUES (1)");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().sqlstate, "23505");
  EXPECT_EQ(dup.error().code, Errc::constraint);
  EXPECT_FALSE(tx->commit().ok());
  auto t = fetch(c, "SELECT count(*) AS n FROM tds_pgu");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->rows[0][0].i64, 0);
}

TEST(TdsPostgres, WidthsAndTimestampsKeepTheirTypes) {
  TDS_FIXTURE_OR_SKIP();
  if (!ServerInfo::get().has_pg()) GTEST_SKIP() << "no PostgreSQL behind the fixture";
  auto c = connect("pgapp");
  auto t = fetch(c,
                 "SELECT 7::int2 AS s, 1.5::float4 AS r, '2024-02-29 12:34:56.5'::timestamp AS ts, "
                 "'abc'::varchar(20) AS v, 12.5::numeric(5,1) AS n");
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 1u);
  const auto& r = t->rows[0];
  EXPECT_EQ(t->columns[0].native.name, "smallint");
  EXPECT_EQ(r[0].i64, 7);
  EXPECT_EQ(t->columns[1].native.name, "real");
  EXPECT_EQ(r[1].f64, 1.5);
  EXPECT_EQ(t->columns[2].native.time_form, db::TimeForm::timestamp);
  EXPECT_EQ(r[2].micros, 1709210096500000);  // 2024-02-29T12:34:56.5 read as UTC
  EXPECT_EQ(t->columns[3].native.name, "nvarchar(40)");
  EXPECT_EQ(r[3].str, "abc");
  EXPECT_EQ(t->columns[4].native.name, "decimal(5,1)");
  EXPECT_EQ(r[4].str, "12.5");
}

TEST(TdsPostgres, CancelReachesPostgres) {
  TDS_FIXTURE_OR_SKIP();
  if (!ServerInfo::get().has_pg()) GTEST_SKIP() << "no PostgreSQL behind the fixture";
  auto c = connect("pgapp");
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    c.cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  auto r = c.execute("SELECT pg_sleep(30)");
  canceller.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().sqlstate, "57014") << r.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  auto t = fetch(c, "SELECT 5 AS five");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->rows[0][0].i64, 5);
}

TEST(TdsSession, ResetRollsBackAndResetsTheConnection) {
  TDS_FIXTURE_OR_SKIP();
  auto c = connect();
  exec(c, "DROP TABLE IF EXISTS tds_reset");
  exec(c, "CREATE TABLE tds_reset (id INTEGER PRIMARY KEY)");
  auto tx = c.begin();
  ASSERT_TRUE(tx.ok());
  exec(c, "INSERT INTO tds_reset VALUES (1)");
  ASSERT_TRUE(c.reset("").ok());
  EXPECT_EQ(c.tx_state(), db::TxState::idle);
  // The next request carries RESETCONNECTION; the server acknowledges it.
  auto t = fetch(c, "SELECT count(*) AS n FROM tds_reset");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->rows[0][0].i64, 0);
  EXPECT_TRUE(c.alive());
}

}  // namespace
}  // namespace wirepool::tds_it
