#pragma once
// TDS data types, sans-I/O ([MS-TDS] 2.2.5.4 - 2.2.5.6): TYPE_INFO, values,
// UCS-2 text, collations, and the mapping from the driver contract's columns
// and values (sql/types.hpp) to TDS types. No sockets, no logging.
//
// Decoders take a byte span and answer {ok, need_more, error} with how many
// bytes they consumed; encoders append to a std::string. A value that does not
// fit the declared type is an error, never silently rounded or truncated.
// See docs/tds.md for the type mapping table and the reasons behind it.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "sql/types.hpp"

namespace wirepool::tds {

using Bytes = std::span<const uint8_t>;

/// A view of a std::string's bytes (the assembler hands out payloads as strings).
inline Bytes as_bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

enum class DecodeStatus : uint8_t { ok, need_more, error };

/// The outcome of one decode call (the protocol/pg/ convention).
template <class M>
struct Decoded {
  DecodeStatus status = DecodeStatus::need_more;
  M message{};
  size_t consumed = 0;  ///< bytes of the input that make up `message` (0 unless ok)
  /// need_more: the input must hold at least this many bytes before another
  /// call can get further (0: unknown), so a large value is not decoded again
  /// after every packet.
  size_t needed = 0;
  std::string error;  ///< what was wrong (status == error), for the client and the log
  /// status == error because a value passed Limits::max_value (the input
  /// itself may be well formed).
  bool over_limit = false;
};

/// Size caps applied while decoding values (PLP reassembly, strings).
struct Limits {
  /// The largest value (a PLP value after reassembly, or any other) accepted.
  size_t max_value = 64u << 20;
  /// max_value counts a UCS-2 (N type) value as UTF-8: its wire bytes may reach
  /// twice max_value, since each UTF-16 unit is at least one UTF-8 byte.
  bool ucs2_as_utf8 = false;
};

// ---------------------------------------------------------------------------
// Type bytes ([MS-TDS] 2.2.5.4)

namespace type {
inline constexpr uint8_t kNull = 0x1F;
inline constexpr uint8_t kInt1 = 0x30;
inline constexpr uint8_t kBit = 0x32;
inline constexpr uint8_t kInt2 = 0x34;
inline constexpr uint8_t kInt4 = 0x38;
inline constexpr uint8_t kDateTim4 = 0x3A;  ///< SMALLDATETIME
inline constexpr uint8_t kFlt4 = 0x3B;
inline constexpr uint8_t kMoney = 0x3C;
inline constexpr uint8_t kDateTime = 0x3D;
inline constexpr uint8_t kFlt8 = 0x3E;
inline constexpr uint8_t kMoney4 = 0x7A;
inline constexpr uint8_t kInt8 = 0x7F;
inline constexpr uint8_t kGuid = 0x24;
inline constexpr uint8_t kIntN = 0x26;
inline constexpr uint8_t kDateN = 0x28;
inline constexpr uint8_t kTimeN = 0x29;
inline constexpr uint8_t kDateTime2N = 0x2A;
inline constexpr uint8_t kDateTimeOffsetN = 0x2B;
inline constexpr uint8_t kBitN = 0x68;
inline constexpr uint8_t kDecimalN = 0x6A;
inline constexpr uint8_t kNumericN = 0x6C;
inline constexpr uint8_t kFltN = 0x6D;
inline constexpr uint8_t kMoneyN = 0x6E;
inline constexpr uint8_t kDateTimN = 0x6F;
inline constexpr uint8_t kBigVarBinary = 0xA5;
inline constexpr uint8_t kBigVarChar = 0xA7;
inline constexpr uint8_t kBigBinary = 0xAD;
inline constexpr uint8_t kBigChar = 0xAF;
inline constexpr uint8_t kNVarChar = 0xE7;
inline constexpr uint8_t kNChar = 0xEF;
inline constexpr uint8_t kXml = 0xF1;
inline constexpr uint8_t kImage = 0x22;  ///< legacy: refused (see docs/tds.md)
inline constexpr uint8_t kText = 0x23;   ///< legacy: refused
inline constexpr uint8_t kNText = 0x63;  ///< legacy: refused
}  // namespace type

/// The name of a type byte ("NVARCHAR", "INTN", ...), or "0xNN" when unknown.
std::string type_name(uint8_t type_byte);

/// A 5-byte SQL collation ([MS-TDS] 2.2.5.1.2): LCID (20 bits), flags (8),
/// version (4), sort id (8).
struct Collation {
  std::array<uint8_t, 5> bytes{};
  /// The fUTF8 flag: 8-bit text in this collation is UTF-8 (SQL Server 2019+ _UTF8).
  bool utf8() const { return (bytes[3] & 0x04) != 0; }
  bool operator==(const Collation&) const = default;
};

/// wirepool's default collation: SQL_Latin1_General_CP1_CI_AS (LCID 0x0409,
/// flags ignore case/kana/width, sort id 52), the SQL Server installation
/// default most clients expect. Its 8-bit code page is cp1252. The server may
/// configure another one; every encoder takes the collation as a parameter.
inline constexpr Collation kDefaultCollation{{0x09, 0x04, 0xD0, 0x00, 0x34}};

/// The largest length of a bounded USHORTLEN type (NVARCHAR(4000) = 8000 bytes).
inline constexpr uint16_t kMaxShortLen = 8000;
/// USHORTLEN max length meaning "(MAX)": the value travels as PLP.
inline constexpr uint16_t kPlpMarker = 0xFFFF;

/// A TYPE_INFO: the type byte and what follows it.
struct TypeInfo {
  uint8_t type = type::kNVarChar;
  /// Declared length in bytes: the BYTELEN/USHORTLEN max length (kPlpMarker =
  /// (MAX), sent as PLP). For the fixed-length types, their size.
  uint32_t max_length = 0;
  uint8_t precision = 0;  ///< DECIMALN / NUMERICN
  uint8_t scale = 0;      ///< DECIMALN / NUMERICN, TIMEN / DATETIME2N / DATETIMEOFFSETN
  Collation collation{};  ///< BIGVARCHAR, BIGCHAR, NVARCHAR, NCHAR
  /// True when values are PLP (partially length-prefixed): the (MAX) types and XML.
  bool plp() const;
  bool operator==(const TypeInfo&) const = default;
};

/// A decoded value with the TDS type it was sent as, so callers know its
/// precision, scale and length.
struct TypedValue {
  TypeInfo type;
  /// Null, Bool, I64, F64, Text (UTF-8), Bytes, Time (micros since the epoch,
  /// UTC) or Decimal (exact text at the declared scale). TIMEN (a time of day
  /// without a date) decodes to Text "HH:MM:SS[.fffffff]"; GUID to canonical
  /// upper-case text; MONEY to Decimal with scale 4.
  db::Value value;
  /// DATETIMEOFFSETN: the offset the client sent (value is UTC). DATEN, DATETIME2N,
  /// DATETIME, SMALLDATETIME: value is the wall-clock time read as UTC.
  int16_t offset_minutes = 0;
  /// The form of a Time value: timestamptz (DATETIMEOFFSETN), date (DATEN),
  /// timestamp (the others).
  db::TimeForm time_form = db::TimeForm::timestamp;
};

/// Decodes a TYPE_INFO (as in RPC parameters, COLMETADATA and RETURNVALUE).
/// Unknown or refused type bytes are errors naming the byte.
Decoded<TypeInfo> decode_type_info(Bytes in);
/// Appends a TYPE_INFO.
void encode_type_info(std::string& out, const TypeInfo& t);

/// Decodes one value of type `t` (the length prefix, NULL forms and PLP chunks
/// included). need_more when `in` ends inside it.
Decoded<TypedValue> decode_value(const TypeInfo& t, Bytes in, const Limits& limits = {});

/// Appends `v` as a value of type `t`: Text to the character types (UCS-2 for
/// N types, the collation's 8-bit code page otherwise), Bytes to binary types,
/// I64/U64/Bool/F64/Decimal/Time to their TDS counterparts, NULL to every
/// type. A value that does not fit (a string longer than a bounded type, a
/// decimal with more digits than the precision, an integer out of range, a
/// Text value that is not a valid literal for a numeric/temporal type) is an
/// error (SQLSTATE 22001 / 22003 / 22007 / 22P02), never silently altered.
db::Status encode_value(std::string& out, const TypeInfo& t, const db::ValueView& v);

/// The bytes a NULL of type `t` takes in a ROW (NBCROW saves them).
size_t null_size(const TypeInfo& t);

/// The TDS type a result column is sent as (DESIGN.md "Mapping between
/// protocols"; docs/tds.md has the table and the reasons). COLMETADATA goes
/// out before the rows, so the type is decided from the column alone; for a
/// Decimal column without a declared scale, `sample` (the first row's value,
/// when the caller has it) gives the scale, else DECIMALN(38,18) is used.
TypeInfo column_type(const db::Column& c, const Collation& collation = kDefaultCollation,
                     const db::ValueView* sample = nullptr);

// ---------------------------------------------------------------------------
// Text

/// UTF-8 -> UCS-2LE (UTF-16LE: characters above U+FFFF become surrogate pairs).
/// Appends to `out`; false (and `error` set) on invalid UTF-8.
bool utf8_to_ucs2(std::string_view utf8, std::string& out, std::string* error = nullptr);
/// UCS-2LE (UTF-16LE) -> UTF-8. Appends to `out`; false (and `error` set) on an
/// odd byte count or an unpaired surrogate.
bool ucs2_to_utf8(Bytes ucs2, std::string& out, std::string* error = nullptr);
/// cp1252 (Windows Latin-1) -> UTF-8; the five undefined bytes (0x81, 0x8D, 0x8F,
/// 0x90, 0x9D) map to the C1 controls of the same value, as Windows does.
void cp1252_to_utf8(Bytes in, std::string& out);
/// UTF-8 -> cp1252; false when a character has no cp1252 byte.
bool utf8_to_cp1252(std::string_view utf8, std::string& out);

// ---------------------------------------------------------------------------
// Helpers shared with the codec and tests

/// GUID wire bytes (mixed-endian) <-> canonical upper-case text
/// "6F9619FF-8B86-D011-B42D-00C04FC964FF". parse_guid accepts either case and
/// optional braces; false on anything else.
std::string guid_to_text(Bytes wire16);
bool parse_guid(std::string_view text, std::string& wire16);

/// DECIMALN magnitude (little-endian, up to 16 bytes) and sign -> exact text at
/// `scale` ("-12345.678").
std::string decimal_to_text(bool negative, Bytes magnitude_le, uint8_t scale);

}  // namespace wirepool::tds
