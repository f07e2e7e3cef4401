// SCRAM-SHA-256 server side (protocol/pg/scram.hpp).
//
// Cases:
// - base64 against RFC 4648 vectors, strict decoding (padding, alphabet);
// - hmac_sha256 against RFC 4231's seven HMAC-SHA-256 cases (keys shorter
//   than, and longer than, SHA-256's 64-byte block; case 5 truncated);
// - the RFC 7677 exchange (user "user", password "pencil"): server-first and
//   server-final byte for byte;
// - a wrong proof, a tampered c=, a wrong nonce, a proof of the wrong size, a
//   missing proof, attributes after the proof: failure, never "v=";
// - one attempt per exchange: client-final before client-first or twice fails;
// - channel binding: PLUS with the right tls-server-end-point data succeeds,
//   with other data fails; "y" when the server offered PLUS is a downgrade;
//   "y" without binding, and "n" with binding available, are accepted; PLUS
//   without binding data on the server, PLUS with "n", "p=" with the plain
//   mechanism and unknown binding types fail;
// - client-first rules: authzid refused, m= extension refused, n= and r=
//   required, empty or non-printable nonce refused, unknown mechanism refused;
// - verifiers: PostgreSQL's text form parsed and formatted back, malformed
//   forms refused; fake_verifier deterministic per user and secret and never
//   matching; verify_password.

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <string>
#include <vector>

#include "protocol/pg/scram.hpp"

namespace wirepool::pg::scram {
namespace {

constexpr std::string_view kClientNonce = "rOprNGfwEbeRWgbNEkqO";
constexpr std::string_view kServerNonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
constexpr std::string_view kSalt = "W22ZaJ0SNY7soEsUEjb6gQ==";

Verifier rfc_verifier() {
  return make_verifier("pencil", *base64_decode(kSalt), 4096);
}

std::string bytes(const std::array<uint8_t, 32>& a) {
  return {a.begin(), a.end()};
}

std::array<uint8_t, 32> hmac(std::string_view key, std::string_view data) {
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), int(key.size()), reinterpret_cast<const uint8_t*>(data.data()),
       data.size(), out.data(), &len);
  return out;
}

/// The client side of the proof, computed independently of the server code.
std::string client_proof(std::string_view password, std::string_view salt, int iterations,
                         std::string_view auth_message) {
  std::array<uint8_t, 32> salted{};
  PKCS5_PBKDF2_HMAC(password.data(), int(password.size()),
                    reinterpret_cast<const uint8_t*>(salt.data()), int(salt.size()), iterations,
                    EVP_sha256(), 32, salted.data());
  const auto client_key = hmac(bytes(salted), "Client Key");
  std::array<uint8_t, 32> stored{};
  SHA256(client_key.data(), client_key.size(), stored.data());
  const auto signature = hmac(bytes(stored), auth_message);
  std::array<uint8_t, 32> proof{};
  for (size_t i = 0; i < 32; ++i)
    proof[i] = client_key[i] ^ signature[i];
  return base64_encode(proof);
}

/// Runs a full exchange as a client with `password` would.
struct Client {
  std::string gs2 = "n,,";
  std::string cb_data;
  std::string nonce = "clientnonce123";

  ServerExchange::Answer run(ServerExchange& server, std::string_view mechanism,
                             std::string_view password, const Verifier& v) {
    const std::string bare = "n=,r=" + nonce;
    auto first = server.client_first(mechanism, gs2 + bare);
    if (first.outcome != ServerExchange::Outcome::next) return first;
    const std::string& server_first = first.message;
    const std::string combined = server_first.substr(2, server_first.find(',') - 2);
    const std::string without_proof = "c=" + base64_encode(gs2 + cb_data) + ",r=" + combined;
    const std::string auth = bare + "," + server_first + "," + without_proof;
    return server.client_final(without_proof +
                               ",p=" + client_proof(password, v.salt, v.iterations, auth));
  }
};

// ---------------------------------------------------------------------------
// base64

