#pragma once
// Bind parameters: PostgreSQL's text and binary input forms decoded into the
// driver contract's values, with PostgreSQL's SQLSTATEs for what does not fit.

#include <cstdint>
#include <optional>
#include <string_view>

#include "sql/types.hpp"

namespace wirepool::pg {

/// A decoded parameter.
struct DecodedParam {
  db::Value value;
  bool untyped = false;  ///< OID 0 / unknown in text format: let the backend convert
};
/// Decodes one Bind parameter declared as `type_oid` (0 = unspecified) in
/// `format`. Text of an unspecified type stays untyped text; binary of an
/// unspecified type is Bytes. Malformed input answers an error with SQLSTATE
/// 22P02 (text) or 22P03 (binary).
db::Result<DecodedParam> decode_param(std::optional<std::string_view> bytes, uint32_t type_oid,
                                      int16_t format);

}  // namespace wirepool::pg
