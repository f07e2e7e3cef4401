// PRELOGIN and LOGIN7: tedious's captured PRELOGIN and LOGIN7 decoded field by
// field (the password de-obfuscated, FeatureExt parsed), both re-encoded and
// decoded again, the server's PRELOGIN answer, password obfuscation against
// the spec's rule, and malformed inputs: every truncation, offsets and lengths
// pointing outside, odd string lengths, missing terminators, VERSION not first.

#include <gtest/gtest.h>

#include "tds_test_util.hpp"

namespace wirepool::tds {
namespace {

using test::bytes_of;
using test::capture_message;

TEST(TdsPrelogin, DecodesTediousPrelogin) {
  const Message m = capture_message("00_prelogin.hex");
  ASSERT_EQ(m.type, static_cast<uint8_t>(PacketType::prelogin));
  auto d = decode_prelogin(bytes_of(m.payload));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  const Prelogin& p = d.message;
  ASSERT_TRUE(p.version);
  ASSERT_TRUE(p.encryption);
  EXPECT_EQ(*p.encryption, encrypt::kNotSup);  // encrypt: false
  ASSERT_TRUE(p.instance);
  EXPECT_EQ(*p.instance, "");
  ASSERT_TRUE(p.thread_id);
  EXPECT_EQ(p.thread_id->size(), 4u);
  ASSERT_TRUE(p.mars);
  EXPECT_EQ(*p.mars, 0);
  ASSERT_TRUE(p.trace_id);
  EXPECT_EQ(p.trace_id->size(), 36u);
  ASSERT_TRUE(p.fed_auth_required);
  EXPECT_FALSE(p.nonce);
}

TEST(TdsPrelogin, RoundTripAndServerResponse) {
  const Message m = capture_message("00_prelogin.hex");
  auto client = decode_prelogin(bytes_of(m.payload));
  ASSERT_EQ(client.status, DecodeStatus::ok);
  std::string again;
  encode_prelogin(again, client.message);
  EXPECT_EQ(again, m.payload);  // tedious writes options in token order, as we do

  const Prelogin resp =
      prelogin_response(client.message, encrypt::kReq, wirepool_prelogin_version());
  std::string out;
  encode_prelogin(out, resp);
  auto back = decode_prelogin(bytes_of(out));
  ASSERT_EQ(back.status, DecodeStatus::ok) << back.error;
  EXPECT_EQ(*back.message.encryption, encrypt::kReq);
  EXPECT_EQ(back.message.version->major, 16);
  EXPECT_EQ(*back.message.instance, "");
  EXPECT_EQ(*back.message.mars, 0);
  EXPECT_EQ(*back.message.fed_auth_required, 0);  // the client sent it
  Prelogin without = client.message;
  without.fed_auth_required.reset();
  EXPECT_FALSE(prelogin_response(without, encrypt::kReq, {}).fed_auth_required);
}

TEST(TdsPrelogin, MalformedTablesAreErrors) {
  const Message m = capture_message("00_prelogin.hex");
  const std::string& ok = m.payload;
  for (size_t n = 0; n < ok.size(); ++n) {
    auto d = decode_prelogin(bytes_of(ok.substr(0, n)));
    EXPECT_EQ(d.status, DecodeStatus::error) << "truncated at " << n;
  }
  // VERSION not first.
  std::string p;
  Prelogin x;
  x.encryption = 0;
  encode_prelogin(p, x);
  EXPECT_NE(decode_prelogin(bytes_of(p)).error.find("VERSION"), std::string::npos);
  // An offset past the end.
  std::string bad = ok;
  bad[1] = 0x7F;
  EXPECT_EQ(decode_prelogin(bytes_of(bad)).status, DecodeStatus::error);
  // Wrong option length (ENCRYPTION of 2 bytes).
  bad = ok;
  bad[9] = 2;
  EXPECT_EQ(decode_prelogin(bytes_of(bad)).status, DecodeStatus::error);
}

TEST(TdsLogin7, DecodesTediousLogin7) {
  const Message m = capture_message("01_login7.hex");
  ASSERT_EQ(m.type, static_cast<uint8_t>(PacketType::login7));
  auto d = decode_login7(bytes_of(m.payload));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  const Login7& l = d.message;
  EXPECT_EQ(l.tds_version, kTds74);
  EXPECT_EQ(l.packet_size, 4096u);
  EXPECT_EQ(l.user_name, "demo");
  EXPECT_EQ(l.password, "Pässwörd!1");
  EXPECT_EQ(l.database, "demo");
  EXPECT_EQ(l.app_name, "capture");
  EXPECT_EQ(l.server_name, "127.0.0.1");
  EXPECT_EQ(l.client_interface, "Tedious");
  EXPECT_EQ(l.language, "us_english");
  EXPECT_FALSE(l.integrated_security());
  EXPECT_TRUE((l.option_flags3 & kOptionFlags3Extension) != 0);
  // tedious 19 asks for FEDAUTH? no: it sends UTF8_SUPPORT and nothing else by default.
  ASSERT_NE(l.find_feature(feature::kUtf8Support), nullptr);
  EXPECT_EQ(l.client_id, (std::array<uint8_t, 6>{1, 2, 3, 4, 5, 6}));
  // Only UTF8_SUPPORT is acknowledged, and only when the caller supports it.
  const auto acks = feature_acks(l, true);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].id, feature::kUtf8Support);
  EXPECT_EQ(acks[0].data, std::string(1, '\x01'));
  EXPECT_TRUE(feature_acks(l, false).empty());
}

