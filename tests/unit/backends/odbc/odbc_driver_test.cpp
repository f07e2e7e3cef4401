// The odbc driver's checks that need no data source: options (durations in
// whole seconds, sizes, unknown keys), a tls block refused (ODBC drivers do
// their own TLS), an empty connection string, and redaction of PWD.

#include <gtest/gtest.h>

#include "backends/db.hpp"

namespace wirepool::odbc {
namespace {

std::vector<std::pair<std::string, std::string>> problems(const db::OpenOptions& o) {
  return db::find_driver("odbc")->validate(o);
}

TEST(OdbcDriver, OptionsAreCheckedAndTlsBlocksRefused) {
  db::OpenOptions o;
  o.connection = "Driver={SQLite3};Database=/tmp/x.db";
  EXPECT_TRUE(problems(o).empty());
  o.options = {{"login_timeout", "5s"},
               {"query_timeout", "30s"},
               {"rowset_bytes", "1MiB"},
               {"long_bytes", "4KiB"}};
  EXPECT_TRUE(problems(o).empty());
  o.options = {
      {"query_timeout", "500ms"}, {"rowset_bytes", "12"}, {"nope", "1"}, {"login_timeout", "soon"}};
  const auto p = problems(o);
  ASSERT_EQ(p.size(), 4u);
  for (const auto& [key, message] : p) {
    SCOPED_TRACE(key + ": " + message);
    EXPECT_FALSE(message.empty());
  }
  db::OpenOptions t;
  t.connection = "DSN=x";
  t.tls_ca = "/tmp/ca.pem";
  const auto tls = problems(t);
  ASSERT_EQ(tls.size(), 1u);
  EXPECT_EQ(tls[0].first, "");  // reported at the database entry
  EXPECT_NE(tls[0].second.find("tls"), std::string::npos);
  db::OpenOptions empty;
  EXPECT_EQ(problems(empty).size(), 1u);
  auto opened = db::find_driver("odbc")->open(empty);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().code, db::Errc::connection);
}

TEST(OdbcDriver, RedactHidesPasswords) {
  const db::Driver& d = *db::find_driver("odbc");
  EXPECT_EQ(d.redact("Driver={X};Uid=u;Pwd=secret;Server=s"), "Driver={X};Uid=u;Pwd=***;Server=s");
  EXPECT_EQ(d.redact("DSN=x;PASSWORD={a;b}"), "DSN=x;PASSWORD=***");
}

}  // namespace
}  // namespace wirepool::odbc
