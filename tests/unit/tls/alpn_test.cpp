// ALPN on a server context:
//  - a client offering the listener's protocol ("postgresql", or "tds/8.0" on a TDS context)
//    gets it selected, also when it offers others first;
//  - a client offering only other protocols ("http/1.1", or "postgresql" to a TDS context)
//    is refused with no_application_protocol;
//  - a client offering none connects, and alpn_negotiated() reports none;
//  - a ClientContext created with an ALPN protocol offers it.

#include <gtest/gtest.h>

#include "tests/unit/tls/tls_test_util.hpp"

namespace wirepool::tls {
namespace {

using test::Handshake;
using test::TempDir;

/// ALPN wire format of a protocol list.
std::string wire(std::initializer_list<std::string_view> protocols) {
  std::string out;
  for (std::string_view p : protocols) {
    out += static_cast<char>(p.size());
    out += p;
  }
  return out;
}

class Alpn : public ::testing::Test {
 protected:
  void SetUp() override {
    pair_ = test::generate_pair(dir_, "server");
    std::string error;
    pg_ = ServerContext::create(test::tls_config(pair_), kAlpnPostgresql, &error);
    ASSERT_TRUE(pg_) << error;
    tds_ = ServerContext::create(test::tls_config(pair_), kAlpnTds, &error);
    ASSERT_TRUE(tds_) << error;
    client_ = ClientContext::create(pair_.cert, {}, &error);
    ASSERT_TRUE(client_) << error;
  }

  /// Handshakes with `server`, the client offering `offer` (empty = no ALPN extension).
  void connect(const ServerContext& server, const std::string& offer, Handshake* h) {
    SSL* ssl = test::client_ssl(*client_, "localhost");
    if (!offer.empty()) {
      ASSERT_EQ(SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char*>(offer.data()),
                                    static_cast<unsigned int>(offer.size())),
                0);
    }
    test::drive(server, ssl, h);
  }

  TempDir dir_;
  test::Pair pair_;
  ServerContextPtr pg_;
  ServerContextPtr tds_;
  ClientContextPtr client_;
};

TEST_F(Alpn, ClientOfferingPostgresqlGetsItSelected) {
  Handshake h;
  connect(*pg_, wire({"postgresql"}), &h);
  ASSERT_TRUE(h.ok()) << h.server_error << h.client_error;
  EXPECT_TRUE(alpn_negotiated(h.server));
  EXPECT_EQ(selected_alpn(h.server), "postgresql");
  EXPECT_EQ(selected_alpn(h.client), "postgresql");
}

TEST_F(Alpn, TheListenersProtocolIsSelectedAmongOthers) {
  Handshake h;
  connect(*tds_, wire({"h2", "http/1.1", "tds/8.0"}), &h);
  ASSERT_TRUE(h.ok()) << h.server_error << h.client_error;
  EXPECT_EQ(selected_alpn(h.server), "tds/8.0");
}

TEST_F(Alpn, ClientOfferingOnlyOtherProtocolsIsRefused) {
  Handshake http;
  connect(*pg_, wire({"http/1.1"}), &http);
  EXPECT_FALSE(http.server_ok);
  EXPECT_FALSE(http.client_ok);
  EXPECT_NE(http.client_error.find("no application protocol"), std::string::npos)
      << http.client_error;

  Handshake pg_to_tds;
  connect(*tds_, wire({"postgresql"}), &pg_to_tds);
  EXPECT_FALSE(pg_to_tds.server_ok);

  // A prefix of the protocol is not the protocol.
  Handshake prefix;
  connect(*pg_, wire({"postgres"}), &prefix);
  EXPECT_FALSE(prefix.server_ok);
}

TEST_F(Alpn, ClientOfferingNoneConnectsAndReportsNone) {
  Handshake h;
  connect(*pg_, "", &h);
  ASSERT_TRUE(h.ok()) << h.server_error << h.client_error;
  EXPECT_FALSE(alpn_negotiated(h.server));
  EXPECT_EQ(selected_alpn(h.server), "");
}

TEST_F(Alpn, ClientContextOffersItsProtocol) {
  std::string error;
  ClientContextPtr tds_client = ClientContext::create(pair_.cert, {}, &error, kAlpnTds);
  ASSERT_TRUE(tds_client) << error;
  Handshake h;
  test::drive(*tds_, test::client_ssl(*tds_client, "127.0.0.1"), &h);
  ASSERT_TRUE(h.ok()) << h.server_error << h.client_error;
  EXPECT_EQ(selected_alpn(h.server), "tds/8.0");
}

}  // namespace
}  // namespace wirepool::tls
