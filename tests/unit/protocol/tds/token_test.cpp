// Server tokens and types: every type encoder round-tripped through the token
// decoder (COLMETADATA + ROW), NULLs of every type, NBCROW chosen when it is
// smaller, PLP chunking, streaming (need_more at every cut), the mapping from
// db::Column to TDS types, values that do not fit their type (errors, never
// rounding), UCS-2 with surrogate pairs and invalid input, cp1252, GUIDs,
// LOGINACK / ENVCHANGE / INFO / ERROR / FEATUREEXTACK / DONE / RETURNSTATUS /
// RETURNVALUE / ORDER, and the SQLSTATE <-> error number tables.

#include <gtest/gtest.h>

#include "protocol/tds/errors.hpp"
#include "tds_test_util.hpp"

// Designated initializers here leave defaulted members out on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace wirepool::tds {
namespace {

using test::bytes_of;

/// Decodes every token of a complete stream.
std::vector<Token> decode_all(const std::string& payload, TokenDecoder& dec) {
  std::vector<Token> out;
  Bytes in = bytes_of(payload);
  while (!in.empty()) {
    auto d = dec.next(in);
    EXPECT_EQ(d.status, DecodeStatus::ok) << d.error;
    if (d.status != DecodeStatus::ok) break;
    out.push_back(std::move(d.message));
    in = in.subspan(d.consumed);
  }
  return out;
}

ColumnMeta col(const TypeInfo& t, std::string name = "c") {
  ColumnMeta c;
  c.type = t;
  c.name = std::move(name);
  return c;
}

struct Case {
  TypeInfo type;
  db::Value in;
  db::Value want;  // what decodes back
};

TEST(TdsTypes, EveryTypeRoundTripsThroughTheTokenDecoder) {
  const Collation utf8{{0x09, 0x04, 0xD0, 0x04, 0x00}};
  const int64_t t = 1709212455678901;  // 2024-02-29T13:14:15.678901Z
  std::vector<Case> cases = {
      {{.type = type::kIntN, .max_length = 1}, db::Value::int64(255), db::Value::int64(255)},
      {{.type = type::kIntN, .max_length = 2}, db::Value::int64(-32768), db::Value::int64(-32768)},
      {{.type = type::kIntN, .max_length = 4},
       db::Value::int64(INT32_MIN),
       db::Value::int64(INT32_MIN)},
      {{.type = type::kIntN, .max_length = 8},
       db::Value::int64(INT64_MIN),
       db::Value::int64(INT64_MIN)},
      {{.type = type::kInt4, .max_length = 4}, db::Value::int64(7), db::Value::int64(7)},
      {{.type = type::kInt8, .max_length = 8}, db::Value::uint64(9), db::Value::int64(9)},
      {{.type = type::kBitN, .max_length = 1}, db::Value::boolean(true), db::Value::boolean(true)},
      {{.type = type::kBit, .max_length = 1}, db::Value::boolean(false), db::Value::boolean(false)},
      {{.type = type::kFltN, .max_length = 8},
       db::Value::float64(-1.25e300),
       db::Value::float64(-1.25e300)},
      {{.type = type::kFltN, .max_length = 4}, db::Value::float64(0.5), db::Value::float64(0.5)},
      {{.type = type::kFlt8, .max_length = 8}, db::Value::float64(2.5), db::Value::float64(2.5)},
      {{.type = type::kMoneyN, .max_length = 8},
       db::Value::decimal("-922337203685477.5808"),
       db::Value::decimal("-922337203685477.5808")},
      {{.type = type::kMoneyN, .max_length = 4},
       db::Value::decimal("12.5"),
       db::Value::decimal("12.5000")},
      {{.type = type::kDecimalN, .precision = 38, .scale = 0},
       db::Value::decimal("99999999999999999999999999999999999999"),
       db::Value::decimal("99999999999999999999999999999999999999")},
      {{.type = type::kDecimalN, .precision = 12, .scale = 3},
       db::Value::decimal("-0.5"),
       db::Value::decimal("-0.500")},
      {{.type = type::kNumericN, .precision = 20, .scale = 0},
       db::Value::uint64(18446744073709551615ULL),
       db::Value::decimal("18446744073709551615")},
      {{.type = type::kDecimalN, .precision = 5, .scale = 2},
       db::Value::decimal("1.2300"),
       db::Value::decimal("1.23")},
      {{.type = type::kGuid, .max_length = 16},
       db::Value::text("6f9619ff-8b86-d011-b42d-00c04fc964ff"),
       db::Value::text("6F9619FF-8B86-D011-B42D-00C04FC964FF")},
      {{.type = type::kDateN},
       db::Value::time(19782LL * 86400000000),
       db::Value::time(19782LL * 86400000000)},
      {{.type = type::kDateN},
       db::Value::time(-719162LL * 86400000000),
       db::Value::time(-719162LL * 86400000000)},  // 0001-01-01
      {{.type = type::kDateTime2N, .scale = 7}, db::Value::time(t), db::Value::time(t)},
      {{.type = type::kDateTime2N, .scale = 3}, db::Value::time(1000), db::Value::time(1000)},
      {{.type = type::kDateTimeOffsetN, .scale = 7}, db::Value::time(-1), db::Value::time(-1)},
      {{.type = type::kTimeN, .scale = 7}, db::Value::time(t), db::Value::text("13:14:15.6789010")},
      {{.type = type::kTimeN, .scale = 3},
       db::Value::text("01:02:03.5"),
       db::Value::text("01:02:03.500")},
      {{.type = type::kTimeN, .scale = 0},
       db::Value::text("23:59:59.000"),
       db::Value::text("23:59:59")},
      {{.type = type::kDateTimN, .max_length = 8},
       db::Value::time(1000),
       db::Value::time(0)},  // 1/300 s: 1 ms rounds to 0
      {{.type = type::kDateTime, .max_length = 8}, db::Value::time(3333), db::Value::time(3333)},
      {{.type = type::kDateTimN, .max_length = 4},
       db::Value::time(90 * 1000000),
       db::Value::time(120 * 1000000)},  // SMALLDATETIME: nearest minute
      {{.type = type::kNVarChar, .max_length = 40},
       db::Value::text("ab 😀 é"),
       db::Value::text("ab 😀 é")},
      {{.type = type::kNVarChar, .max_length = kPlpMarker},
       db::Value::text(std::string(20000, 'x')),
       db::Value::text(std::string(20000, 'x'))},
      {{.type = type::kNVarChar, .max_length = kPlpMarker},
       db::Value::text(""),
       db::Value::text("")},
      {{.type = type::kNChar, .max_length = 8}, db::Value::text("ab"), db::Value::text("ab")},
      {{.type = type::kBigVarChar, .max_length = 20, .collation = kDefaultCollation},
       db::Value::text("café €"),
       db::Value::text("café €")},
      {{.type = type::kBigChar, .max_length = 20, .collation = utf8},
       db::Value::text("😀"),
       db::Value::text("😀")},
      {{.type = type::kBigVarBinary, .max_length = 10},
       db::Value::bytes(std::string("\0\1\2", 3)),
       db::Value::bytes(std::string("\0\1\2", 3))},
      {{.type = type::kBigVarBinary, .max_length = kPlpMarker},
       db::Value::bytes(std::string(17000, '\xAB')),
       db::Value::bytes(std::string(17000, '\xAB'))},
      {{.type = type::kBigBinary, .max_length = 4},
       db::Value::bytes("abcd"),
       db::Value::bytes("abcd")},
      {{.type = type::kXml, .max_length = kPlpMarker},
       db::Value::text("<a>é</a>"),
       db::Value::text("<a>é</a>")},
      {{.type = type::kNVarChar, .max_length = kPlpMarker},
       db::Value::int64(-5),
       db::Value::text("-5")},
      {{.type = type::kNVarChar, .max_length = kPlpMarker},
       db::Value::time(0),
       db::Value::text("1970-01-01 00:00:00")},
  };
  for (auto& c : cases) {
    if (c.type.type == type::kDecimalN || c.type.type == type::kNumericN)
      c.type.max_length = c.type.precision <= 9 ? 5 : c.type.precision <= 19 ? 9 : 17;
    if (c.type.type == type::kDecimalN && c.type.precision == 38) c.type.max_length = 17;
    const std::vector<ColumnMeta> cols = {col(c.type, "v"), col(c.type, "n")};
    std::string out;
    TokenEncoder enc(out);
    enc.col_metadata(cols);
    // Fixed-length types have no NULL in a ROW: the second column repeats the value.
    const bool nullable = null_size(c.type) > 0;
    const db::ValueView row[2] = {db::view_of(c.in),
                                  nullable ? db::ValueView{} : db::view_of(c.in)};
    ASSERT_TRUE(enc.plain_row(cols, row).ok()) << type_name(c.type.type);
    TokenDecoder dec;
    auto toks = decode_all(out, dec);
    ASSERT_EQ(toks.size(), 2u) << type_name(c.type.type);
    const auto& meta = std::get<std::vector<ColumnMeta>>(toks[0]);
    EXPECT_EQ(meta[0].type.type, c.type.type);
    EXPECT_EQ(meta[0].type.scale, c.type.scale);
    EXPECT_EQ(meta[0].name, "v");
    const auto& r = std::get<Row>(toks[1]);
    const db::Value& got = r.values[0].value;
    ASSERT_EQ(got.kind, c.want.kind) << type_name(c.type.type);
    if (got.kind == db::Kind::F64)
      EXPECT_EQ(got.f64, c.want.f64);
    else if (got.kind == db::Kind::Text || got.kind == db::Kind::Bytes ||
             got.kind == db::Kind::Decimal)
      EXPECT_EQ(got.str, c.want.str) << type_name(c.type.type);
    else
      EXPECT_EQ(got.i64, c.want.i64) << type_name(c.type.type);
    EXPECT_EQ(r.values[1].value.is_null(), nullable) << type_name(c.type.type);
  }
}

TEST(TdsTypes, ValuesThatDoNotFitAreErrorsNotRounded) {
  auto fails = [](TypeInfo t, db::Value v, std::string_view sqlstate) {
    std::string out = "keep";
    auto s = encode_value(out, t, db::view_of(v));
    EXPECT_FALSE(s.ok()) << type_name(t.type);
    if (!s.ok()) {
      EXPECT_EQ(s.error().sqlstate, sqlstate) << s.error().message;
    }
    EXPECT_EQ(out, "keep");  // nothing appended
  };
  fails({.type = type::kDecimalN, .max_length = 5, .precision = 5, .scale = 2},
        db::Value::decimal("1.234"), "22003");
  fails({.type = type::kDecimalN, .max_length = 5, .precision = 5, .scale = 2},
        db::Value::decimal("1234.5"), "22003");
  fails({.type = type::kDecimalN, .max_length = 5, .precision = 5, .scale = 2},
        db::Value::decimal("1e5"), "22P02");
  fails({.type = type::kIntN, .max_length = 4}, db::Value::int64(1LL << 31), "22003");
  fails({.type = type::kIntN, .max_length = 8}, db::Value::uint64(1ULL << 63), "22003");
  fails({.type = type::kNVarChar, .max_length = 4}, db::Value::text("abc"), "22001");
  fails({.type = type::kBigVarChar, .max_length = 10, .collation = kDefaultCollation},
        db::Value::text("😀"), "22021");
  fails({.type = type::kGuid, .max_length = 16}, db::Value::text("not-a-guid"), "22P02");
  fails({.type = type::kDateN}, db::Value::time(1), "22008");
  fails({.type = type::kIntN, .max_length = 4}, db::Value::text("12x"), "42804");
  fails({.type = type::kInt4, .max_length = 4}, db::Value::null(), "22004");
  fails({.type = type::kTimeN, .scale = 3}, db::Value::text("13:14:15.6789"), "22007");
  fails({.type = type::kTimeN, .scale = 3}, db::Value::text("24:00:00"), "22007");
}

TEST(TdsTypes, OutOfRangeWireValuesAreErrors) {
  const TypeInfo dt{.type = type::kDateTimN, .max_length = 8};
  // Days far beyond 9999-12-31 (found by the fuzzer: it overflowed the conversion).
  EXPECT_EQ(decode_value(dt, bytes_of(test::unhex("08cd51602f00000000"))).status,
            DecodeStatus::error);
  const TypeInfo d{.type = type::kDateN, .max_length = 3};
  EXPECT_EQ(decode_value(d, bytes_of(test::unhex("03ffffff"))).status, DecodeStatus::error);
  const TypeInfo tm{.type = type::kTimeN, .scale = 0};
  EXPECT_EQ(decode_value(tm, bytes_of(test::unhex("0380510100"))).status,
            DecodeStatus::error);  // 86400 s
  const TypeInfo dec{.type = type::kDecimalN, .max_length = 5, .precision = 2, .scale = 0};
  EXPECT_EQ(decode_value(dec, bytes_of(test::unhex("0501e8030000"))).status,
            DecodeStatus::error);  // 1000 has more digits than precision 2
  EXPECT_EQ(decode_value(dec, bytes_of(test::unhex("050201000000"))).status, DecodeStatus::error);
}

TEST(TdsTypes, NbcRowIsChosenWhenSmaller) {
  std::vector<ColumnMeta> cols;
  for (int i = 0; i < 10; ++i)
    cols.push_back(
        col({.type = type::kNVarChar, .max_length = kPlpMarker, .collation = kDefaultCollation}));
  std::vector<db::ValueView> vals(10);
  vals[3] = db::ValueView::text("x");
  std::string out;
  TokenEncoder enc(out);
  ASSERT_TRUE(enc.row(cols, vals).ok());
  EXPECT_EQ(static_cast<uint8_t>(out[0]), token::kNbcRow);
  // 9 NULL PLPs (72 bytes) replaced by a 2-byte bitmap.
  EXPECT_EQ(out.size(), 1u + 2 + (8 + 4 + 2 + 4));
  TokenDecoder dec;
  std::string meta;
  TokenEncoder(meta).col_metadata(cols);
  auto toks = decode_all(meta + out, dec);
  ASSERT_EQ(toks.size(), 2u);
  const auto& r = std::get<Row>(toks[1]);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(r.values[i].value.is_null(), i != 3);
  EXPECT_EQ(r.values[3].value.str, "x");

  // A NULL in a fixed-length column has no ROW form: NBCROW.
  std::vector<ColumnMeta> fixed = {col({.type = type::kInt4, .max_length = 4})};
  std::vector<db::ValueView> fnul(1);
  std::string of;
  ASSERT_TRUE(TokenEncoder(of).row(fixed, fnul).ok());
  EXPECT_EQ(test::hex(of), "d201");

  // One nullable INTN column: the NULL costs 1 byte, the bitmap 1: ROW.
  std::vector<ColumnMeta> one = {col({.type = type::kIntN, .max_length = 4})};
  std::vector<db::ValueView> nul(1);
  std::string o2;
  ASSERT_TRUE(TokenEncoder(o2).row(one, nul).ok());
  EXPECT_EQ(static_cast<uint8_t>(o2[0]), token::kRow);
}

TEST(TdsTypes, PlpIsChunkedAndReassembled) {
  const TypeInfo t{.type = type::kBigVarBinary, .max_length = kPlpMarker};
  const std::string big(20001, 'q');
  std::string out;
  ASSERT_TRUE(encode_value(out, t, db::ValueView::bytes(big)).ok());
  // 8-byte total, chunks of 8000, 8000, 4001, terminator.
  EXPECT_EQ(out.size(), 8 + 3 * 4 + big.size() + 4);
  auto d = decode_value(t, bytes_of(out));
  ASSERT_EQ(d.status, DecodeStatus::ok);
  EXPECT_EQ(d.message.value.str, big);
  EXPECT_EQ(d.consumed, out.size());
  for (size_t n = 0; n < out.size(); n += 997)
    EXPECT_EQ(decode_value(t, bytes_of(out.substr(0, n))).status, DecodeStatus::need_more);
  // Unknown total length (0xFFFFFFFFFFFFFFFE) is accepted; a wrong total is an error.
  std::string unknown = out;
  unknown[0] = '\xFE';
  for (int i = 1; i < 8; ++i)
    unknown[i] = '\xFF';
  EXPECT_EQ(decode_value(t, bytes_of(unknown)).status, DecodeStatus::ok);
  std::string wrong = out;
  wrong[0] = static_cast<char>(wrong[0] + 1);
  EXPECT_EQ(decode_value(t, bytes_of(wrong)).status, DecodeStatus::error);
  EXPECT_EQ(decode_value(t, bytes_of(out), Limits{.max_value = 20000}).status, DecodeStatus::error);
}

TEST(TdsTypes, PlpAboveTheLimitIsRefusedByItsTotalOrItsChunksAndMarkedOverLimit) {
  const TypeInfo bin{.type = type::kBigVarBinary, .max_length = kPlpMarker};
  std::string out;
  ASSERT_TRUE(encode_value(out, bin, db::ValueView::bytes(std::string(20001, 'q'))).ok());
  // The announced total alone decides: only its 8 bytes are needed.
  auto d = decode_value(bin, bytes_of(out.substr(0, 8)), Limits{.max_value = 20000});
  EXPECT_EQ(d.status, DecodeStatus::error);
  EXPECT_TRUE(d.over_limit);
  // Unknown total: refused once the chunks pass the limit, before the last one arrives.
  std::string unknown = out;
  unknown[0] = '\xFE';
  for (int i = 1; i < 8; ++i)
    unknown[i] = '\xFF';
  d = decode_value(bin, bytes_of(unknown.substr(0, 8 + 2 * (4 + 8000) + 4)),
                   Limits{.max_value = 10000});
  EXPECT_EQ(d.status, DecodeStatus::error);
  EXPECT_TRUE(d.over_limit);
  // A malformed value is an error, not over the limit.
  std::string wrong = out;
  wrong[0] = static_cast<char>(wrong[0] + 1);
  EXPECT_FALSE(decode_value(bin, bytes_of(wrong)).over_limit);
  // ucs2_as_utf8: N types may take twice the limit on the wire; binary ones may not.
  const TypeInfo ntext{.type = type::kNVarChar, .max_length = kPlpMarker};
  std::string text;
  ASSERT_TRUE(encode_value(text, ntext, db::ValueView::text(std::string(6000, 'a'))).ok());
  EXPECT_EQ(decode_value(ntext, bytes_of(text), Limits{.max_value = 6000}).status,
            DecodeStatus::error);
  d = decode_value(ntext, bytes_of(text), Limits{.max_value = 6000, .ucs2_as_utf8 = true});
  ASSERT_EQ(d.status, DecodeStatus::ok);
  EXPECT_EQ(d.message.value.str.size(), 6000u);
  d = decode_value(ntext, bytes_of(text), Limits{.max_value = 5999, .ucs2_as_utf8 = true});
  EXPECT_EQ(d.status, DecodeStatus::error);
  EXPECT_TRUE(d.over_limit);
  EXPECT_EQ(
      decode_value(bin, bytes_of(out), Limits{.max_value = 10001, .ucs2_as_utf8 = true}).status,
      DecodeStatus::error);
}

TEST(TdsTokens, RowWithAValueAboveTheLimitIsMarkedOverLimit) {
  std::string out;
  TokenEncoder e(out);
  const std::vector<ColumnMeta> cols{
      ColumnMeta{.type = {.type = type::kBigVarBinary, .max_length = kPlpMarker}, .name = "b"}};
  e.col_metadata(cols);
  const std::string bytes(20001, 'q');
  const db::ValueView big = db::ValueView::bytes(bytes);
  ASSERT_TRUE(e.row(cols, std::span<const db::ValueView>(&big, 1)).ok());
  TokenDecoder dec(Limits{.max_value = 20000});
  auto md = dec.next(bytes_of(out));
  ASSERT_EQ(md.status, DecodeStatus::ok);
  auto row = dec.next(bytes_of(out).subspan(md.consumed));
  EXPECT_EQ(row.status, DecodeStatus::error);
  EXPECT_TRUE(row.over_limit);
}

// A large value arriving packet by packet: need_more says how many bytes the
// row needs, so a reader that waits for them decodes it a few times, not once
// per packet (docs/tds-driver.md has the timings).
TEST(TdsTokens, RowCutShortSaysHowManyBytesItNeeds) {
  std::string out;
  TokenEncoder e(out);
  const std::vector<ColumnMeta> cols{
      ColumnMeta{.type = {.type = type::kIntN, .max_length = 4}, .name = "i"},
      ColumnMeta{.type = {.type = type::kBigVarBinary, .max_length = kPlpMarker}, .name = "b"}};
  e.col_metadata(cols);
  const size_t md_end = out.size();
  const std::string bytes(1000000, 'q');
  const db::ValueView values[] = {db::ValueView::int64(7), db::ValueView::bytes(bytes)};
  ASSERT_TRUE(e.row(cols, values).ok());
  const std::string row = out.substr(md_end);
  TokenDecoder dec;
  ASSERT_EQ(dec.next(bytes_of(out)).status, DecodeStatus::ok);
  // Every cut: need_more, and never more bytes asked for than the row holds.
  for (size_t n = 0; n < row.size(); n += 4093) {
    auto d = dec.next(bytes_of(row.substr(0, n)));
    ASSERT_EQ(d.status, DecodeStatus::need_more) << n;
    EXPECT_LE(d.needed, row.size()) << n;
    if (n > 1 + 5 + 8) {
      EXPECT_GT(d.needed, n) << n;
    }
  }
  // A reader taking 16 KB packets and waiting for `needed` decodes it 3 times at most.
  size_t have = 0, attempts = 0;
  for (;;) {
    ++attempts;
    auto d = dec.next(bytes_of(row.substr(0, have)));
    if (d.status == DecodeStatus::ok) {
      EXPECT_EQ(d.consumed, row.size());
      break;
    }
    ASSERT_EQ(d.status, DecodeStatus::need_more);
    do {
      have = std::min(row.size(), have + 16384);
    } while (have < d.needed);
  }
  EXPECT_LE(attempts, 3u);
}

TEST(TdsTokens, StreamDecodingAnswersNeedMoreAtEveryCut) {
  std::string out;
  TokenEncoder e(out);
  e.login_ack(LoginAck{.prog_version = {0, 1, 0, 0}});
  e.env_change_text(env::kDatabase, "demo", "master");
  e.env_change_text(env::kPacketSize, "8192", "4096");
  e.env_collation(kDefaultCollation, Collation{});
  e.env_begin_transaction(0x0102030405060708ULL);
  e.env_commit_transaction(0x0102030405060708ULL);
  e.env_rollback_transaction(9);
  e.env_reset_connection_ack();
  e.message(ServerMessage{.is_error = false,
                          .number = 5701,
                          .severity = 10,
                          .message = "Changed database context to 'demo'.",
                          .server_name = "wirepool"});
  e.message(ServerMessage{
      .number = 2627, .state = 1, .severity = 14, .message = "Violation of PRIMARY KEY 😀"});
  e.feature_ext_ack(std::vector<FeatureExt>{{feature::kUtf8Support, std::string(1, '\1')}});
  const std::vector<ColumnMeta> cols = {
      col({.type = type::kIntN, .max_length = 8}, "id"),
      col({.type = type::kNVarChar, .max_length = kPlpMarker, .collation = kDefaultCollation},
          "name")};
  e.col_metadata(cols);
  const db::ValueView r1[2] = {db::ValueView::int64(1), db::ValueView::text("one")};
  ASSERT_TRUE(e.row(cols, r1).ok());
  const db::ValueView r2[2] = {db::ValueView::int64(2), db::ValueView{}};
  ASSERT_TRUE(e.row(cols, r2).ok());
  e.done(Done{.token = token::kDoneInProc,
              .status = done::kCount | done::kMore,
              .current_command = 0xC1,
              .row_count = 2});
  e.return_status(-3);
  ASSERT_TRUE(
      e.return_value(1, "@out", 1, {.type = type::kIntN, .max_length = 4}, db::ValueView::int64(77))
          .ok());
  out += std::string("\xA9\x02\x00\x01\x00", 5);  // ORDER (skipped in meaning, decoded)
  out += std::string("\xA4\x01\x00\x00", 4);      // TABNAME: skipped
  e.done(Done{.token = token::kDoneProc, .status = done::kFinal});

  // Whole.
  TokenDecoder dec;
  auto toks = decode_all(out, dec);
  ASSERT_EQ(toks.size(), 19u);
  const auto& ack = std::get<LoginAck>(toks[0]);
  EXPECT_EQ(ack.tds_version, kTds74);
  EXPECT_EQ(ack.prog_name, "wirepool");
  EXPECT_EQ(std::get<EnvChange>(toks[1]).new_value, "demo");
  EXPECT_EQ(std::get<EnvChange>(toks[1]).old_value, "master");
  EXPECT_EQ(std::get<EnvChange>(toks[4]).new_value,
            std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  EXPECT_EQ(std::get<EnvChange>(toks[5]).old_value.size(), 8u);
  EXPECT_EQ(std::get<EnvChange>(toks[7]).type, env::kResetConnectionAck);
  EXPECT_FALSE(std::get<ServerMessage>(toks[8]).is_error);
  EXPECT_EQ(std::get<ServerMessage>(toks[8]).server_name, "wirepool");
  EXPECT_EQ(std::get<ServerMessage>(toks[9]).number, 2627);
  EXPECT_EQ(std::get<ServerMessage>(toks[9]).message, "Violation of PRIMARY KEY 😀");
  EXPECT_EQ(std::get<std::vector<FeatureExt>>(toks[10]).at(0).id, feature::kUtf8Support);
  EXPECT_EQ(std::get<Row>(toks[12]).values[1].value.str, "one");
  EXPECT_TRUE(std::get<Row>(toks[13]).values[1].value.is_null());
  EXPECT_EQ(std::get<Done>(toks[14]).row_count, 2u);
  EXPECT_EQ(std::get<Done>(toks[14]).token, token::kDoneInProc);
  EXPECT_EQ(std::get<int32_t>(toks[15]), -3);
  EXPECT_EQ(std::get<ReturnValue>(toks[16]).name, "@out");
  EXPECT_EQ(std::get<ReturnValue>(toks[16]).value.value.i64, 77);
  EXPECT_EQ(std::get<Order>(toks[17]).columns, std::vector<uint16_t>{1});

  // Streamed: the bytes arrive in pieces; need_more until a token is whole.
  for (size_t step : {size_t{1}, size_t{5}, size_t{64}}) {
    TokenDecoder sd;
    std::string buf;
    size_t count = 0;
    for (size_t i = 0; i < out.size(); i += step) {
      buf += out.substr(i, step);
      for (;;) {
        auto d = sd.next(bytes_of(buf));
        ASSERT_NE(d.status, DecodeStatus::error) << d.error;
        if (d.status == DecodeStatus::need_more) {
          EXPECT_EQ(d.consumed, 0u);
          break;
        }
        buf.erase(0, d.consumed);
        ++count;
      }
    }
    EXPECT_EQ(count, 19u) << step;
    EXPECT_TRUE(buf.empty());
  }
}

TEST(TdsTokens, CurrentCommandForVerbs) {
  EXPECT_EQ(current_command("SELECT"), 0xC1);
  EXPECT_EQ(current_command("INSERT"), 0xC3);
  EXPECT_EQ(current_command("DELETE"), 0xC4);
  EXPECT_EQ(current_command("UPDATE"), 0xC5);
  EXPECT_EQ(current_command("CREATE TABLE"), 0);
}

TEST(TdsTokens, RoutingAndUnknownEnvChangesAreKeptRaw) {
  // ENVCHANGE 20 (routing): a 2-byte length and its own structure, kept raw.
  const std::string routing = test::unhex("e3090014070000050000ab00");
  TokenDecoder dec;
  auto d = dec.next(bytes_of(routing));
  ASSERT_EQ(d.status, DecodeStatus::ok) << d.error;
  EXPECT_EQ(std::get<EnvChange>(d.message).type, 20);
  EXPECT_EQ(std::get<EnvChange>(d.message).new_value.size(), 8u);
}

TEST(TdsTokens, MalformedTokensAreErrors) {
  TokenDecoder dec;
  EXPECT_EQ(dec.next(bytes_of(std::string("\xD1", 1))).status, DecodeStatus::error);  // no meta
  EXPECT_EQ(dec.next(bytes_of(std::string("\x01", 1))).status, DecodeStatus::error);  // unknown
  // An ENVCHANGE whose inner lengths overrun its token length.
  std::string env = std::string("\xE3\x03\x00\x01\x05\x00", 6);
  EXPECT_EQ(dec.next(bytes_of(env)).status, DecodeStatus::error);
  // COLMETADATA with a DECIMAL of precision 0.
  std::string meta = std::string("\x81\x01\x00\x00\x00\x00\x00\x01\x00\x6A\x05\x00\x00", 13);
  EXPECT_EQ(dec.next(bytes_of(meta)).status, DecodeStatus::error);
}

TEST(TdsTypes, ColumnMapping) {
  auto map = [](db::Kind k, db::NativeType n = {}) {
    db::Column c;
    c.kind = k;
    c.native = std::move(n);
    return column_type(c);
  };
  EXPECT_EQ(map(db::Kind::Bool).type, type::kBitN);
  EXPECT_EQ(map(db::Kind::I64).max_length, 8u);
  EXPECT_EQ(map(db::Kind::I64, {.pg_oid = 23}).max_length, 4u);
  EXPECT_EQ(map(db::Kind::I64, {.name = "INTEGER"}).max_length, 8u);  // SQLite: 64-bit
  EXPECT_EQ(map(db::Kind::I64, {.name = "SMALLINT"}).max_length, 2u);
  // The driver's own width wins over the name (psqlODBC names int4 "INTEGER").
  EXPECT_EQ(map(db::Kind::I64, {.name = "INTEGER", .int_bytes = 4}).max_length, 4u);
  EXPECT_EQ(map(db::Kind::I64, {.name = "INTEGER", .int_bytes = 2}).max_length, 2u);
  EXPECT_EQ(map(db::Kind::I64, {.name = "INT UNSIGNED", .int_bytes = 8}).max_length, 8u);
  const TypeInfo u = map(db::Kind::U64);
  EXPECT_EQ(u.type, type::kDecimalN);
  EXPECT_EQ(u.precision, 20);
  EXPECT_EQ(u.scale, 0);
  EXPECT_EQ(map(db::Kind::F64).type, type::kFltN);
  EXPECT_EQ(map(db::Kind::F64).max_length, 8u);
  EXPECT_EQ(map(db::Kind::F64, {.name = "REAL"}).max_length, 4u);  // PostgreSQL's, SQL Server's
  EXPECT_EQ(map(db::Kind::F64, {.pg_oid = 700}).max_length, 4u);
  // SQLite's REAL is a double: its drivers say so (int_bytes 8), and no digit is lost.
  EXPECT_EQ(map(db::Kind::F64, {.name = "REAL", .int_bytes = 8}).max_length, 8u);
  EXPECT_EQ(map(db::Kind::Text).max_length, kPlpMarker);
  EXPECT_EQ(map(db::Kind::Text, {.length = 20}).max_length, 80u);
  EXPECT_EQ(map(db::Kind::Text).collation, kDefaultCollation);
  EXPECT_EQ(map(db::Kind::Bytes, {.length = 16}).max_length, 16u);
  EXPECT_TRUE(map(db::Kind::Bytes).plp());
  EXPECT_EQ(map(db::Kind::Time, {.time_form = db::TimeForm::timestamptz}).type,
            type::kDateTimeOffsetN);
  EXPECT_EQ(map(db::Kind::Time, {.time_form = db::TimeForm::timestamp}).type, type::kDateTime2N);
  EXPECT_EQ(map(db::Kind::Time, {.time_form = db::TimeForm::date}).type, type::kDateN);
  const TypeInfo d = map(db::Kind::Decimal, {.precision = 10, .scale = 2});
  EXPECT_EQ(d.precision, 10);
  EXPECT_EQ(d.scale, 2);
  EXPECT_EQ(map(db::Kind::Decimal).precision, 38);
  EXPECT_EQ(map(db::Kind::Decimal).scale, 18);
  db::Column dc;
  dc.kind = db::Kind::Decimal;
  const auto sample = db::ValueView::decimal("1.23456");
  EXPECT_EQ(column_type(dc, kDefaultCollation, &sample).scale, 5);
  EXPECT_EQ(map(db::Kind::Text, {.name = "uuid", .pg_oid = 2950}).type, type::kGuid);
  EXPECT_EQ(map(db::Kind::Null).type, type::kNVarChar);
  EXPECT_TRUE(map(db::Kind::Null).plp());
  // A PostgreSQL binary uuid (RFC byte order) goes out mixed-endian.
  std::string out;
  const std::string rfc = test::unhex("6f9619ff8b86d011b42d00c04fc964ff");
  ASSERT_TRUE(
      encode_value(out, map(db::Kind::Bytes, {.name = "uuid"}), db::ValueView::bytes(rfc)).ok());
  auto g = decode_value({.type = type::kGuid, .max_length = 16}, bytes_of(out));
  EXPECT_EQ(g.message.value.str, "6F9619FF-8B86-D011-B42D-00C04FC964FF");
}

TEST(TdsText, Ucs2ConversionWithSurrogatesAndInvalidInput) {
  std::string u;
  ASSERT_TRUE(utf8_to_ucs2("a😀", u));
  EXPECT_EQ(test::hex(u), "61003dd800de");
  std::string back;
  ASSERT_TRUE(ucs2_to_utf8(bytes_of(u), back));
  EXPECT_EQ(back, "a😀");
  std::string e;
  for (const char* bad : {"\xff", "\xc0\x80", "\xed\xa0\x80", "\xe2\x82", "\xf4\x90\x80\x80"}) {
    std::string o;
    EXPECT_FALSE(utf8_to_ucs2(bad, o, &e)) << test::hex(bad);
  }
  // A lone high surrogate, a lone low one, a high one before a letter, an odd length.
  for (const std::string& bad : {test::unhex("3dd8"), test::unhex("00de"), test::unhex("3dd84100"),
                                 std::string("A\0B", 3)}) {
    std::string o;
    EXPECT_FALSE(ucs2_to_utf8(bytes_of(bad), o, &e)) << test::hex(bad);
  }
  std::string cp;
  cp1252_to_utf8(bytes_of(std::string("\x80\xe9\x81", 3)), cp);
  EXPECT_EQ(cp, "€é\xc2\x81");
  std::string round;
  ASSERT_TRUE(utf8_to_cp1252(cp, round));
  EXPECT_EQ(round, std::string("\x80\xe9\x81", 3));
}

TEST(TdsErrors, SqlstateToNumberAndBack) {
  EXPECT_EQ(error_for_sqlstate("23505").number, 2627);
  EXPECT_EQ(error_for_sqlstate("23503").number, 547);
  EXPECT_EQ(error_for_sqlstate("23502").number, 515);
  EXPECT_EQ(error_for_sqlstate("23514").number, 547);
  EXPECT_EQ(error_for_sqlstate("42601").number, 102);
  EXPECT_EQ(error_for_sqlstate("42P01").number, 208);
  EXPECT_EQ(error_for_sqlstate("42703").number, 207);
  EXPECT_EQ(error_for_sqlstate("55P03").number, 1222);
  EXPECT_EQ(error_for_sqlstate("40P01").number, 1205);
  EXPECT_EQ(error_for_sqlstate("28000").number, 18456);
  EXPECT_EQ(error_for_sqlstate("28000").severity, 14);
  EXPECT_EQ(error_for_sqlstate("3D000").number, 4060);
  EXPECT_EQ(error_for_sqlstate("53300").number, 17809);
  EXPECT_EQ(error_for_sqlstate("57014").severity, 16);  // the connection stays usable
  EXPECT_EQ(error_for_sqlstate("XX000").number, 50000);
  EXPECT_EQ(error_for_sqlstate("XX000").severity, 16);
  EXPECT_EQ(sqlstate_for_error(2627), "23505");
  EXPECT_EQ(sqlstate_for_error(2601), "23505");
  EXPECT_EQ(sqlstate_for_error(547, "The INSERT statement conflicted with the FOREIGN KEY"),
            "23503");
  EXPECT_EQ(sqlstate_for_error(547, "conflicted with the CHECK constraint"), "23514");
  EXPECT_EQ(sqlstate_for_error(515), "23502");
  EXPECT_EQ(sqlstate_for_error(102), "42601");
  EXPECT_EQ(sqlstate_for_error(208), "42P01");
  EXPECT_EQ(sqlstate_for_error(207), "42703");
  EXPECT_EQ(sqlstate_for_error(1205), "40P01");
  EXPECT_EQ(sqlstate_for_error(1222), "55P03");
  EXPECT_EQ(sqlstate_for_error(99999, "", 20), "08006");
  EXPECT_EQ(sqlstate_for_error(99999, "", 16), "XX000");
  // Every SQLSTATE the table maps comes back as itself or its class sibling.
  for (const char* s : {"23505", "23503", "23502", "42601", "42P01", "42703", "55P03", "40P01"})
    EXPECT_EQ(sqlstate_for_error(error_for_sqlstate(s).number, "", error_for_sqlstate(s).severity),
              s);
}

}  // namespace
}  // namespace wirepool::tds
