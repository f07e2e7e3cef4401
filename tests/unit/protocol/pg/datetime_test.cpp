// Dates and times (protocol/pg/datetime.hpp).
//
// Cases: dates before 2000 and before 1970, BC dates, timestamps with and
// without fraction (trailing zeros trimmed), "+00" for timestamptz, binary
// epochs 2000-01-01, infinities; parse_time's ISO forms and zones, rounding
// to microseconds, invalid dates.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "protocol/pg/datetime.hpp"
#include "protocol/pg/types.hpp"
#include "tests/unit/protocol/pg/bytes.hpp"
#include "tests/unit/protocol/pg/values.hpp"

namespace wirepool::pg {
namespace {

using test::ByteBuilder;

// ---------------------------------------------------------------------------
// times

TEST(Time, PgJdbcZonedDateIsItsDate) {
  // PgJDBC's setDate text (untyped): the date PostgreSQL stores for it.
  EXPECT_EQ(date_of_zoned_date("2024-01-02 +00"), "2024-01-02");
  EXPECT_EQ(date_of_zoned_date("2024-01-02 -05"), "2024-01-02");
  EXPECT_EQ(date_of_zoned_date("2024-01-02 +05:30"), "2024-01-02");
  EXPECT_EQ(date_of_zoned_date("2024-01-02 +05:30:15"), "2024-01-02");
  EXPECT_EQ(date_of_zoned_date("12024-01-02 +00"), "12024-01-02");
  // Anything else stays as the client sent it.
  for (const char* other :
       {"2024-01-02", "2024-01-02 10:11:12+00", "2024-01-02 +0", "2024-01-02 +00 BC",
        "2024-01-02 BC +00", "2024-1-02 +00", "24-01-02 +00", "2024-01-02 +00:", "2024-01-02  +00",
        "hello", "2024-01-02 +00:00:00:00", ""}) {
    EXPECT_EQ(date_of_zoned_date(other), std::nullopt) << other;
  }
}

TEST(Time, DatesBefore2000And1970) {
  EXPECT_EQ(format_time(k2000, db::TimeForm::date), "2000-01-01");
  EXPECT_EQ(format_time(k2000 - kDay, db::TimeForm::date), "1999-12-31");
  EXPECT_EQ(format_time(-kDay, db::TimeForm::date), "1969-12-31");
  EXPECT_EQ(format_time(-1, db::TimeForm::date), "1969-12-31");
  EXPECT_EQ(format_time(-1, db::TimeForm::timestamptz), "1969-12-31 23:59:59.999999+00");
  EXPECT_EQ(format_time(0, db::TimeForm::timestamp), "1970-01-01 00:00:00");
}

TEST(Time, BcDatesAndWideYears) {
  // 0001-01-01 BC is proleptic year 0.
  const int64_t y0 = *parse_time("0001-01-01 BC");
  EXPECT_EQ(format_time(y0, db::TimeForm::date), "0001-01-01 BC");
  EXPECT_EQ(format_time(y0, db::TimeForm::timestamptz), "0001-01-01 00:00:00+00 BC");
  EXPECT_EQ(format_time(*parse_time("0044-03-15 BC"), db::TimeForm::date), "0044-03-15 BC");
  EXPECT_EQ(format_time(*parse_time("12345-06-07"), db::TimeForm::date), "12345-06-07");
}

TEST(Time, FractionTrailingZerosTrimmed) {
  const int64_t base = *parse_time("2024-01-02 03:04:05");
  EXPECT_EQ(format_time(base, db::TimeForm::timestamptz), "2024-01-02 03:04:05+00");
  EXPECT_EQ(format_time(base + 500000, db::TimeForm::timestamptz), "2024-01-02 03:04:05.5+00");
  EXPECT_EQ(format_time(base + 123456, db::TimeForm::timestamp), "2024-01-02 03:04:05.123456");
  EXPECT_EQ(format_time(base + 120, db::TimeForm::timestamp), "2024-01-02 03:04:05.00012");
}

TEST(Time, ExtremeMicrosecondsFormatAndParseBack) {
  for (int64_t micros : {INT64_MIN + 1, INT64_MAX - 1, int64_t(-62135596800000000)}) {
    const std::string text = format_time(micros, db::TimeForm::timestamptz);
    EXPECT_EQ(parse_time(text), micros) << text;
  }
  EXPECT_EQ(format_time(-62135596800000000, db::TimeForm::timestamptz), "0001-01-01 00:00:00+00");
}

TEST(Time, Infinities) {
  EXPECT_EQ(format_time(INT64_MAX, db::TimeForm::timestamptz), "infinity");
  EXPECT_EQ(format_time(INT64_MIN, db::TimeForm::date), "-infinity");
  EXPECT_EQ(parse_time("Infinity"), INT64_MAX);
  EXPECT_EQ(parse_time("-infinity"), INT64_MIN);
}

TEST(Time, ParseIsoFormsAndZones) {
  const int64_t t = 1704164645LL * 1000000;  // 2024-01-02 03:04:05 UTC
  EXPECT_EQ(parse_time("2024-01-02"), t - (3 * 3600 + 4 * 60 + 5) * 1000000LL);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05"), t);
  EXPECT_EQ(parse_time(" 2024-01-02 03:04:05 "), t);
  EXPECT_EQ(parse_time("2024-01-02T03:04:05Z"), t);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05+00"), t);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05 UTC"), t);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05.5"), t + 500000);
  EXPECT_EQ(parse_time("2024-01-02T03:04:05+02:00"), t - 2 * 3600 * 1000000LL);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05 +0530"), t - (5 * 3600 + 30 * 60) * 1000000LL);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05-08"), t + 8 * 3600 * 1000000LL);
  EXPECT_EQ(parse_time("2024-01-02 03:04"), t - 5 * 1000000LL);
  EXPECT_EQ(parse_time("2024-01-02 03:04:05.1234567"), t + 123457);  // rounded
  EXPECT_EQ(parse_time("2024-01-02 24:00:00"), t - (3 * 3600 + 4 * 60 + 5) * 1000000LL + kDay);
  EXPECT_EQ(parse_time("2024-02-29"), parse_time("2024-03-01").value() - kDay);
}

