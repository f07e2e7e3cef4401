// ResultPump on real rows (the SQLite driver, in memory) into an in-memory
// RowSink that records what it was handed.
//
// Cases: a large result comes in chunks (each fetch stops once the output
// holds flush_at bytes, the rows in order, then `done` with the reader
// closed); a row limit answers `limit` and the result goes on after it;
// several results (`multi`) each get their columns and end, a statement
// without rows too; first_row_first hands the first row to begin_columns (and
// nullptr for an empty result, which ends without another fetch); a row the
// sink refuses ends the result with its error and the reader closed; fail()
// between chunks does the same; an error of the backend mid-result arrives
// after the rows before it; parked rows (read ahead into a buffer) are served
// again in chunks, honouring a limit, then the result's end.

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "backends/db.hpp"
#include "server/result_pump.hpp"

namespace wirepool::server {
namespace {

/// Encodes each row as 'R', a 4-byte length, then the values joined by ','.
struct RecordingSink final : RowSink {
  void begin_columns(std::span<const db::Column> columns, const std::vector<db::ValueView>* first,
                     std::string& out) override {
    ++begins;
    column_counts.push_back(columns.size());
    first_rows.push_back(first ? std::optional<std::string>(join(*first)) : std::nullopt);
    out += "C";
  }
  bool add_row(std::span<const db::ValueView> values, std::string& out,
               std::optional<db::Error>& failure) override {
    if (refuse_at >= 0 && rows_seen == refuse_at) {
      failure = db::Error{};
      failure->sqlstate = "22P02";
      failure->message = "refused";
      return false;
    }
    ++rows_seen;
    std::string body = join(values);
    const uint32_t len = static_cast<uint32_t>(body.size() + 4);
    out += 'R';
    out += static_cast<char>(len >> 24);
    out += static_cast<char>(len >> 16);
    out += static_cast<char>(len >> 8);
    out += static_cast<char>(len);
    out += body;
    return true;
  }
  void end_result(const db::CommandInfo&, bool has_columns, int64_t rows,
                  std::string& out) override {
    ends.push_back({has_columns, rows});
    out += "E";
  }
  size_t encoded_row_size(std::string_view b) const override {
    const auto* u = reinterpret_cast<const unsigned char*>(b.data());
    return 1 + (size_t{u[1]} << 24 | size_t{u[2]} << 16 | size_t{u[3]} << 8 | size_t{u[4]});
  }
  static std::string join(std::span<const db::ValueView> values) {
    std::string s;
    for (size_t i = 0; i < values.size(); ++i) {
      if (i) s += ',';
      const auto& v = values[i];
      if (v.is_null()) {
        s += "NULL";
      } else if (v.kind == db::Kind::I64) {
        s += std::to_string(v.i64);
      } else {
        s += v.str;
      }
    }
    return s;
  }

  int begins = 0;
  std::vector<size_t> column_counts;
  std::vector<std::optional<std::string>> first_rows;
  std::vector<std::pair<bool, int64_t>> ends;
  int rows_seen = 0;
  int refuse_at = -1;
};

/// A row as RecordingSink encodes it.
std::string encoded(const std::string& body) {
  std::string out;
  db::ValueView v;
  v.kind = db::Kind::Text;
  v.str = body;
  std::optional<db::Error> failure;
  std::vector<db::ValueView> values{v};
  RecordingSink().add_row(values, out, failure);
  return out;
}

/// The row bodies in `out` (as RecordingSink encoded them), in order.
std::vector<std::string> decode_rows(const std::string& out) {
  std::vector<std::string> rows;
  size_t at = 0;
  while (at < out.size()) {
    if (out[at] != 'R') {
      ++at;
      continue;
    }
    const auto* u = reinterpret_cast<const unsigned char*>(out.data() + at);
    const size_t len = size_t{u[1]} << 24 | size_t{u[2]} << 16 | size_t{u[3]} << 8 | size_t{u[4]};
    rows.push_back(out.substr(at + 5, len - 4));
    at += 1 + len;
  }
  return rows;
}

class ResultPumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db::OpenOptions o;
    o.connection = ":memory:";
    auto c = db::find_driver("sqlite")->open(o);
    ASSERT_TRUE(c.ok()) << c.error().message;
    conn = std::move(c.value());
  }
  /// Opens `sql` into `pump` and fetches once.
  Pumped open(ResultPump& pump, RowSink& sink, std::string_view sql, std::string& out,
              int64_t limit = 0) {
    return pump.start([&] { return conn.query(sql); }, sink, out, limit, err);
  }
  db::Connection conn;
  db::Error err;
};

