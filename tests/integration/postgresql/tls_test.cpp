// TLS to the backend (the fixture's server runs with --tls: TLS 1.3 only):
//  - the right CA (verify-full: 127.0.0.1 is in the certificate) connects over
//    TLS 1.3, with and without the right public-key pin (colons and upper case
//    accepted)
//  - a wrong pin is refused with Errc::connection 08006, naming the server's
//    key hash and tls.pin_sha256
//  - a wrong CA is refused by libpq's verification (certificate verify failed)
//  - without a tls block the connection is plaintext

#include "tests/integration/postgresql/pg_fixture.hpp"

namespace wirepool::pg_it {
namespace {

class Tls : public PgTest {
 protected:
  void SetUp() override {
    PgTest::SetUp();
    if (IsSkipped()) return;
    if (info().str("tls.ca").empty()) GTEST_SKIP() << "the fixture server runs without --tls";
  }
  static db::OpenOptions tls_options(std::string ca, std::vector<std::string> pins = {}) {
    db::OpenOptions o = options();
    o.tls_ca = std::move(ca);
    o.tls_pins = std::move(pins);
    return o;
  }
  static std::string with_colons_upper(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i < hex.size(); ++i) {
      if (i > 0 && i % 2 == 0) out.push_back(':');
      out.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(hex[i]))));
    }
    return out;
  }
};

TEST_F(Tls, RightCaAndPinConnectOverTls13) {
  for (const auto& pins :
       {std::vector<std::string>{},
        std::vector<std::string>{std::string(64, '0'), info().str("tls.pin_sha256")},
        std::vector<std::string>{with_colons_upper(info().str("tls.pin_sha256"))}}) {
    auto c = driver().open(tls_options(info().str("tls.ca"), pins));
    ASSERT_TRUE(c.ok()) << c.error().message;
    auto t = fetch(c.value(), "SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()");
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_TRUE(t->rows[0][0].b);
    EXPECT_EQ(t->rows[0][1].str, "TLSv1.3");
  }
}

TEST_F(Tls, WrongPinIsRefusedNamingTheServersKey) {
  auto c = driver().open(tls_options(info().str("tls.ca"), {std::string(64, 'a')}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_EQ(c.error().sqlstate, "08001");
  EXPECT_EQ(c.error().message, "server public key sha256 " + info().str("tls.pin_sha256") +
                                   " matches none of tls.pin_sha256");
}

TEST_F(Tls, WrongCaIsRefused) {
  auto c = driver().open(tls_options(info().str("tls.other_ca")));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, Errc::connection);
  EXPECT_NE(c.error().message.find("certificate verify failed"), std::string::npos)
      << c.error().message;
}

TEST_F(Tls, NoTlsBlockMeansPlaintext) {
  Connection c = open();
  auto t = fetch(c, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()");
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->rows[0][0].b);
}

}  // namespace
}  // namespace wirepool::pg_it