TEST(TdsStrict, Tds80ClientStartsWithTlsThenSendsPreloginAndLogin7InsideIt) {
  // The first bytes on the wire are a TLS record, which the server must tell
  // from a PRELOGIN packet before anything else.
  const std::string first = test::unhex("1603010178010001740303e56e1fde28");
  ASSERT_EQ(test::hex(first), [] {
    std::ifstream f(std::filesystem::path(__FILE__).parent_path() / "captures" /
                    "strict_tls_first_bytes.hex");
    std::string line;
    std::getline(f, line);
    return line;
  }());
  EXPECT_TRUE(looks_like_tls(bytes_of(first)));
  // Inside TLS: a PRELOGIN whose ENCRYPTION says NOT_SUP (informative in strict mode).
  auto p = decode_prelogin(bytes_of(capture_message("strict_00_prelogin.hex").payload));
  ASSERT_EQ(p.status, DecodeStatus::ok) << p.error;
  EXPECT_EQ(*p.message.encryption, encrypt::kNotSup);
  auto l = decode_login7(bytes_of(capture_message("strict_01_login7.hex").payload));
  ASSERT_EQ(l.status, DecodeStatus::ok) << l.error;
  EXPECT_EQ(l.message.tds_version, kTds74);
  EXPECT_EQ(l.message.password, "Pässwörd!1");
  auto r = decode_rpc(bytes_of(capture_message("strict_03_rpc.hex").payload));
  ASSERT_EQ(r.status, DecodeStatus::ok) << r.error;
  EXPECT_EQ(r.message.params.at(0).value.value.str, "SELECT 1");
}

