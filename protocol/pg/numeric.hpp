#pragma once
// numeric: PostgreSQL's decimal model, its text form and its binary form
// (int16 ndigits, int16 weight, uint16 sign, uint16 dscale, base-10000 digits).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sql/types.hpp"

namespace wirepool::pg {

/// Canonical decimal text (optional sign, digits, optional point and digits) ->
/// numeric binary format, and back. nullopt if not a decimal ("NaN" is accepted).
std::optional<std::string> numeric_to_binary(std::string_view decimal_text);
std::optional<std::string> numeric_from_binary(std::string_view bytes);

/// For the other value files of protocol/pg/.
namespace detail {

/// A decimal in PostgreSQL's model: sign, integer digits, exactly dscale
/// fraction digits, or a special value.
struct Decimal {
  enum class Special : uint8_t { none, nan, pinf, ninf };
  Special special = Special::none;
  bool neg = false;
  std::string int_digits;   ///< no leading zeros; empty for |x| < 1
  std::string frac_digits;  ///< exactly dscale digits

  bool is_zero() const {
    return int_digits.empty() &&
           std::all_of(frac_digits.begin(), frac_digits.end(), [](char c) { return c == '0'; });
  }
};

/// PostgreSQL numeric_in: [+-]digits[.digits][e[+-]digits], NaN, [+-]Infinity, [+-]inf.
/// nullopt on a syntax error; `range` is set when the value is outside numeric's limits.
std::optional<Decimal> parse_decimal(std::string_view text, bool* range = nullptr);
void append_decimal_text(std::string& out, const Decimal& d);
void append_decimal_binary(std::string& out, const Decimal& d);
/// PostgreSQL numeric_recv, then numeric_out: digits hidden by dscale are dropped.
std::optional<std::string> decimal_text_from_binary(std::string_view b);

}  // namespace detail
}  // namespace wirepool::pg
