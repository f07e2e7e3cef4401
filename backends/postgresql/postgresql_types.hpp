#pragma once
// PostgreSQL driver internals: values between PostgreSQL's formats and the
// contract (pure functions, no connection).
//
// Results (non-native mode) are fetched in binary and decoded by type OID:
// bool -> Bool; int2/int4/int8/oid -> I64; float4/float8 -> F64; numeric ->
// Decimal at its stored scale (NaN, Infinity, -Infinity -> Text);
// text/varchar/bpchar/name/"char"/json/xml -> Text; jsonb -> Text (version byte
// stripped); bytea -> Bytes; date/timestamp/timestamptz -> Time (by TimeForm);
// uuid -> Text (8-4-4-4-12, lower case); anything else -> Bytes holding its
// binary representation. Multi-statement text runs on the simple protocol,
// whose results are text: the same kinds are parsed from text, and other types
// are Bytes holding their text representation.
//
// Parameters: native ones pass through; unprepared statements send natural
// types (Text as OID 0 so the server types it); prepared statements encode
// into the types the server chose, with range checks.

#include <libpq-fe.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::postgresql {

/// How a column's values are read in non-native mode.
enum class Read : uint8_t {
  boolean,
  int2,
  int4,
  int8,
  oid,
  float4,
  float8,
  numeric,
  text,
  jsonb,
  bytea,
  date,
  timestamp,
  timestamptz,
  uuid,
  other,
};

Read read_for_oid(uint32_t type_oid);
/// The contract kind of a type (Null = unknown: the backend converts from text).
db::Kind kind_for_oid(uint32_t type_oid);
/// PostgreSQL's short name of a built-in type ("int4", "numeric"), empty if unknown.
std::string_view type_name(uint32_t type_oid);

/// A result column as PostgreSQL described it (RowDescription's fields).
db::Column make_column(std::string name, uint32_t type_oid, int32_t typmod, uint32_t table_oid,
                       int16_t column, int16_t typlen, int16_t format);

/// numeric's typmod -> (precision, scale); scale may be negative (PostgreSQL 15).
/// nullopt for -1 (unconstrained).
std::optional<std::pair<int32_t, int32_t>> numeric_typmod(int32_t typmod);

/// Decodes one value in `format` (0 text, 1 binary). Strings that must be built
/// (numeric, uuid, parsed text) go to `scratch`, which `out` may point into;
/// the others point into `bytes`. Malformed bytes answer 22P03 (binary) or 22P02.
std::optional<db::Error> decode_value(Read how, uint32_t type_oid, int16_t format,
                                      std::string_view bytes, std::string& scratch,
                                      db::ValueView& out);

/// The N-byte big-endian integer at the start of `b` (its size checked by the
/// caller): one load and a byte swap.
template <size_t N>
uint64_t load_be(std::string_view b) {
  if constexpr (N == 2) {
    uint16_t v;
    std::memcpy(&v, b.data(), 2);
    return __builtin_bswap16(v);
  } else if constexpr (N == 4) {
    uint32_t v;
    std::memcpy(&v, b.data(), 4);
    return __builtin_bswap32(v);
  } else {
    static_assert(N == 8);
    uint64_t v;
    std::memcpy(&v, b.data(), 8);
    return __builtin_bswap64(v);
  }
}

/// The kinds a scan meets most in binary (int2, int4, int8, float8, text),
/// decoded inline in the reader's row loop: true when `how` is one of them
/// and `b` has its size. false leaves the value to decode_value, which
/// decodes every kind and answers the errors (a wrong size included); it
/// calls this first, so each of these kinds is decoded in one place.
inline bool decode_binary_fast(Read how, std::string_view b, db::ValueView& out) {
  switch (how) {
    case Read::int2:
      if (b.size() != 2) return false;
      out = db::ValueView::int64(static_cast<int16_t>(load_be<2>(b)));
      return true;
    case Read::int4:
      if (b.size() != 4) return false;
      out = db::ValueView::int64(static_cast<int32_t>(load_be<4>(b)));
      return true;
    case Read::int8:
      if (b.size() != 8) return false;
      out = db::ValueView::int64(static_cast<int64_t>(load_be<8>(b)));
      return true;
    case Read::float8:
      if (b.size() != 8) return false;
      out = db::ValueView::float64(std::bit_cast<double>(load_be<8>(b)));
      return true;
    case Read::text:
      out = db::ValueView::text(b);
      return true;
    default:
      return false;
  }
}

/// Parameters in the arrays PQsendQueryParams / PQsendQueryPrepared take.
class ParamBuffer {
 public:
  /// A native parameter (pg_format >= 0): OID, bytes and format as they are.
  std::optional<db::Error> add_native(const db::Param& p);
  /// An unprepared statement's parameter in its natural type: Bool bool, I64
  /// int8, F64 float8, Bytes bytea, Time timestamptz (binary); U64 and Decimal
  /// numeric (text); Text and untyped text OID 0 (text); Null NULL.
  std::optional<db::Error> add_natural(const db::Param& p);
  /// A prepared statement's parameter encoded into `server_oid` (the type the
  /// server chose): range-checked (22003), malformed text 22P02. Text goes as
  /// text for the server to parse; other kinds in binary where the type has a
  /// known binary form, else as text.
  std::optional<db::Error> add_typed(const db::Param& p, uint32_t server_oid);

  /// Builds the pointer arrays; call after the last add and before the getters.
  void finish();
  /// Empties the buffer for the next statement, keeping its allocations so
  /// that a statement's parameters allocate nothing, unless it grew past
  /// 64 KiB for a large value.
  void clear();
  /// This thread's buffer, cleared: the driver fills it and sends it in one
  /// call (libpq copies the values), so one per thread serves every statement.
  static ParamBuffer& reused();
  int count() const { return static_cast<int>(types_.size()); }
  const Oid* types() const { return types_.data(); }
  const char* const* values() const { return ptrs_.data(); }
  const int* lengths() const { return lengths_.data(); }
  const int* formats() const { return formats_.data(); }

 private:
  void add_null(uint32_t type_oid);
  /// Appends bytes (the last added by encode_value) as one value.
  std::optional<db::Error> close_value(size_t mark, uint32_t type_oid, int16_t format);

  std::string data_;  // every value, each followed by a NUL (libpq reads text with strlen)
  std::vector<size_t> offsets_;
  std::vector<Oid> types_;
  std::vector<int> lengths_;
  std::vector<int> formats_;
  std::vector<bool> nulls_;
  std::vector<const char*> ptrs_;
};

/// The result format to fetch in native mode: binary when every requested
/// format is 1 (or the single one is), else text. Non-native mode: binary.
int result_format_for(const db::QueryOptions& options);

/// PostgreSQL's command tag -> (verb, affected rows): "INSERT 0 3" -> ("INSERT", 3);
/// affected is -1 except for INSERT, UPDATE, DELETE, MERGE and COPY.
std::pair<std::string, int64_t> parse_command_tag(std::string_view tag);

}  // namespace wirepool::postgresql
