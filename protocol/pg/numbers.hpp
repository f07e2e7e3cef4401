#pragma once
// Integers, booleans and floats in PostgreSQL's text forms (int8in, parse_bool,
// float8in / float8out with extra_float_digits >= 1).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sql/types.hpp"

namespace wirepool::pg {

/// Shortest text that reads back as the same double; "Infinity", "-Infinity", "NaN".
std::string format_float8(double v);

/// For the other value files of protocol/pg/.
namespace detail {

enum class Parse : uint8_t { ok, syntax, range };

/// PostgreSQL int8in: optional sign and decimal digits, surrounded by whitespace.
Parse parse_int64(std::string_view text, int64_t& out);
/// PostgreSQL parse_bool: t/true/y/yes/on/1 and f/false/n/no/off/0, any unique
/// prefix of the words, case-insensitive, surrounded by whitespace.
std::optional<bool> parse_bool(std::string_view text);
/// PostgreSQL float4in/float8in: decimal or exponent form, NaN, [+-]Infinity,
/// [+-]inf; surrounding whitespace; overflow and underflow to zero are range errors.
template <class F>
Parse parse_float(std::string_view text, F& out);
void append_float8(std::string& out, double v);
void append_float4(std::string& out, float v);

}  // namespace detail
}  // namespace wirepool::pg