const char* kSeries =
    "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 10000) "
    "SELECT i, 'row number ' || i FROM s";

TEST_F(ResultPumpTest, LargeResultComesInChunksOfFlushAtThenDone) {
  ResultPump pump;
  RecordingSink sink;
  std::string out, all;
  Pumped f = open(pump, sink, kSeries, out);
  int chunks = 0;
  while (f == Pumped::flush) {
    EXPECT_GE(out.size(), kFlushBytes);
    EXPECT_LT(out.size(), kFlushBytes + 64);  // stops at the first row past the mark
    all += out;
    out.clear();
    ++chunks;
    f = pump.fetch(sink, out, 0, err);
  }
  all += out;
  ASSERT_EQ(f, Pumped::done);
  EXPECT_GE(chunks, 3);
  auto rows = decode_rows(all);
  ASSERT_EQ(rows.size(), 10000u);
  EXPECT_EQ(rows.front(), "1,row number 1");
  EXPECT_EQ(rows.back(), "10000,row number 10000");
  EXPECT_EQ(pump.sent, 10000);
  EXPECT_EQ(sink.begins, 1);
  EXPECT_FALSE(pump.rows.is_open());
  EXPECT_TRUE(sink.ends.empty());  // one result: the front end ends it
}

TEST_F(ResultPumpTest, RowLimitAnswersLimitAndTheResultGoesOnAfterIt) {
  ResultPump pump;
  RecordingSink sink;
  std::string out;
  EXPECT_EQ(open(pump, sink, "SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3", out, 2),
            Pumped::limit);
  EXPECT_EQ(decode_rows(out), (std::vector<std::string>{"1", "2"}));
  EXPECT_TRUE(pump.rows.is_open());
  out.clear();
  pump.sent = 0;  // a new Execute counts its own rows
  EXPECT_EQ(pump.fetch(sink, out, 2, err), Pumped::done);
  EXPECT_EQ(decode_rows(out), (std::vector<std::string>{"3"}));
  EXPECT_EQ(pump.sent, 1);
}

