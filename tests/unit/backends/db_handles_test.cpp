// The handle semantics of backends/db.cpp, driven by a tiny in-memory driver
// that counts every call it receives:
//  - an empty handle (default, closed, committed, rolled back) answers
//    Errc::closed, SQLSTATE 08003, "<what> is closed", without reaching the driver
//  - close(), commit() and rollback() empty the handle even when the driver fails
//  - a Transaction comes from Connection::begin (not when begin fails) and its
//    query/execute/prepare reach the connection
//  - execute() drains every result, reports the last command and closes the reader
//  - RowsImpl::next copies what next_borrowed lends; drain()
//  - ConnectionImpl defaults: reset runs the reset query (and nothing when empty),
//    set_event_sink and copy answer Unsupported 0A000
//  - Error helpers, to_string, find_driver / driver_names
//  - statement name prefixes: base, 64 random bits in hex, '_', different per call

#include <gtest/gtest.h>

#include <deque>

#include "backends/db.hpp"

namespace wirepool::db {
namespace {

/// What the memory driver was asked to do.
struct Calls {
  int query = 0, prepare = 0, begin = 0, commit = 0, rollback = 0, close = 0, cancel = 0;
  int rows_close = 0, statement_query = 0, statement_close = 0, next_result = 0;
  std::vector<std::string> texts;  // every query text, in order
  bool fail_close = false, fail_commit = false, fail_rollback = false, fail_begin = false;
  bool in_transaction = false;
};

Error driver_error(std::string message) {
  Error e;
  e.code = Errc::invalid_query;
  e.sqlstate = "42000";
  e.message = std::move(message);
  return e;
}

/// Rows: the results of one text; each result is (column name, values).
class MemoryRows : public RowsImpl {
 public:
  MemoryRows(Calls& calls, std::deque<std::vector<std::string>> results)
      : calls_(calls), results_(std::move(results)) {
    column_.name = "v";
    column_.kind = Kind::Text;
  }
  std::span<const Column> columns() const override {
    return results_.empty() ? std::span<const Column>() : std::span<const Column>(&column_, 1);
  }
  Result<bool> next_borrowed(std::span<ValueView> row) override {
    if (results_.empty() || pos_ >= results_.front().size()) return false;
    row[0] = ValueView::text(results_.front()[pos_++]);
    return true;
  }
  Result<bool> next_result() override {
    ++calls_.next_result;
    if (!results_.empty()) results_.pop_front();
    pos_ = 0;
    return !results_.empty();
  }
  CommandInfo command() const override {
    CommandInfo c;
    c.verb = "SELECT";
    c.affected = static_cast<int64_t>(results_.empty() ? 0 : results_.front().size());
    return c;
  }
  Status close() override {
    ++calls_.rows_close;
    if (calls_.fail_close) return driver_error("rows close failed");
    return {};
  }

