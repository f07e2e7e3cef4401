// decide_login: the one admission order both front ends follow.
//
// Cases: draining refuses at the request; TLS and room are checked before the
// credentials (an admin may use the reserve); after the exchange an unknown
// user, a refused certificate, a non-admin asking for the admin console, a
// database the user may not use and a wrong password are all login_failed,
// and they come before the database's existence (a refused certificate with
// an unknown database is login_failed, as PostgreSQL authenticates before it
// opens the database); the ticket's promotion comes before unknown_database;
// the admin console needs no configured database. address_allowed and
// certificate_refusal: the allow-list by CIDR, pins and the client CA.

#include <gtest/gtest.h>

#include <boost/asio/ip/address.hpp>

#include "session/login_policy.hpp"

namespace wirepool::server {
namespace {

namespace ip = boost::asio::ip;

/// A connection accepted without a waiting room (Limits::max_waiting 0).
Admission::TicketPtr admit(Admission& a, const ip::address& address, Admission::Refusal* why,
                           Admission::Clock::time_point now = Admission::Clock::now()) {
  auto arrival = a.arrive(address, 1, now);
  if (why) *why = arrival.why;
  return std::move(arrival.ticket);
}

Admission::Limits limits(int64_t clients, int64_t reserved) {
  Admission::Limits l;
  l.max_clients = clients;
  l.admin_reserved = reserved;
  return l;
}

UserRecord user(std::string name, bool admin = false) {
  UserRecord u;
  u.name = std::move(name);
  u.admin = admin;
  return u;
}

LoginFacts checked(const UserRecord* u, std::string_view db, bool known, bool password_ok) {
  LoginFacts f;
  f.tls = true;
  f.user = u;
  f.database = db;
  f.database_known = known;
  f.password_ok = password_ok;
  return f;
}

TEST(LoginPolicy, DrainingRefusesTheRequest) {
  Admission a(limits(10, 0));
  LoginFacts f;
  f.draining = true;
  EXPECT_EQ(decide_login(LoginStage::requested, f, a).refusal, LoginRefusal::shutting_down);
  f.draining = false;
  EXPECT_EQ(decide_login(LoginStage::requested, f, a).refusal, LoginRefusal::none);
}

TEST(LoginPolicy, TlsAndRoomComeBeforeTheCredentials) {
  Admission a(limits(0, 1));
  const UserRecord plain = user("alice");
  const UserRecord admin = user("root", true);
  LoginFacts f;
  f.user = &plain;
  f.tls_required = true;
  EXPECT_EQ(decide_login(LoginStage::credentials_due, f, a).refusal, LoginRefusal::tls_required);
  f.tls = true;
  EXPECT_EQ(decide_login(LoginStage::credentials_due, f, a).refusal,
            LoginRefusal::too_many_clients);
  f.user = &admin;  // the reserve
  EXPECT_EQ(decide_login(LoginStage::credentials_due, f, a).refusal, LoginRefusal::none);
}

TEST(LoginPolicy, EveryCredentialRefusalIsLoginFailedWithItsReason) {
  Admission a(limits(10, 0));
  UserRecord pinned = user("carol");
  pinned.client_cert_pins = {std::string(64, 'a')};
  UserRecord limited = user("bob");
  limited.databases = {"app"};
  const UserRecord alice = user("alice");

  auto d = decide_login(LoginStage::credentials_checked, checked(nullptr, "app", true, true), a);
  EXPECT_EQ(d.refusal, LoginRefusal::login_failed);
  EXPECT_EQ(d.reason, "no such user");

  auto f = checked(&pinned, "app", true, true);
  f.certificate_refusal = "no client certificate";
  d = decide_login(LoginStage::credentials_checked, f, a);
  EXPECT_EQ(d.refusal, LoginRefusal::login_failed);
  EXPECT_EQ(d.reason, "certificate refused: no client certificate");

  f = checked(&alice, "wirepool", false, true);
  f.admin_console = true;
  d = decide_login(LoginStage::credentials_checked, f, a);
  EXPECT_EQ(d.refusal, LoginRefusal::login_failed);
  EXPECT_EQ(d.reason, "not an admin user, asked for the admin console");

  d = decide_login(LoginStage::credentials_checked, checked(&limited, "other", true, true), a);
  EXPECT_EQ(d.refusal, LoginRefusal::login_failed);
  EXPECT_EQ(d.reason, "may not use database \"other\"");

  f = checked(&alice, "app", true, false);
  f.password_failure = "SCRAM proof mismatch";
  d = decide_login(LoginStage::credentials_checked, f, a);
  EXPECT_EQ(d.refusal, LoginRefusal::login_failed);
  EXPECT_EQ(d.reason, "SCRAM proof mismatch");
}

TEST(LoginPolicy, RefusedCertificateWithUnknownDatabaseIsLoginFailed) {
  Admission a(limits(10, 0));
  UserRecord pinned = user("carol");
  pinned.client_cert_pins = {std::string(64, 'a')};
  for (bool password_ok : {true, false}) {
    auto f = checked(&pinned, "nosuch", false, password_ok);
    f.certificate_refusal = "no client certificate";
    EXPECT_EQ(decide_login(LoginStage::credentials_checked, f, a).refusal,
              LoginRefusal::login_failed);
  }
  // A wrong password with an unknown database: the credentials first too.
  const UserRecord alice = user("alice");
  EXPECT_EQ(
      decide_login(LoginStage::credentials_checked, checked(&alice, "nosuch", false, false), a)
          .refusal,
      LoginRefusal::login_failed);
}

TEST(LoginPolicy, PromotionThenTheDatabase) {
  Admission a(limits(1, 0));
  Admission::Refusal why{};
  auto first = admit(a, ip::make_address("10.0.0.1"), &why);
  auto second = admit(a, ip::make_address("10.0.0.2"), &why);
  ASSERT_TRUE(first && second);
  const UserRecord alice = user("alice");
  auto d = decide_login(LoginStage::credentials_checked, checked(&alice, "nosuch", false, true), a,
                        first.get());
  EXPECT_EQ(d.refusal, LoginRefusal::unknown_database);
  EXPECT_EQ(d.reason, "asked for unknown database \"nosuch\"");
  EXPECT_TRUE(first->logged_in());
  // max_clients (1) is taken: the promotion refuses before the database is looked at.
  d = decide_login(LoginStage::credentials_checked, checked(&alice, "nosuch", false, true), a,
                   second.get());
  EXPECT_EQ(d.refusal, LoginRefusal::too_many_clients);
  EXPECT_FALSE(second->logged_in());
}

TEST(LoginPolicy, AdminConsoleNeedsNoConfiguredDatabase) {
  Admission a(limits(10, 0));
  const UserRecord root = user("root", true);
  auto f = checked(&root, "wirepool", false, true);
  f.admin_console = true;
  EXPECT_EQ(decide_login(LoginStage::credentials_checked, f, a).refusal, LoginRefusal::none);
}

TEST(LoginPolicy, AllowListByCidr) {
  config::Listener l;
  EXPECT_TRUE(address_allowed(l, ip::make_address("192.0.2.1")));
  l.allow.push_back(*config::parse_cidr("10.0.0.0/8"));
  EXPECT_TRUE(address_allowed(l, ip::make_address("10.1.2.3")));
  EXPECT_TRUE(address_allowed(l, ip::make_address("::ffff:10.1.2.3")));
  EXPECT_FALSE(address_allowed(l, ip::make_address("192.0.2.1")));
  EXPECT_FALSE(address_allowed(l, ip::make_address("2001:db8::1")));
}

TEST(LoginPolicy, CertificateByPinOrByClientCa) {
  config::Tls tls;
  UserRecord carol = user("carol");
  EXPECT_EQ(certificate_refusal(carol, tls, nullptr), std::nullopt);  // needs none
  const std::string pin(64, 'a');
  carol.client_cert_pins = {pin};
  EXPECT_EQ(certificate_refusal(carol, tls, nullptr), "no TLS");
  tls::PeerCertificate peer;
  EXPECT_EQ(certificate_refusal(carol, tls, &peer), "no client certificate");
  peer.present = true;
  peer.public_key_sha256 = std::string(64, 'b');
  EXPECT_EQ(certificate_refusal(carol, tls, &peer),
            "public key sha256 " + peer.public_key_sha256 + " is not pinned for the user");
  peer.public_key_sha256 = pin;
  EXPECT_EQ(certificate_refusal(carol, tls, &peer), std::nullopt);
  // Signed by the client CA with the user's name as its common name.
  peer.public_key_sha256 = std::string(64, 'b');
  peer.chain_verified = true;
  peer.common_name = "carol";
  tls.client_ca = "ca.pem";
  EXPECT_EQ(certificate_refusal(carol, tls, &peer), std::nullopt);
  peer.common_name = "mallory";
  EXPECT_NE(certificate_refusal(carol, tls, &peer), std::nullopt);
}

}  // namespace
}  // namespace wirepool::server