TEST(TdsLogin7, RoundTripWithFeaturesAndSspi) {
  Login7 l;
  l.host_name = "host-ü";
  l.user_name = "app";
  l.password = "s3cr€t 😀";
  l.app_name = "wirepool-test";
  l.server_name = "db";
  l.client_interface = "ODBC";
  l.language = "us_english";
  l.database = "demo";
  l.change_password = "new-pass";
  l.sspi = std::string("\x4e\x54\x4c\x4d", 4);
  l.client_id = {9, 8, 7, 6, 5, 4};
  l.features = {{feature::kUtf8Support, ""}, {feature::kSessionRecovery, "abc"}, {0x42, "x"}};
  std::string out;
  encode_login7(out, l);
  auto d = decode_login7(bytes_of(out));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  const Login7& b = d.message;
  EXPECT_EQ(b.host_name, l.host_name);
  EXPECT_EQ(b.password, l.password);
  EXPECT_EQ(b.change_password, l.change_password);
  EXPECT_EQ(b.sspi, l.sspi);
  EXPECT_TRUE(b.integrated_security());
  EXPECT_EQ(b.client_id, l.client_id);
  ASSERT_EQ(b.features.size(), 3u);
  EXPECT_EQ(b.features[1].data, "abc");
  EXPECT_EQ(b.features[2].id, 0x42);
  // The password is never on the wire in clear UCS-2.
  std::string clear;
  ASSERT_TRUE(utf8_to_ucs2(l.password, clear));
  EXPECT_EQ(out.find(clear), std::string::npos);

  // Re-encoding tedious's LOGIN7 gives the same bytes back.
  const Message m = capture_message("01_login7.hex");
  auto t = decode_login7(bytes_of(m.payload));
  ASSERT_EQ(t.status, DecodeStatus::ok);
  std::string again;
  encode_login7(again, t.message);
  auto t2 = decode_login7(bytes_of(again));
  ASSERT_EQ(t2.status, DecodeStatus::ok) << t2.error;
  EXPECT_EQ(t2.message.password, t.message.password);
  EXPECT_EQ(t2.message.features.size(), t.message.features.size());
}

TEST(TdsLogin7, PasswordObfuscationFollowsTheSpec) {
  // [MS-TDS] 2.2.6.4: swap the nibbles of each byte, then XOR 0xA5. 'P' (0x50 0x00) -> A0 A5.
  EXPECT_EQ(test::hex(obfuscate_password(std::string("P\0", 2))), "a0a5");
  EXPECT_EQ(deobfuscate_password(obfuscate_password("any bytes \xff")), "any bytes \xff");
}

TEST(TdsLogin7, MalformedLoginsAreErrors) {
  const Message m = capture_message("01_login7.hex");
  const std::string& ok = m.payload;
  for (size_t n = 0; n < ok.size(); ++n) {
    auto d = decode_login7(bytes_of(ok.substr(0, n)));
    EXPECT_EQ(d.status, DecodeStatus::error) << n;
  }
  // An offset pointing outside (user name at 0xFFF0).
  std::string bad = ok;
  bad[40] = static_cast<char>(0xF0);
  bad[41] = static_cast<char>(0xFF);
  EXPECT_NE(decode_login7(bytes_of(bad)).error.find("user name"), std::string::npos);
  // A length field that disagrees with the message.
  bad = ok;
  bad[0] = static_cast<char>(bad[0] + 1);
  EXPECT_EQ(decode_login7(bytes_of(bad)).status, DecodeStatus::error);
  // A name over 128 characters.
  Login7 l;
  l.user_name = std::string(129, 'u');
  std::string out;
  encode_login7(out, l);
  EXPECT_NE(decode_login7(bytes_of(out)).error.find("longer than 128"), std::string::npos);
  // An unpaired surrogate in the database name.
  l = Login7{};
  l.database = "ab";
  out.clear();
  encode_login7(out, l);
  const size_t at = out.find(std::string("a\0b\0", 4));
  ASSERT_NE(at, std::string::npos);
  out[at] = '\x00';
  out[at + 1] = '\xD8';
  EXPECT_NE(decode_login7(bytes_of(out)).error.find("surrogate"), std::string::npos);
  // A FeatureExt list without its terminator.
  l = Login7{};
  l.features = {{feature::kUtf8Support, ""}};
  out.clear();
  encode_login7(out, l);
  out.pop_back();
  out[0] = static_cast<char>(out.size());
  EXPECT_EQ(decode_login7(bytes_of(out)).status, DecodeStatus::error);
}

}  // namespace
}  // namespace wirepool::tds
