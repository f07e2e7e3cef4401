// Secrets never reach a log line; JSON log lines are valid JSON strings.
//
// Cases: libpq key=value conninfo with password (plain and quoted), ODBC
// strings with PWD and {braced} values, URIs with user:password@, keys that
// merely contain "password"; strings without secrets come back unchanged;
// json_escape escapes quotes, backslashes and control characters.

#include "server/log.hpp"

#include <gtest/gtest.h>

namespace wirepool::server {
namespace {

TEST(RedactSecrets, LibpqConninfo) {
  EXPECT_EQ(redact_secrets("host=db port=5432 user=app password=s3cret dbname=x"),
            "host=db port=5432 user=app password=*** dbname=x");
  EXPECT_EQ(redact_secrets("password='a b\\' c' host=db"), "password=*** host=db");
}

TEST(RedactSecrets, OdbcString) {
  EXPECT_EQ(redact_secrets("DRIVER={MariaDB Unicode};SERVER=h;UID=u;PWD=hunter2;"),
            "DRIVER={MariaDB Unicode};SERVER=h;UID=u;PWD=***;");
  EXPECT_EQ(redact_secrets("Driver=x;Pwd={semi;colon};Database=d"), "Driver=x;Pwd=***;Database=d");
}

TEST(RedactSecrets, UriPassword) {
  EXPECT_EQ(redact_secrets("postgresql://app:s3cret@db:5432/x?sslmode=verify-full"),
            "postgresql://app:***@db:5432/x?sslmode=verify-full");
}

TEST(RedactSecrets, KeysContainingPassword) {
  EXPECT_EQ(redact_secrets("sslpassword=k user=u"), "sslpassword=*** user=u");
  EXPECT_EQ(redact_secrets("db_password=k"), "db_password=***");
}

TEST(RedactSecrets, NothingSecretIsUnchanged) {
  for (const char* s : {"demo.db", "/var/lib/app.db", "host=db user=u", "file:x.db?mode=ro"}) {
    EXPECT_EQ(redact_secrets(s), s);
  }
}

TEST(JsonEscape, EscapesWhatJsonRequires) {
  std::string out;
  json_escape("a\"b\\c\nd\te\x01", out);
  EXPECT_EQ(out, "a\\\"b\\\\c\\nd\\te\\u0001");
}

}  // namespace
}  // namespace wirepool::server
