// The /metrics building blocks and the admin console's connection-string reading.
//
// Cases: a histogram's buckets are cumulative, _count equals the +Inf bucket and
// _sum is in seconds; a value on a bucket bound lands in that bucket; label
// values escape backslash, double quote and newline; SQLSTATE classes are the
// first two characters, anything outside [0-9A-Z] counted as X; error reasons
// and protocols have stable names; SHOW STATS totals come from the counters and
// a period rolls; the backend user of libpq key=value, URI and ODBC connection
// strings, none for SQLite.

#include <gtest/gtest.h>

#include "server/admin.hpp"
#include "server/metrics.hpp"

namespace wirepool::server {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

TEST(Histogram, BucketsAreCumulativeAndCountEqualsInf) {
  Histogram h;
  h.observe(microseconds(50));          // <= 0.0001
  h.observe(microseconds(100));         // on the bound 0.0001: that bucket
  h.observe(milliseconds(300));         // <= 0.5
  h.observe(std::chrono::seconds(60));  // +Inf only
  std::string out;
  h.render(out, "x_seconds", "db=\"a\"");
  EXPECT_NE(out.find("x_seconds_bucket{db=\"a\",le=\"0.0001\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_bucket{db=\"a\",le=\"0.25\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_bucket{db=\"a\",le=\"0.5\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_bucket{db=\"a\",le=\"30\"} 3\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_bucket{db=\"a\",le=\"+Inf\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_count{db=\"a\"} 4\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_seconds_sum{db=\"a\"} 60.30015\n"), std::string::npos) << out;
  EXPECT_EQ(h.count(), 4u);
  EXPECT_EQ(h.sum_us(), 60300150u);
}

TEST(Histogram, WithoutLabels) {
  Histogram h;
  std::string out;
  h.render(out, "y", "");
  EXPECT_NE(out.find("y_bucket{le=\"+Inf\"} 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("y_count 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("y_sum 0\n"), std::string::npos) << out;
}

TEST(MetricsText, LabelValuesAreEscaped) {
  EXPECT_EQ(label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(label_value("plain"), "plain");
  std::string out;
  metric_header(out, "m_total", "counter", "Help text.");
  EXPECT_EQ(out, "# HELP m_total Help text.\n# TYPE m_total counter\n");
}

TEST(MetricsCounters, SqlstateClassesAndNames) {
  Metrics m;
  m.sqlstate("53300");
  m.sqlstate("53400");
  m.sqlstate("28P01");
  m.sqlstate("x");
  m.sqlstate("a1000");
  auto classes = m.sqlstate_classes();
  EXPECT_EQ(classes["53"], 2u);
  EXPECT_EQ(classes["28"], 1u);
  EXPECT_EQ(classes["XX"], 1u);  // too short
  EXPECT_EQ(classes["X1"], 1u);  // lower case is not a SQLSTATE character
  m.error(ErrorReason::pool_timeout);
  EXPECT_EQ(m.errors(ErrorReason::pool_timeout), 1u);
  EXPECT_EQ(m.errors(ErrorReason::auth_failed), 0u);
  EXPECT_EQ(to_string(ErrorReason::backend_lost), "backend_lost");
  EXPECT_EQ(protocol_label(0), "postgres");
  EXPECT_EQ(protocol_label(1), "tds");
  EXPECT_EQ(protocol_label(2), "http");
  m.reload(true);
  m.reload(false);
  m.reload(false);
  EXPECT_EQ(m.reloads(true), 1u);
  EXPECT_EQ(m.reloads(false), 2u);
}

TEST(DatabaseMetrics, StatsTotalsAndPeriods) {
  DatabaseMetrics d;
  d.statements = 10;
  d.transactions = 4;
  d.transaction_us = 800;
  d.bytes_in = 100;
  d.bytes_out = 200;
  d.statement_duration.observe(microseconds(30));
  d.acquire_wait.observe(microseconds(7));
  auto t = d.totals();
  EXPECT_EQ(t.query_count, 10u);
  EXPECT_EQ(t.xact_count, 4u);
  EXPECT_EQ(t.xact_us, 800u);
  EXPECT_EQ(t.received, 100u);
  EXPECT_EQ(t.sent, 200u);
  EXPECT_EQ(t.query_us, 30u);
  EXPECT_EQ(t.wait_us, 7u);
  EXPECT_EQ(t.wait_count, 1u);
  d.roll_period();
  d.statements = 25;
  d.roll_period();
  auto [a, b] = d.last_period();
  EXPECT_EQ(a.query_count, 10u);
  EXPECT_EQ(b.query_count, 25u);
}

TEST(AdminConsole, BackendUserFromConnectionStrings) {
  config::Database d;
  d.driver = "postgresql";
  d.connection = "host=db port=5432 user=app password=secret dbname=x";
  EXPECT_EQ(backend_user(d), "app");
  d.connection = "host=db user='o\\'k' dbname=x";  // libpq: a backslash escapes a quote
  EXPECT_EQ(backend_user(d), "o'k");
  d.connection = "postgresql://reporter:pw@db:5432/x?sslmode=require";
  EXPECT_EQ(backend_user(d), "reporter");
  d.driver = "odbc";
  d.connection = "Driver={PostgreSQL Unicode};Server=db;UID=odbcuser;PWD={p;w}";
  EXPECT_EQ(backend_user(d), "odbcuser");
  d.connection = "DSN=x";
  EXPECT_EQ(backend_user(d), "");
  d.driver = "sqlite";
  d.connection = "user=not-a-key.db";
  EXPECT_EQ(backend_user(d), "");
}

}  // namespace
}  // namespace wirepool::server