TEST_F(ResultPumpTest, SeveralResultsEachGetColumnsAndAnEnd) {
  ResultPump pump;
  pump.multi = true;
  RecordingSink sink;
  std::string out;
  ASSERT_EQ(open(pump, sink, "SELECT 1; CREATE TABLE t(a); SELECT 2, 3 UNION ALL SELECT 4, 5", out),
            Pumped::done)
      << err.message;
  EXPECT_EQ(out, "C" + encoded("1") + "E" + "E" + "C" + encoded("2,3") + encoded("4,5") + "E");
  EXPECT_EQ(sink.column_counts, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(sink.ends, (std::vector<std::pair<bool, int64_t>>{{true, 1}, {false, 0}, {true, 2}}));
  EXPECT_FALSE(pump.rows.is_open());
}

TEST_F(ResultPumpTest, FirstRowFirstHandsTheFirstRowToBeginColumns) {
  ResultPump pump;
  pump.first_row_first = true;
  RecordingSink sink;
  std::string out;
  ASSERT_EQ(open(pump, sink, "SELECT 7, 'x' UNION ALL SELECT 8, NULL", out), Pumped::done);
  ASSERT_EQ(sink.first_rows.size(), 1u);
  EXPECT_EQ(sink.first_rows[0], std::optional<std::string>("7,x"));
  EXPECT_EQ(decode_rows(out), (std::vector<std::string>{"7,x", "8,NULL"}));
  EXPECT_EQ(pump.sent, 2);

  ResultPump empty;
  empty.first_row_first = true;
  RecordingSink sink2;
  out.clear();
  ASSERT_EQ(open(empty, sink2, "SELECT 1 WHERE 0", out), Pumped::done);
  EXPECT_EQ(sink2.first_rows, (std::vector<std::optional<std::string>>{std::nullopt}));
  EXPECT_EQ(out, "C");
  EXPECT_EQ(empty.sent, 0);
}

TEST_F(ResultPumpTest, RowRefusedBySinkEndsTheResultWithItsError) {
  ResultPump pump;
  RecordingSink sink;
  sink.refuse_at = 4;
  std::string out;
  ASSERT_EQ(open(pump, sink, kSeries, out), Pumped::error);
  EXPECT_EQ(err.sqlstate, "22P02");
  EXPECT_EQ(pump.sent, 4);
  EXPECT_EQ(decode_rows(out).size(), 4u);
  EXPECT_FALSE(pump.rows.is_open());
}

TEST_F(ResultPumpTest, FailBetweenChunksClosesTheReader) {
  ResultPump pump;
  RecordingSink sink;
  std::string out;
  ASSERT_EQ(open(pump, sink, kSeries, out), Pumped::flush);
  db::Error cancel;
  cancel.sqlstate = "57014";
  pump.fail(cancel);
  out.clear();
  ASSERT_EQ(pump.fetch(sink, out, 0, err), Pumped::error);
  EXPECT_EQ(err.sqlstate, "57014");
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(pump.rows.is_open());
}

TEST_F(ResultPumpTest, BackendErrorMidResultComesAfterTheRowsBeforeIt) {
  ResultPump pump;
  RecordingSink sink;
  std::string out;
  // abs() of the smallest integer overflows on the fourth row.
  ASSERT_EQ(
      open(pump, sink,
           "WITH s(i) AS (VALUES (1), (2), (3), (4), (5)) "
           "SELECT CASE WHEN i < 4 THEN i ELSE abs(-9223372036854775807 - (i - 3)) END FROM s",
           out),
      Pumped::error);
  EXPECT_EQ(decode_rows(out), (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_FALSE(err.message.empty());
  EXPECT_FALSE(pump.rows.is_open());
}

TEST_F(ResultPumpTest, ParkedRowsAreServedAgainInChunksThenTheEnd) {
  ResultPump pump;
  RecordingSink sink;
  std::string out;
  ASSERT_EQ(open(pump, sink, kSeries, out, 10), Pumped::limit);
  // Read the rest ahead, as PgClient::park_portals does.
  Pumped f = Pumped::more;
  while (f != Pumped::done && f != Pumped::error) {
    if (f == Pumped::flush) pump.flush_at = pump.parked.size() + kFlushBytes;
    f = pump.fetch(sink, pump.parked, 0, err);
  }
  ASSERT_EQ(f, Pumped::done);
  EXPECT_FALSE(pump.rows.is_open());
  pump.flush_at = kFlushBytes;
  pump.is_parked = true;
  pump.phase = ResultPump::Phase::rows;
  pump.sent = 0;

  out.clear();
  ASSERT_EQ(pump.fetch(sink, out, 5, err), Pumped::limit);
  EXPECT_EQ(decode_rows(out),
            (std::vector<std::string>{"11,row number 11", "12,row number 12", "13,row number 13",
                                      "14,row number 14", "15,row number 15"}));
  out.clear();
  pump.sent = 0;
  std::string rest;
  f = pump.fetch(sink, out, 0, err);
  while (f == Pumped::flush) {
    EXPECT_GE(out.size(), kFlushBytes);
    rest += out;
    out.clear();
    f = pump.fetch(sink, out, 0, err);
  }
  rest += out;
  ASSERT_EQ(f, Pumped::done);
  auto rows = decode_rows(rest);
  ASSERT_EQ(rows.size(), 10000u - 15);
  EXPECT_EQ(rows.front(), "16,row number 16");
  EXPECT_EQ(rows.back(), "10000,row number 10000");
}

}  // namespace
}  // namespace wirepool::server
