#pragma once
// PostgreSQL arrays: the text form ("{1,2,NULL}", "{{a,\"b c\"},{d,e}}",
// "[0:1]={x,y}") turned into the binary form, for the element types
// types.hpp converts. A libpq result fetched as text for a client that asked
// some columns in binary (PgJDBC binary-transfers int4[] and others).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wirepool::pg {

/// The element type of a built-in array type (1007 int4[] -> 23), or nullopt.
std::optional<uint32_t> array_element(uint32_t array_oid);

/// Appends the binary form of `text`, an array of type `array_oid`, to `out`.
/// False with `why` set when the text is malformed, the type is not an array
/// of a convertible element type, or an element does not convert.
bool array_text_to_binary(std::string_view text, uint32_t array_oid, std::string& out,
                          std::string* why);

}  // namespace wirepool::pg
