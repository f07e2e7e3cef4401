#pragma once
// bytea's text forms (hex output; hex and escape input) and uuid's.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sql/types.hpp"

namespace wirepool::pg {

/// "\\x0a0b..." <-> raw bytes (bytea hex format; the escape format is accepted on input).
std::string bytea_to_hex(std::string_view raw);
std::optional<std::string> bytea_from_text(std::string_view text);

/// For the other value files of protocol/pg/.
namespace detail {

int hex_value(char c);
void append_bytea_hex(std::string& out, std::string_view raw);
/// PostgreSQL string_to_uuid: 32 hex digits, a hyphen allowed after any group
/// of four, optionally inside braces.
std::optional<std::array<uint8_t, 16>> parse_uuid(std::string_view text);
void append_uuid_text(std::string& out, const uint8_t* u);

}  // namespace detail
}  // namespace wirepool::pg