TEST(Base64, Rfc4648Vectors) {
  const std::pair<std::string_view, std::string_view> vectors[] = {{"", ""},
                                                                   {"f", "Zg=="},
                                                                   {"fo", "Zm8="},
                                                                   {"foo", "Zm9v"},
                                                                   {"foob", "Zm9vYg=="},
                                                                   {"fooba", "Zm9vYmE="},
                                                                   {"foobar", "Zm9vYmFy"}};
  for (const auto& [raw, enc] : vectors) {
    EXPECT_EQ(base64_encode(raw), enc);
    EXPECT_EQ(base64_decode(enc), std::string(raw));
  }
}

TEST(Base64, DecodingIsStrict) {
  for (const char* bad :
       {"Zg=", "Z===", "Zm9v!", "Zg==Zg==", "=Zg=", "Zm 9v", "Zg=a", "====", "Zh==", "Zm9="}) {
    EXPECT_EQ(base64_decode(bad), std::nullopt) << bad;
  }
}

// ---------------------------------------------------------------------------
// HMAC-SHA-256, RFC 4231 section 4

std::string hex(std::span<const uint8_t> b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t c : b) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(HmacSha256, Rfc4231Vectors) {
  std::string key4;
  for (char c = 1; c <= 25; ++c)
    key4.push_back(c);
  const std::string big_key(131, '\xaa');
  const struct {
    std::string key, data, mac;
  } cases[] = {
      {std::string(20, '\x0b'), "Hi There",
       "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
      {"Jefe", "what do ya want for nothing?",
       "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
      {std::string(20, '\xaa'), std::string(50, '\xdd'),
       "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
      {key4, std::string(50, '\xcd'),
       "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
      {std::string(20, '\x0c'), "Test With Truncation", "a3b6167473100ee06e0c796c2955552b"},
      {big_key, "Test Using Larger Than Block-Size Key - Hash Key First",
       "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
      {big_key,
       "This is a test using a larger than block-size key and a larger than block-size data. "
       "The key needs to be hashed before being used by the HMAC algorithm.",
       "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    const auto mac = hmac_sha256(as_bytes(cases[i].key), cases[i].data);
    // Case 5 publishes only the first 128 bits.
    EXPECT_EQ(hex(mac).substr(0, cases[i].mac.size()), cases[i].mac) << "RFC 4231 case " << i + 1;
  }
}

TEST(HmacSha256, RepeatedCallsWithOtherKeysDoNotCarryState) {
  const std::string a(32, 'a'), b(100, 'b');
  const auto first = hmac_sha256(as_bytes(a), "message");
  EXPECT_NE(hmac_sha256(as_bytes(b), "message"), first);
  EXPECT_EQ(hmac_sha256(as_bytes(a), "message"), first);
  EXPECT_EQ(hex(hmac_sha256(as_bytes(a), "message")), hex(hmac(a, "message")));
}

TEST(HmacSha256, EmptyKeyIsAKeyOfItsOwn) {
  EXPECT_EQ(hex(hmac_sha256({}, "")),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
  EXPECT_EQ(hex(hmac_sha256({}, "message")), hex(hmac("", "message")));
}

// ---------------------------------------------------------------------------
// RFC 7677

TEST(Scram, Rfc7677ExchangeByteForByte) {
  ServerExchange server(rfc_verifier(), "", std::string(kServerNonce));
  const auto first = server.client_first(kMechanism, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
  ASSERT_EQ(first.outcome, ServerExchange::Outcome::next) << first.message;
  EXPECT_EQ(first.message,
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,"
            "i=4096");
  const auto final = server.client_final(
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
      "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
  ASSERT_EQ(final.outcome, ServerExchange::Outcome::success) << final.message;
  EXPECT_EQ(final.message, "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
}

TEST(Scram, IndependentClientComputesTheRfcProof) {
  const std::string auth =
      "n=user,r=rOprNGfwEbeRWgbNEkqO,"
      "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,"
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
  EXPECT_EQ(client_proof("pencil", *base64_decode(kSalt), 4096, auth),
            "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
}

class RfcFinal : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(server_.client_first(kMechanism, "n,,n=user,r=rOprNGfwEbeRWgbNEkqO").outcome,
              ServerExchange::Outcome::next);
  }
  void expect_failure(std::string_view client_final) {
    const auto a = server_.client_final(client_final);
    EXPECT_EQ(a.outcome, ServerExchange::Outcome::failure);
    EXPECT_NE(a.message.substr(0, 2), "v=");
    EXPECT_FALSE(a.message.empty());
  }
  ServerExchange server_{rfc_verifier(), "", std::string(kServerNonce)};
};

TEST_F(RfcFinal, WrongProofFails) {
  expect_failure(
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
      "p=eHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
}

TEST_F(RfcFinal, TamperedChannelBindingFails) {
  // "eSws" is base64("y,,"): not the gs2 header the client sent.
  expect_failure(
      "c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
      "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
}

TEST_F(RfcFinal, WrongNonceFails) {
  expect_failure(
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k1,"
      "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
}

TEST_F(RfcFinal, ClientNonceAloneFails) {
  expect_failure("c=biws,r=rOprNGfwEbeRWgbNEkqO,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
}

TEST_F(RfcFinal, ProofOfWrongSizeFails) {
  expect_failure("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA");
}

TEST_F(RfcFinal, MissingProofFails) {
  expect_failure("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
}

TEST_F(RfcFinal, AttributeAfterProofFails) {
  expect_failure(
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
      "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=,x=1");
}

TEST_F(RfcFinal, MalformedFinalFails) {
  expect_failure("");
  expect_failure("garbage");
  expect_failure("c=!!!!,r=x,p=y");
}

TEST_F(RfcFinal, OnlyOneAttemptPerExchange) {
  const std::string good =
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
      "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
  expect_failure(good.substr(0, good.size() - 2) + "R=");  // non-canonical base64
  expect_failure(good);  // the right proof, but the exchange is over
}

TEST(Scram, ClientFinalBeforeClientFirstFails) {
  ServerExchange server(rfc_verifier());
  EXPECT_EQ(server.client_final("c=biws,r=x,p=AAAA").outcome, ServerExchange::Outcome::failure);
}

TEST(Scram, RandomServerNonceIsBase64Of18Bytes) {
  ServerExchange server(rfc_verifier());
  const auto a = server.client_first(kMechanism, "n,,n=,r=abc");
  ASSERT_EQ(a.outcome, ServerExchange::Outcome::next);
  const std::string nonce = a.message.substr(2, a.message.find(',') - 2);
  ASSERT_EQ(nonce.substr(0, 3), "abc");
  const auto raw = base64_decode(nonce.substr(3));
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->size(), 18u);
}

TEST(Scram, FullExchangeWithTheRightPasswordSucceeds) {
  const Verifier v = make_verifier("correct horse", "0123456789abcdef", 1000);
  ServerExchange server(v);
  EXPECT_EQ(Client{}.run(server, kMechanism, "correct horse", v).outcome,
            ServerExchange::Outcome::success);
  ServerExchange again(v);
  EXPECT_EQ(Client{}.run(again, kMechanism, "wrong", v).outcome, ServerExchange::Outcome::failure);
}

// ---------------------------------------------------------------------------
// Channel binding

const Verifier& quick_verifier() {
  static const Verifier v = make_verifier("pw", "saltsaltsaltsalt", 16);
  return v;
}

TEST(ScramPlus, RightBindingDataSucceeds) {
  ServerExchange server(quick_verifier(), "certificate-hash");
  Client c;
  c.gs2 = "p=tls-server-end-point,,";
  c.cb_data = "certificate-hash";
  const auto a = c.run(server, kMechanismPlus, "pw", quick_verifier());
  EXPECT_EQ(a.outcome, ServerExchange::Outcome::success) << a.message;
}

TEST(ScramPlus, OtherBindingDataFails) {
  ServerExchange server(quick_verifier(), "certificate-hash");
  Client c;
  c.gs2 = "p=tls-server-end-point,,";
  c.cb_data = "another-certificate";
  EXPECT_EQ(c.run(server, kMechanismPlus, "pw", quick_verifier()).outcome,
            ServerExchange::Outcome::failure);
}

TEST(ScramPlus, ClientSayingYWhenPlusWasOfferedIsADowngrade) {
  ServerExchange server(quick_verifier(), "certificate-hash");
  const auto a = server.client_first(kMechanism, "y,,n=,r=abc");
  EXPECT_EQ(a.outcome, ServerExchange::Outcome::failure);
  EXPECT_NE(a.message.find("downgrade"), std::string::npos);
}

TEST(ScramPlus, ClientSayingYWithoutServerBindingIsAccepted) {
  ServerExchange server(quick_verifier());
  Client c;
  c.gs2 = "y,,";
  EXPECT_EQ(c.run(server, kMechanism, "pw", quick_verifier()).outcome,
            ServerExchange::Outcome::success);
}

TEST(ScramPlus, ClientWithoutBindingSupportMayUsePlainMechanism) {
  ServerExchange server(quick_verifier(), "certificate-hash");
  EXPECT_EQ(Client{}.run(server, kMechanism, "pw", quick_verifier()).outcome,
            ServerExchange::Outcome::success);
}

TEST(ScramPlus, RefusedCombinations) {
  auto first = [](std::string cb, std::string_view mech, std::string_view msg) {
    ServerExchange server(quick_verifier(), std::move(cb));
    return server.client_first(mech, msg).outcome;
  };
  using O = ServerExchange::Outcome;
  // PLUS chosen but the connection has no binding data (not TLS).
  EXPECT_EQ(first("", kMechanismPlus, "p=tls-server-end-point,,n=,r=a"), O::failure);
  // PLUS chosen but the message carries no binding.
  EXPECT_EQ(first("cb", kMechanismPlus, "n,,n=,r=a"), O::failure);
  EXPECT_EQ(first("cb", kMechanismPlus, "y,,n=,r=a"), O::failure);
  // Binding requested with the plain mechanism.
  EXPECT_EQ(first("cb", kMechanism, "p=tls-server-end-point,,n=,r=a"), O::failure);
  // Unknown binding type.
  EXPECT_EQ(first("cb", kMechanismPlus, "p=tls-unique,,n=,r=a"), O::failure);
  EXPECT_EQ(first("cb", kMechanismPlus, "p=tls-server-end-point,n=,r=a"), O::failure);
  // Sanity: the valid form is accepted.
  EXPECT_EQ(first("cb", kMechanismPlus, "p=tls-server-end-point,,n=,r=a"), O::next);
}

// ---------------------------------------------------------------------------
// client-first rules

TEST(ScramClientFirst, MalformedOrUnsupportedMessagesFail) {
  for (const char* msg : {
           "",                  // empty
           "x,,n=u,r=a",        // bad flag
           "n,a=bob,n=u,r=a",   // authzid
           "n,,m=ext,n=u,r=a",  // mandatory extension
           "n,,r=abc",          // n= missing
           "n,,n=u",            // r= missing
           "n,,n=u,r=",         // empty nonce
           "n,,n=u,r=a b",      // non-printable nonce
           "n,,n=u,x=a",        // r= is not second
           "n,n=u,r=a",         // gs2 header too short
           "n,,n=u,r=a,",       // trailing comma
           "n,,n=u,r=a,bad",    // extension without '='
       }) {
    ServerExchange server(quick_verifier());
    EXPECT_EQ(server.client_first(kMechanism, msg).outcome, ServerExchange::Outcome::failure)
        << msg;
  }
}

TEST(ScramClientFirst, UnknownMechanismFails) {
  ServerExchange server(quick_verifier());
  EXPECT_EQ(server.client_first("SCRAM-SHA-1", "n,,n=u,r=a").outcome,
            ServerExchange::Outcome::failure);
}

TEST(ScramClientFirst, OptionalExtensionsAfterTheNonceAreIgnored) {
  ServerExchange server(quick_verifier(), "", "srv");
  const auto a = server.client_first(kMechanism, "n,,n=u,r=abc,x=1");
  ASSERT_EQ(a.outcome, ServerExchange::Outcome::next) << a.message;
  EXPECT_EQ(a.message.substr(0, 11), "r=abcsrv,s=");
}

TEST(ScramClientFirst, SecondClientFirstFails) {
  ServerExchange server(quick_verifier());
  ASSERT_EQ(server.client_first(kMechanism, "n,,n=u,r=a").outcome, ServerExchange::Outcome::next);
  EXPECT_EQ(server.client_first(kMechanism, "n,,n=u,r=a").outcome,
            ServerExchange::Outcome::failure);
}

// ---------------------------------------------------------------------------
// Verifiers

TEST(Verifier, FormatAndParseRoundTrip) {
  const Verifier v = rfc_verifier();
  const std::string text = format_verifier(v);
  EXPECT_EQ(text.substr(0, 43), "SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==");
  const auto back = parse_verifier(text);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->iterations, 4096);
  EXPECT_EQ(back->salt, v.salt);
  EXPECT_EQ(back->stored_key, v.stored_key);
  EXPECT_EQ(back->server_key, v.server_key);
  EXPECT_EQ(format_verifier(*back), text);
}

TEST(Verifier, MalformedFormsAreRefused) {
  const std::string good = format_verifier(rfc_verifier());
  const std::string keys = good.substr(good.find('$', 14));
  for (const std::string& bad : {
           std::string(""),
           std::string("md5abcdef"),
           "SCRAM-SHA-1$4096:W22ZaJ0SNY7soEsUEjb6gQ==" + keys,
           "SCRAM-SHA-256$0:W22ZaJ0SNY7soEsUEjb6gQ==" + keys,
           "SCRAM-SHA-256$-1:W22ZaJ0SNY7soEsUEjb6gQ==" + keys,
           "SCRAM-SHA-256$x:W22ZaJ0SNY7soEsUEjb6gQ==" + keys,
           "SCRAM-SHA-256$4096:" + keys,
           "SCRAM-SHA-256$4096:!!!!" + keys,
           std::string("SCRAM-SHA-256$4096:W22ZaJ0SNY7soEsUEjb6gQ==$AAAA:AAAA"),
           "SCRAM-SHA-256$4096W22ZaJ0SNY7soEsUEjb6gQ==" + keys,
           good.substr(0, good.rfind(':')),
       }) {
    EXPECT_EQ(parse_verifier(bad), std::nullopt) << bad;
  }
}

TEST(Verifier, VerifyPassword) {
  const Verifier v = rfc_verifier();
  EXPECT_TRUE(verify_password(v, "pencil"));
  EXPECT_FALSE(verify_password(v, "Pencil"));
  EXPECT_FALSE(verify_password(v, ""));
  EXPECT_TRUE(verify_password(make_verifier("pässwörd"), "pässwörd"));
}

TEST(Verifier, RandomSaltsDiffer) {
  const Verifier a = make_verifier("x"), b = make_verifier("x");
  EXPECT_EQ(a.salt.size(), 16u);
  EXPECT_NE(a.salt, b.salt);
  EXPECT_NE(a.stored_key, b.stored_key);
}

TEST(FakeVerifier, DeterministicPerUserAndSecret) {
  const std::vector<uint8_t> secret{1, 2, 3, 4};
  const std::vector<uint8_t> other_secret{9, 9, 9};
  const Verifier a = fake_verifier("mallory", secret);
  const Verifier b = fake_verifier("mallory", secret);
  EXPECT_EQ(a.salt, b.salt);
  EXPECT_EQ(a.stored_key, b.stored_key);
  EXPECT_EQ(a.salt.size(), 16u);
  EXPECT_EQ(a.iterations, kDefaultIterations);
  EXPECT_NE(fake_verifier("trent", secret).salt, a.salt);
  EXPECT_NE(fake_verifier("mallory", other_secret).salt, a.salt);
  EXPECT_NE(a.stored_key, a.server_key);
}

TEST(FakeVerifier, ExchangeLooksNormalAndFailsAtTheProof) {
  const std::vector<uint8_t> secret{1, 2, 3, 4};
  Verifier v = fake_verifier("mallory", secret);
  v.iterations = 16;  // keep the test quick; the salt and keys are what matter
  ServerExchange server(v);
  const auto first = server.client_first(kMechanism, "n,,n=,r=abc");
  ASSERT_EQ(first.outcome, ServerExchange::Outcome::next);
  EXPECT_NE(first.message.find(",s=" + base64_encode(v.salt) + ",i=16"), std::string::npos);
  for (const char* guess : {"", "password", "mallory"}) {
    ServerExchange s(v);
    EXPECT_EQ(Client{}.run(s, kMechanism, guess, v).outcome, ServerExchange::Outcome::failure);
  }
}

}  // namespace
}  // namespace wirepool::pg::scram
