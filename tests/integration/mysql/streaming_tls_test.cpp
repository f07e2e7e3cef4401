// Streaming and TLS against the live MariaDB:
//  - 200,000 rows of about 200 bytes (40 MB) read through one reader, text
//    and binary protocols: the process's RSS grows by less than 16 MB (rows are
//    fetched unbuffered, not stored) and every row arrives in order;
//  - TLS with the fixture's CA: connects with TLS 1.3 (Ssl_version), TIMESTAMP
//    values unchanged; a wrong CA is refused with the connector's certificate
//    error as Errc::connection; a pin is refused at open (the connector cannot
//    check one); a TLS connection the server kills answers Connection errors,
//    never SIGPIPE.

#include <fstream>

#include "tests/integration/mysql/mysql_fixture.hpp"

namespace wirepool::mysql_it {
namespace {

/// Resident set size of this process in KiB (/proc/self/status VmRSS).
int64_t rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

class Streaming : public MysqlTest {};

TEST_F(Streaming, TwoHundredThousandRowsWithFlatMemory) {
  Connection c = open();
  constexpr int64_t kRows = 200000;
  for (bool prepared : {false, true}) {
    SCOPED_TRACE(prepared ? "binary" : "text");
    const int64_t before = rss_kib();
    auto rows = prepared
                    ? c.query("SELECT seq, REPEAT('x', 200) FROM seq_1_to_200000 WHERE seq > ?",
                              std::vector<Param>{P(I(0))})
                    : c.query("SELECT seq, REPEAT('x', 200) FROM seq_1_to_200000");
    ASSERT_TRUE(rows.ok()) << rows.error().message;
    std::vector<db::ValueView> row(2);
    int64_t n = 0, peak = before;
    for (;;) {
      auto more = rows->next_borrowed(row);
      ASSERT_TRUE(more.ok()) << more.error().message;
      if (!more.value()) break;
      ++n;
      ASSERT_EQ(row[0].i64, n);
      ASSERT_EQ(row[1].str.size(), 200u);
      if (n % 20000 == 0) peak = std::max(peak, rss_kib());
    }
    ASSERT_TRUE(rows->close().ok());
    EXPECT_EQ(n, kRows);
    // 40 MB went through; a buffered result would have held all of it.
    EXPECT_LT(peak - before, 16 * 1024) << "RSS before " << before << " KiB, peak " << peak;
    std::cout << (prepared ? "binary" : "text") << ": RSS " << before << " KiB -> peak " << peak
              << " KiB over " << n << " rows\n";
  }
}

class Tls : public MysqlTest {
 protected:
  void SetUp() override {
    MysqlTest::SetUp();
    if (!IsSkipped() && info().str("tls.ca").empty()) GTEST_SKIP() << "the fixture has no TLS";
  }
  static db::OpenOptions tls_options(const std::string& ca) {
    db::OpenOptions o = options();
    // The server certificate names localhost and 127.0.0.1.
    o.tls_ca = ca;
    return o;
  }
};

TEST_F(Tls, RightCaConnectsWithTls13) {
  Connection c = open(tls_options(info().str("tls.ca")));
  ASSERT_TRUE(c.is_open());
  auto t = fetch(c, "SHOW SESSION STATUS LIKE 'Ssl_version'");
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->rows[0][1].str, "TLSv1.3");
  EXPECT_EQ(scalar(c, "SELECT ?", {P(I(42))}).i64, 42);
}

TEST_F(Tls, WrongCaIsRefusedWithAClearError) {
  auto c = driver().open(tls_options(info().str("tls.other_ca")));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_EQ(c.error().vendor_code, 2026) << c.error().message;  // CR_SSL_CONNECTION_ERROR
  EXPECT_NE(c.error().message.find("SSL"), std::string::npos) << c.error().message;
}

TEST_F(Tls, PinIsRefusedAtOpen) {
  db::OpenOptions o = tls_options(info().str("tls.ca"));
  o.tls_pins.push_back(info().str("tls.pin_sha256"));
  auto c = driver().open(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("pin_sha256"), std::string::npos) << c.error().message;
}

TEST_F(Tls, LostTlsConnectionIsAnErrorNotASignal) {
  // Writing to a TLS socket the server closed must not raise SIGPIPE (the
  // connector ignores it process-wide when the library is initialised).
  Connection victim = open(tls_options(info().str("tls.ca")));
  Connection killer = open();
  const Value id = scalar(victim, "SELECT CONNECTION_ID()");
  exec(killer, "KILL " + std::to_string(id.i64));
  for (int i = 0; i < 3; ++i) {
    auto r = fetch(victim, "SELECT REPEAT('x', 100000)");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, Errc::connection) << r.error().message;
  }
}

}  // namespace
}  // namespace wirepool::mysql_it
