// Binding parameters to markers: one row (bind_params), its buffers kept by
// the statement handle across executions.

#include <algorithm>

#include "backends/odbc/odbc_internal.hpp"

namespace wirepool::odbc::detail {

Binding binding_of(db::Kind kind, size_t size, int32_t scale) {
  switch (kind) {
    case db::Kind::Null:  // a VARCHAR NULL: every verified driver converts it
      return {};
    case db::Kind::Bool:
      return {SQL_C_BIT, SQL_BIT, 1, 0};
    case db::Kind::I64:
      return {SQL_C_SBIGINT, SQL_BIGINT, 19, 0};
    case db::Kind::U64:
      // Beyond INT64_MAX a BIGINT parameter cannot carry it: exact digits.
      return {SQL_C_CHAR, SQL_DECIMAL, 20, 0};
    case db::Kind::F64:
      return {SQL_C_DOUBLE, SQL_DOUBLE, 15, 0};
    case db::Kind::Decimal:
      return {SQL_C_CHAR, SQL_NUMERIC, std::max<size_t>(size, 1), static_cast<SQLSMALLINT>(scale)};
    case db::Kind::Text:
      // In steps of 256 characters, so values of different lengths share a binding.
      return {SQL_C_WCHAR, static_cast<SQLSMALLINT>(size > 4000 ? SQL_WLONGVARCHAR : SQL_WVARCHAR),
              (std::max<size_t>(size, 1) + 255) / 256 * 256, 0};
    case db::Kind::Bytes:
      return {SQL_C_BINARY,
              static_cast<SQLSMALLINT>(size > 8000 ? SQL_LONGVARBINARY : SQL_VARBINARY),
              std::max<size_t>(size, 1), 0};
    case db::Kind::Time:
      return {SQL_C_TYPE_TIMESTAMP, SQL_TYPE_TIMESTAMP, 26, 6};
  }
  return {};
}

std::pair<size_t, int32_t> decimal_shape(std::string_view text) {
  size_t ndigits = 0;
  for (char c : text)
    ndigits += c >= '0' && c <= '9';
  const size_t point = text.find('.');
  return {ndigits,
          point == std::string_view::npos ? 0 : static_cast<int32_t>(text.size() - point - 1)};
}

namespace {

/// Binds marker i (0-based) to `v` into `slot`: SQLBindParameter unless the
/// slot's binding (type, size, buffer) stays the same. Out of line: a
/// prepared statement run again with values of the same kinds never gets here
/// (bind_params).
[[gnu::noinline]] Status bind_slot(Session& s, SQLHSTMT h, size_t i, const db::Value& v,
                                   ParamBuffers::Slot& slot) {
  Binding bd;
  SQLPOINTER data = nullptr;
  SQLLEN buffer_length = 0;
  switch (v.kind) {
    case db::Kind::Null:
      slot.ind = SQL_NULL_DATA;
      data = slot.bytes.data();
      break;
    case db::Kind::Bool:
      slot.bit = v.b ? 1 : 0;
      slot.ind = 0;
      bd = binding_of(v.kind);
      data = &slot.bit;
      break;
    case db::Kind::I64:
      slot.i64 = v.i64;
      slot.ind = 0;
      bd = binding_of(v.kind);
      data = &slot.i64;
      break;
    case db::Kind::U64:
      slot.bytes = std::to_string(v.u64);
      slot.ind = static_cast<SQLLEN>(slot.bytes.size());
      bd = binding_of(v.kind);
      data = slot.bytes.data();
      buffer_length = slot.ind;
      break;
    case db::Kind::F64:
      slot.f64 = v.f64;
      slot.ind = 0;
      bd = binding_of(v.kind);
      data = &slot.f64;
      break;
    case db::Kind::Decimal: {
      slot.bytes = v.str;
      slot.ind = static_cast<SQLLEN>(slot.bytes.size());
      const auto [ndigits, scale] = decimal_shape(v.str);
      bd = binding_of(v.kind, ndigits, scale);
      data = slot.bytes.data();
      buffer_length = slot.ind;
      break;
    }
    case db::Kind::Text: {
      std::u16string& units = slot.units;
      // UTF-8 never takes more UTF-16 units than bytes: the room suffices.
      if (units.size() < std::max<size_t>(v.str.size(), 256)) {
        units.resize(std::max<size_t>(v.str.size(), 256));
      }
      const size_t n = to_utf16(v.str, units.data(), units.size());
      if (n == kNoRoom) {
        return protocol_error("22021", "invalid byte sequence for encoding \"UTF8\"");
      }
      slot.ind = static_cast<SQLLEN>(n * 2);
      bd = binding_of(v.kind, n);
      data = units.data();
      buffer_length = static_cast<SQLLEN>(units.size() * 2);
      break;
    }
    case db::Kind::Bytes:
      slot.bytes = v.str;
      slot.ind = static_cast<SQLLEN>(slot.bytes.size());
      bd = binding_of(v.kind, slot.bytes.size());
      data = slot.bytes.data();
      buffer_length = slot.ind;
      break;
    case db::Kind::Time:
      slot.ts = timestamp_of(v.micros);
      slot.ind = 0;
      bd = binding_of(v.kind);
      data = &slot.ts;
      break;
  }
  const SQLSMALLINT c_type = bd.c_type;
  const SQLSMALLINT sql_type = bd.sql_type;
  const SQLULEN column_size = bd.column_size;
  const SQLSMALLINT digits = bd.digits;
  if (slot.bound && slot.c_type == c_type && slot.sql_type == sql_type &&
      slot.column_size == column_size && slot.digits == digits && slot.data == data &&
      slot.buffer_length == buffer_length) {
    slot.kind = v.kind;
    return {};  // the same binding: the new value is already in its buffer
  }
  const SQLRETURN rc =
      SQLBindParameter(h, static_cast<SQLUSMALLINT>(i + 1), SQL_PARAM_INPUT, c_type, sql_type,
                       column_size, digits, data, buffer_length, &slot.ind);
  if (!ok(rc)) {
    slot.bound = false;
    return s.stmt_error(h);
  }
  slot.bound = true;
  slot.kind = v.kind;
  slot.c_type = c_type;
  slot.sql_type = sql_type;
  slot.column_size = column_size;
  slot.digits = digits;
  slot.data = data;
  slot.buffer_length = buffer_length;
  return {};
}

}  // namespace

Status bind_params(Session& s, SQLHSTMT h, db::Params params, const std::vector<size_t>& binds,
                   ParamBuffers& buf) {
  if (buf.slots.size() != binds.size()) [[unlikely]] {
    SQLFreeStmt(h, SQL_RESET_PARAMS);
    buf.slots.assign(binds.size(), {});
  }
  for (size_t i = 0; i < binds.size(); ++i) {
    const db::Param& p = params[binds[i]];
    if (p.pg_format >= 0) [[unlikely]] {
      return Error::unsupported("the odbc driver takes no native PostgreSQL parameters");
    }
    const db::Value& v = p.value;
    auto& slot = buf.slots[i];
    if (slot.bound && slot.kind == v.kind) [[likely]] {
      // The kind bound last time: only the value moves, into the same buffer.
      switch (v.kind) {
        case db::Kind::I64:
          slot.i64 = v.i64;
          continue;
        case db::Kind::F64:
          slot.f64 = v.f64;
          continue;
        case db::Kind::Bool:
          slot.bit = v.b ? 1 : 0;
          continue;
        case db::Kind::Time:
          slot.ts = timestamp_of(v.micros);
          continue;
        case db::Kind::Text:
          // Converted into the bound buffer; the binding holds while the
          // length stays in the bound column size's step (binding_of). Text
          // too long for the buffer, or invalid UTF-8, goes on to bind_slot.
          if (const size_t n = to_utf16(v.str, slot.units.data(), slot.units.size());
              n != kNoRoom) {
            const Binding bd = binding_of(db::Kind::Text, n);
            if (bd.column_size == slot.column_size && bd.sql_type == slot.sql_type) {
              slot.ind = static_cast<SQLLEN>(n * 2);
              continue;
            }
          }
          break;
        default:
          break;
      }
    }
    if (auto st = bind_slot(s, h, i, v, slot); !st.ok()) return st;
  }
  return {};
}

}  // namespace wirepool::odbc::detail