TEST(Time, ParseRefusesInvalidDatesAndSyntax) {
  for (const char* bad :
       {"", "abc", "2024-13-01", "2024-00-10", "2024-02-30", "2023-02-29", "1900-02-29",
        "2024-01-02 25:00", "2024-01-02 24:00:01", "2024-01-02 03:60", "2024-01-02x",
        "2024-01-02 03:04:05+16", "2024-01-02 03:04:05.", "24-01-02", "2024-1-2 3:4",
        "2024-01-02 03:04:05 +053", "0000-01-01 BC", "now"}) {
    EXPECT_EQ(parse_time(bad), std::nullopt) << bad;
  }
}

TEST(Time, BinaryEpochIs2000) {
  const db::ValueView at2000 = db::ValueView::time(k2000);
  EXPECT_EQ(encode_ok(at2000, oid::kTimestamptz, 1), bytes_of(ByteBuilder().i64(0)));
  EXPECT_EQ(encode_ok(at2000, oid::kDate, 1), bytes_of(ByteBuilder().i32(0)));
  // Before 1970: still days and micros relative to 2000, rounded down for dates.
  const db::ValueView before = db::ValueView::time(-1);
  EXPECT_EQ(encode_ok(before, oid::kTimestamp, 1), bytes_of(ByteBuilder().i64(-k2000 - 1)));
  EXPECT_EQ(encode_ok(before, oid::kDate, 1), bytes_of(ByteBuilder().i32(-10958)));
  EXPECT_EQ(encode_ok(db::ValueView::time(INT64_MAX), oid::kDate, 1),
            bytes_of(ByteBuilder().i32(INT32_MAX)));
  EXPECT_EQ(encode_ok(db::ValueView::time(INT64_MIN), oid::kTimestamptz, 1),
            bytes_of(ByteBuilder().i64(INT64_MIN)));
}

}  // namespace
}  // namespace wirepool::pg