 private:
  Calls& calls_;
  std::deque<std::vector<std::string>> results_;
  size_t pos_ = 0;
  Column column_;
};

/// "a,b;c" -> two results: {a, b} and {c}; "" -> one empty result.
std::deque<std::vector<std::string>> parse_results(std::string_view text) {
  std::deque<std::vector<std::string>> out(1);
  std::string cur;
  for (char c : text) {
    if (c == ',' || c == ';') {
      if (!cur.empty()) out.back().push_back(cur);
      cur.clear();
      if (c == ';') out.emplace_back();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.back().push_back(cur);
  return out;
}

class MemoryStatement : public StatementImpl {
 public:
  MemoryStatement(Calls& calls, std::string text) : calls_(calls), text_(std::move(text)) {}
  std::span<const ParamInfo> params() const override { return {}; }
  std::span<const Column> columns() const override { return {}; }
  Result<std::unique_ptr<RowsImpl>> query(Params, const QueryOptions&) override {
    ++calls_.statement_query;
    return std::unique_ptr<RowsImpl>(std::make_unique<MemoryRows>(calls_, parse_results(text_)));
  }
  Status close() override {
    ++calls_.statement_close;
    if (calls_.fail_close) return driver_error("statement close failed");
    return {};
  }

 private:
  Calls& calls_;
  std::string text_;
};

class MemoryConnection : public ConnectionImpl {
 public:
  explicit MemoryConnection(Calls& calls) : calls_(calls) {}
  Capabilities capabilities() const override { return {}; }
  Result<std::unique_ptr<RowsImpl>> query(std::string_view sql, Params,
                                          const QueryOptions&) override {
    ++calls_.query;
    calls_.texts.emplace_back(sql);
    if (sql == "bad") return driver_error("syntax error");
    return std::unique_ptr<RowsImpl>(std::make_unique<MemoryRows>(calls_, parse_results(sql)));
  }
  Result<std::unique_ptr<StatementImpl>> prepare(std::string_view sql,
                                                 std::span<const ParamInfo>) override {
    ++calls_.prepare;
    return std::unique_ptr<StatementImpl>(
        std::make_unique<MemoryStatement>(calls_, std::string(sql)));
  }
  Status begin(const BeginOptions&) override {
    ++calls_.begin;
    if (calls_.fail_begin) return driver_error("begin failed");
    calls_.in_transaction = true;
    return {};
  }
  Status commit() override {
    ++calls_.commit;
    calls_.in_transaction = false;
    if (calls_.fail_commit) return driver_error("commit failed");
    return {};
  }
  Status rollback() override {
    ++calls_.rollback;
    calls_.in_transaction = false;
    if (calls_.fail_rollback) return driver_error("rollback failed");
    return {};
  }
  TxState tx_state() const override {
    return calls_.in_transaction ? TxState::in_transaction : TxState::idle;
  }
  void cancel() noexcept override { ++calls_.cancel; }
  Status close() override {
    ++calls_.close;
    if (calls_.fail_close) return driver_error("close failed");
    return {};
  }

 private:
  Calls& calls_;
};

// Members are constructed in declaration order: `calls` before the connection using it.
class HandlesTest : public ::testing::Test {
 protected:
  Calls calls;
  Connection conn{std::make_unique<MemoryConnection>(calls)};
};

void expect_closed(const Error& e, std::string_view what) {
  EXPECT_EQ(e.code, Errc::closed);
  EXPECT_EQ(e.sqlstate, "08003");
  EXPECT_EQ(e.message, std::string(what) + " is closed");
}

TEST_F(HandlesTest, DefaultHandlesAnswerClosed) {
  Connection c;
  EXPECT_FALSE(c.is_open());
  expect_closed(c.query("x").error(), "connection");
  expect_closed(c.execute("x").error(), "connection");
  expect_closed(c.prepare("x").error(), "connection");
  expect_closed(c.begin().error(), "connection");
  expect_closed(c.close().error(), "connection");
  expect_closed(c.reset("").error(), "connection");
  expect_closed(c.set_event_sink(nullptr).error(), "connection");
  EXPECT_EQ(c.tx_state(), TxState::idle);
  EXPECT_FALSE(c.alive());
  c.cancel();  // harmless

  Rows r;
  std::vector<Value> row(1);
  expect_closed(r.next(row).error(), "result");
  EXPECT_TRUE(r.columns().empty());
  EXPECT_EQ(r.command().affected, -1);
  expect_closed(r.close().error(), "result");

  Statement s;
  expect_closed(s.query().error(), "statement");
  expect_closed(s.execute().error(), "statement");
  expect_closed(s.close().error(), "statement");

  Transaction t;
  expect_closed(t.query("x").error(), "transaction");
  expect_closed(t.commit().error(), "transaction");
  expect_closed(t.rollback().error(), "transaction");
}

TEST_F(HandlesTest, DoubleCloseAnswersClosedWithoutReachingTheDriver) {
  ASSERT_TRUE(conn.close().ok());
  EXPECT_EQ(calls.close, 1);
  expect_closed(conn.close().error(), "connection");
  expect_closed(conn.query("a").error(), "connection");
  EXPECT_EQ(calls.close, 1);
  EXPECT_EQ(calls.query, 0);
}

TEST_F(HandlesTest, CloseEmptiesTheHandleEvenWhenTheDriverFails) {
  calls.fail_close = true;
  auto rows = conn.query("a");
  ASSERT_TRUE(rows.ok());
  EXPECT_FALSE(rows->close().ok());
  EXPECT_FALSE(rows->is_open());
  expect_closed(rows->close().error(), "result");
  EXPECT_EQ(calls.rows_close, 1);

  auto st = conn.prepare("a");
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE(st->close().ok());
  expect_closed(st->close().error(), "statement");
  EXPECT_EQ(calls.statement_close, 1);

  EXPECT_FALSE(conn.close().ok());
  EXPECT_FALSE(conn.is_open());
  expect_closed(conn.close().error(), "connection");
  EXPECT_EQ(calls.close, 1);
}

TEST_F(HandlesTest, QueryAfterCommitAnswersClosedWithoutReachingTheDriver) {
  auto tx = conn.begin();
  ASSERT_TRUE(tx.ok());
  EXPECT_EQ(conn.tx_state(), TxState::in_transaction);
  ASSERT_TRUE(tx->execute("a").ok());
  EXPECT_EQ(calls.query, 1);
  ASSERT_TRUE(tx->commit().ok());
  EXPECT_FALSE(tx->is_open());
  expect_closed(tx->query("a").error(), "transaction");
  expect_closed(tx->execute("a").error(), "transaction");
  expect_closed(tx->prepare("a").error(), "transaction");
  expect_closed(tx->commit().error(), "transaction");
  expect_closed(tx->rollback().error(), "transaction");
  EXPECT_EQ(calls.query, 1);
  EXPECT_EQ(calls.prepare, 0);
  EXPECT_EQ(calls.commit, 1);
  EXPECT_EQ(calls.rollback, 0);
}

TEST_F(HandlesTest, CommitAndRollbackEmptyTheTransactionEvenWhenTheDriverFails) {
  calls.fail_commit = true;
  auto tx = conn.begin();
  ASSERT_TRUE(tx.ok());
  EXPECT_FALSE(tx->commit().ok());
  EXPECT_FALSE(tx->is_open());
  expect_closed(tx->rollback().error(), "transaction");
  EXPECT_EQ(calls.rollback, 0);

  calls.fail_rollback = true;
  auto tx2 = conn.begin();
  ASSERT_TRUE(tx2.ok());
  EXPECT_EQ(tx2->rollback().error().message, "rollback failed");
  EXPECT_FALSE(tx2->is_open());
  expect_closed(tx2->commit().error(), "transaction");
  EXPECT_EQ(calls.commit, 1);
  EXPECT_EQ(calls.rollback, 1);
}

TEST_F(HandlesTest, FailedBeginGivesNoTransaction) {
  calls.fail_begin = true;
  auto tx = conn.begin();
  ASSERT_FALSE(tx.ok());
  EXPECT_EQ(tx.error().message, "begin failed");
  EXPECT_EQ(calls.begin, 1);
}

TEST_F(HandlesTest, TransactionDelegatesToItsConnection) {
  auto tx = conn.begin();
  ASSERT_TRUE(tx.ok());
  auto rows = tx->query("x,y");
  ASSERT_TRUE(rows.ok());
  std::vector<Value> row(1);
  ASSERT_TRUE(rows->next(row).value());
  EXPECT_EQ(row[0].str, "x");
  ASSERT_TRUE(rows->close().ok());
  auto st = tx->prepare("z");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(calls.prepare, 1);
  EXPECT_EQ(calls.query, 1);
  ASSERT_TRUE(tx->rollback().ok());
}

TEST_F(HandlesTest, ExecuteDrainsEveryResultReportsTheLastAndClosesTheReader) {
  auto info = conn.execute("a,b;c,d,e");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->verb, "SELECT");
  EXPECT_EQ(info->affected, 3);
  EXPECT_EQ(calls.next_result, 2);
  EXPECT_EQ(calls.rows_close, 1);
}

TEST_F(HandlesTest, ExecuteReportsTheDriverErrorAsIs) {
  auto info = conn.execute("bad");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.error().sqlstate, "42000");
  EXPECT_EQ(info.error().message, "syntax error");
}

TEST_F(HandlesTest, StatementExecuteClosesItsReader) {
  auto st = conn.prepare("a,b");
  ASSERT_TRUE(st.ok());
  auto info = st->execute();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->affected, 2);
  EXPECT_EQ(calls.statement_query, 1);
  EXPECT_EQ(calls.rows_close, 1);
  ASSERT_TRUE(st->close().ok());
  expect_closed(st->execute().error(), "statement");
  EXPECT_EQ(calls.statement_query, 1);
}

TEST_F(HandlesTest, NextCopiesWhatNextBorrowedLends) {
  auto rows = conn.query("hello,world");
  ASSERT_TRUE(rows.ok());
  std::vector<Value> row(1);
  ASSERT_TRUE(rows->next(row).value());
  EXPECT_EQ(row[0].kind, Kind::Text);
  EXPECT_EQ(row[0].str, "hello");
  ASSERT_TRUE(rows->next(row).value());
  EXPECT_EQ(row[0].str, "world");
  EXPECT_FALSE(rows->next(row).value());
  EXPECT_EQ(row[0].str, "world");  // untouched after the end
}

TEST_F(HandlesTest, DrainOfAClosedReaderAnswersClosed) {
  Rows rows;
  expect_closed(drain(rows).error(), "result");
}

TEST_F(HandlesTest, ResetRunsTheResetQueryAndNothingWhenEmpty) {
  ASSERT_TRUE(conn.reset("").ok());
  EXPECT_EQ(calls.query, 0);
  ASSERT_TRUE(conn.reset("DISCARD ALL").ok());
  ASSERT_EQ(calls.texts.size(), 1u);
  EXPECT_EQ(calls.texts[0], "DISCARD ALL");
  EXPECT_EQ(calls.rows_close, 1);
  EXPECT_FALSE(conn.reset("bad").ok());
}

TEST_F(HandlesTest, SideChannelsAreUnsupportedByDefault) {
  auto st = conn.set_event_sink(nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Errc::unsupported);
  EXPECT_EQ(st.error().sqlstate, "0A000");
  auto cp = conn.impl()->copy("COPY t FROM STDIN");
  ASSERT_FALSE(cp.ok());
  EXPECT_EQ(cp.error().code, Errc::unsupported);
  EXPECT_EQ(cp.error().sqlstate, "0A000");
}

TEST_F(HandlesTest, CancelReachesTheDriverWhileOpen) {
  conn.cancel();
  EXPECT_EQ(calls.cancel, 1);
  ASSERT_TRUE(conn.close().ok());
  conn.cancel();
  EXPECT_EQ(calls.cancel, 1);
}

TEST(ErrorHelpers, CarryTheirSqlstates) {
  expect_closed(Error::closed(), "connection");
  const Error u = Error::unsupported("no COPY");
  EXPECT_EQ(u.code, Errc::unsupported);
  EXPECT_EQ(u.sqlstate, "0A000");
  EXPECT_EQ(u.message, "no COPY");
  const Error c = Error::connection("gone");
  EXPECT_EQ(c.code, Errc::connection);
  EXPECT_EQ(c.sqlstate, "08006");
  EXPECT_EQ(c.message, "gone");
}

TEST(Names, ToStringCoversEveryEnumerator) {
  EXPECT_EQ(to_string(Errc::ok), "ok");
  EXPECT_EQ(to_string(Errc::closed), "closed");
  EXPECT_EQ(to_string(Errc::invalid_query), "invalid_query");
  EXPECT_EQ(to_string(Errc::constraint), "constraint");
  EXPECT_EQ(to_string(Errc::busy), "busy");
  EXPECT_EQ(to_string(Errc::unsupported), "unsupported");
  EXPECT_EQ(to_string(Errc::connection), "connection");
  EXPECT_EQ(to_string(Kind::Null), "null");
  EXPECT_EQ(to_string(Kind::Decimal), "decimal");
  EXPECT_EQ(to_string(Kind::Time), "time");
  EXPECT_EQ(to_string(TxState::idle), "idle");
  EXPECT_EQ(to_string(TxState::in_transaction), "in_transaction");
  EXPECT_EQ(to_string(TxState::failed), "failed");
  EXPECT_EQ(sql::to_string(sql::Dialect::sqlite), "sqlite");
  EXPECT_EQ(sql::to_string(sql::Dialect::tsql), "tsql");
}

TEST(StatementNames, PrefixesAreRandomPerCall) {
  const std::string a = random_statement_prefix("wp_");
  const std::string b = random_statement_prefix("wp_");
  EXPECT_EQ(a.size(), 3u + 16u + 1u);
  EXPECT_EQ(a.rfind("wp_", 0), 0u);
  EXPECT_EQ(a.back(), '_');
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef", 3), a.size() - 1);
  EXPECT_NE(a, b);
}

TEST(Drivers, AllFiveDriversAreBuiltIn) {
  const Driver* d = find_driver("sqlite");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->name(), "sqlite");
  ASSERT_NE(find_driver("postgresql"), nullptr);
  EXPECT_EQ(find_driver("postgresql")->name(), "postgresql");
  ASSERT_NE(find_driver("mysql"), nullptr);
  EXPECT_EQ(find_driver("mysql")->name(), "mysql");
  ASSERT_NE(find_driver("odbc"), nullptr);
  EXPECT_EQ(find_driver("odbc")->name(), "odbc");
  ASSERT_NE(find_driver("tds"), nullptr);
  EXPECT_EQ(find_driver("tds")->name(), "tds");
  EXPECT_EQ(find_driver("nosuch"), nullptr);
  const auto names = driver_names();
  ASSERT_EQ(names.size(), 5u);
  EXPECT_EQ(names[0], "sqlite");
  EXPECT_EQ(names[1], "postgresql");
  EXPECT_EQ(names[2], "mysql");
  EXPECT_EQ(names[3], "odbc");
  EXPECT_EQ(names[4], "tds");
}

}  // namespace
}  // namespace wirepool::db
