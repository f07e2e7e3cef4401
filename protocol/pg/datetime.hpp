#pragma once
// Dates and times: PostgreSQL's ISO text forms (DateStyle ISO, TimeZone UTC) and
// its binary epoch (2000-01-01), in the proleptic Gregorian calendar.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sql/types.hpp"

namespace wirepool::pg {

/// "YYYY-MM-DD HH:MM:SS[.ffffff]" followed by "+00" when `with_zone`; "YYYY-MM-DD" for dates.
std::string format_time(int64_t micros_since_epoch, db::TimeForm form);
/// Parses PostgreSQL's ISO input forms ("2024-01-02", "2024-01-02 03:04:05.5",
/// "2024-01-02T03:04:05+02:00", "... +0530", "... Z"); time without a zone is UTC.
std::optional<int64_t> parse_time(std::string_view text);

/// PgJDBC's setDate text, "YYYY-MM-DD +HH[:MM[:SS]]" (a date and a zone offset,
/// no time; sent untyped), as "YYYY-MM-DD": what PostgreSQL stores for it in a
/// date, timestamp or timestamptz at UTC. nullopt for any other text (BC dates included).
std::optional<std::string> date_of_zoned_date(std::string_view text);

/// For the other value files of protocol/pg/.
namespace detail {

struct Civil {
  int64_t y;
  unsigned m, d;
};

int64_t days_from_civil(int64_t y, unsigned m, unsigned d);
Civil civil_from_days(int64_t z);
bool is_leap(int64_t y);
unsigned days_in_month(int64_t y, unsigned m);
int64_t floor_div(int64_t a, int64_t b);
void append_padded(std::string& out, uint64_t v, int width);
void append_time(std::string& out, int64_t micros, db::TimeForm form);
/// Reads 1..max_digits decimal digits at `i`.
bool read_digits(std::string_view s, size_t& i, size_t min_digits, size_t max_digits, int64_t& v);
bool starts_with_ci(std::string_view s, size_t i, std::string_view word);
/// The ISO forms of PostgreSQL's datetime input. `ignore_zone` reads a zone
/// but drops it, as timestamp without time zone does.
std::optional<int64_t> parse_time_impl(std::string_view text, bool ignore_zone);
/// Contract micros -> PostgreSQL binary timestamp (micros since 2000).
std::optional<int64_t> to_pg_timestamp(int64_t micros);
/// Contract micros -> PostgreSQL binary date (days since 2000).
int32_t to_pg_date(int64_t micros);

}  // namespace detail
}  // namespace wirepool::pg
