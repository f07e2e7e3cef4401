#pragma once
// Helpers of the value tests (types, numeric, numbers, datetime, bytea, params).

#include <gtest/gtest.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/pg/types.hpp"
#include "tests/unit/protocol/pg/bytes.hpp"

namespace wirepool::pg {

inline constexpr int64_t kDay = 86400LL * 1000000;
inline constexpr int64_t k2000 = 946684800LL * 1000000;  // 2000-01-01 in Unix micros

inline std::string bytes_of(const test::ByteBuilder& b) {
  return test::as_string(b.bytes());
}

inline std::string numeric_bytes(int16_t ndigits, int16_t weight, uint16_t sign, int16_t dscale,
                                 std::initializer_list<int16_t> digits) {
  test::ByteBuilder b;
  b.i16(ndigits).i16(weight).i16(static_cast<int16_t>(sign)).i16(dscale);
  for (auto d : digits)
    b.i16(d);
  return bytes_of(b);
}

inline std::string encode_ok(const db::ValueView& v, uint32_t oid, int16_t format) {
  std::string out, error;
  EXPECT_TRUE(encode_value(v, oid, format, out, &error)) << error;
  return out;
}

inline std::string encode_error(const db::ValueView& v, uint32_t oid, int16_t format) {
  std::string out = "keep", error;
  EXPECT_FALSE(encode_value(v, oid, format, out, &error));
  EXPECT_EQ(out, "keep") << "output must be unchanged on failure";
  return error;
}

inline db::Value decode_ok(std::optional<std::string_view> bytes, uint32_t oid, int16_t format) {
  auto r = decode_param(bytes, oid, format);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value().value : db::Value{};
}

inline void expect_decode_error(std::optional<std::string_view> bytes, uint32_t oid, int16_t format,
                                std::string_view sqlstate) {
  auto r = decode_param(bytes, oid, format);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().sqlstate, sqlstate) << r.error().message;
  EXPECT_EQ(r.error().code, db::Errc::invalid_query);
  EXPECT_FALSE(r.error().message.empty());
}

}  // namespace wirepool::pg
