// TYPE_INFO, type names and the db::Column -> TDS type mapping (types.hpp).
#include "protocol/tds/types.hpp"

#include <cstring>

#include "protocol/tds/value_util.hpp"

namespace wirepool::tds {

using namespace detail;

namespace {

/// The base name of a native type ("VARCHAR(20)" -> "varchar", "int4" -> "int4").
std::string base_name(std::string_view name) {
  std::string s;
  for (char c : name) {
    if (c == '(' || c == ' ') break;
    s.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------

std::string type_name(uint8_t t) {
  switch (t) {
    case type::kNull:
      return "NULLTYPE";
    case type::kInt1:
      return "TINYINT";
    case type::kBit:
      return "BIT";
    case type::kInt2:
      return "SMALLINT";
    case type::kInt4:
      return "INT";
    case type::kDateTim4:
      return "SMALLDATETIME";
    case type::kFlt4:
      return "REAL";
    case type::kMoney:
      return "MONEY";
    case type::kDateTime:
      return "DATETIME";
    case type::kFlt8:
      return "FLOAT";
    case type::kMoney4:
      return "SMALLMONEY";
    case type::kInt8:
      return "BIGINT";
    case type::kGuid:
      return "UNIQUEIDENTIFIER";
    case type::kIntN:
      return "INTN";
    case type::kDateN:
      return "DATE";
    case type::kTimeN:
      return "TIME";
    case type::kDateTime2N:
      return "DATETIME2";
    case type::kDateTimeOffsetN:
      return "DATETIMEOFFSET";
    case type::kBitN:
      return "BITN";
    case type::kDecimalN:
      return "DECIMAL";
    case type::kNumericN:
      return "NUMERIC";
    case type::kFltN:
      return "FLTN";
    case type::kMoneyN:
      return "MONEYN";
    case type::kDateTimN:
      return "DATETIMN";
    case type::kBigVarBinary:
      return "VARBINARY";
    case type::kBigVarChar:
      return "VARCHAR";
    case type::kBigBinary:
      return "BINARY";
    case type::kBigChar:
      return "CHAR";
    case type::kNVarChar:
      return "NVARCHAR";
    case type::kNChar:
      return "NCHAR";
    case type::kXml:
      return "XML";
    case type::kImage:
      return "IMAGE";
    case type::kText:
      return "TEXT";
    case type::kNText:
      return "NTEXT";
    default:
      return "0x" + hex2(t);
  }
}

bool TypeInfo::plp() const {
  return type == type::kXml || (is_ushort_type(type) && max_length == kPlpMarker);
}

Decoded<TypeInfo> decode_type_info(Bytes in) {
  Reader r(in);
  TypeInfo t;
  t.type = r.u8();
  if (!r.ok()) return need_more<TypeInfo>();
  const uint8_t ty = t.type;
  const size_t fixed = fixed_size(ty);
  if (fixed != SIZE_MAX) {
    t.max_length = static_cast<uint32_t>(fixed);
  } else {
    switch (ty) {
      case type::kIntN:
      case type::kBitN:
      case type::kFltN:
      case type::kMoneyN:
      case type::kDateTimN:
      case type::kGuid: {
        t.max_length = r.u8();
        if (!r.ok()) return need_more<TypeInfo>();
        const uint32_t n = t.max_length;
        const bool valid = (ty == type::kIntN && (n == 1 || n == 2 || n == 4 || n == 8)) ||
                           (ty == type::kBitN && n == 1) ||
                           ((ty == type::kFltN || ty == type::kMoneyN || ty == type::kDateTimN) &&
                            (n == 4 || n == 8)) ||
                           (ty == type::kGuid && n == 16);
        if (!valid) return fail<TypeInfo>(type_name(ty) + " with length " + std::to_string(n));
        break;
      }
      case type::kDecimalN:
      case type::kNumericN:
        t.max_length = r.u8();
        t.precision = r.u8();
        t.scale = r.u8();
        if (!r.ok()) return need_more<TypeInfo>();
        if (t.precision < 1 || t.precision > 38 || t.scale > t.precision)
          return fail<TypeInfo>(type_name(ty) + "(" + std::to_string(t.precision) + "," +
                                std::to_string(t.scale) + ") is not a valid precision/scale");
        if (t.max_length < decimal_bytes(t.precision) || t.max_length > 17)
          return fail<TypeInfo>(type_name(ty) + " with length " + std::to_string(t.max_length));
        break;
      case type::kDateN:
        t.max_length = 3;
        break;
      case type::kTimeN:
      case type::kDateTime2N:
      case type::kDateTimeOffsetN:
        t.scale = r.u8();
        if (!r.ok()) return need_more<TypeInfo>();
        if (t.scale > 7)
          return fail<TypeInfo>(type_name(ty) + " with scale " + std::to_string(t.scale));
        t.max_length = static_cast<uint32_t>(time_bytes(t.scale) + (ty == type::kTimeN ? 0 : 3) +
                                             (ty == type::kDateTimeOffsetN ? 2 : 0));
        break;
      case type::kBigVarBinary:
      case type::kBigBinary:
      case type::kBigVarChar:
      case type::kBigChar:
      case type::kNVarChar:
      case type::kNChar: {
        t.max_length = r.u16();
        if (is_char_type(ty)) {
          Bytes c = r.take(5);
          if (r.ok()) std::memcpy(t.collation.bytes.data(), c.data(), 5);
        }
        if (!r.ok()) return need_more<TypeInfo>();
        const bool var =
            ty == type::kBigVarBinary || ty == type::kBigVarChar || ty == type::kNVarChar;
        if (t.max_length == kPlpMarker ? !var : t.max_length > kMaxShortLen)
          return fail<TypeInfo>(type_name(ty) + " with length " + std::to_string(t.max_length));
        if ((ty == type::kNVarChar || ty == type::kNChar) && t.max_length != kPlpMarker &&
            t.max_length % 2 != 0)
          return fail<TypeInfo>(type_name(ty) + " with an odd length " +
                                std::to_string(t.max_length));
        break;
      }
      case type::kXml: {
        const uint8_t schema = r.u8();
        if (!r.ok()) return need_more<TypeInfo>();
        if (schema > 1)
          return fail<TypeInfo>("XML TYPE_INFO with schema flag " + std::to_string(schema));
        if (schema == 1) {
          // database, owning schema (B_VARCHAR), collection (US_VARCHAR): skipped.
          const uint8_t a = r.u8();
          r.take(size_t{a} * 2);
          const uint8_t b = r.u8();
          r.take(size_t{b} * 2);
          const uint16_t c = r.u16();
          r.take(size_t{c} * 2);
          if (!r.ok()) return need_more<TypeInfo>();
        }
        t.max_length = kPlpMarker;
        break;
      }
      case type::kImage:
      case type::kText:
      case type::kNText:
        return fail<TypeInfo>("legacy type " + type_name(ty) + " (0x" + hex2(ty) +
                              ") is not supported: use VARCHAR(MAX), NVARCHAR(MAX) or "
                              "VARBINARY(MAX)");
      default:
        return fail<TypeInfo>("unknown TDS type 0x" + hex2(ty));
    }
  }
  Decoded<TypeInfo> d;
  d.status = DecodeStatus::ok;
  d.message = t;
  d.consumed = r.pos();
  return d;
}

void encode_type_info(std::string& out, const TypeInfo& t) {
  wire::put_u8(out, t.type);
  switch (t.type) {
    case type::kIntN:
    case type::kBitN:
    case type::kFltN:
    case type::kMoneyN:
    case type::kDateTimN:
    case type::kGuid:
      wire::put_u8(out, static_cast<uint8_t>(t.max_length));
      break;
    case type::kDecimalN:
    case type::kNumericN:
      wire::put_u8(out, static_cast<uint8_t>(decimal_bytes(t.precision)));
      wire::put_u8(out, t.precision);
      wire::put_u8(out, t.scale);
      break;
    case type::kTimeN:
    case type::kDateTime2N:
    case type::kDateTimeOffsetN:
      wire::put_u8(out, t.scale);
      break;
    case type::kBigVarBinary:
    case type::kBigBinary:
    case type::kBigVarChar:
    case type::kBigChar:
    case type::kNVarChar:
    case type::kNChar:
      wire::put_u16(out, static_cast<uint16_t>(t.max_length));
      if (is_char_type(t.type))
        out.append(reinterpret_cast<const char*>(t.collation.bytes.data()), 5);
      break;
    case type::kXml:
      wire::put_u8(out, 0);  // no schema
      break;
    default:
      break;  // fixed-length types and DATEN: the type byte alone
  }
}

size_t null_size(const TypeInfo& t) {
  if (t.plp()) return 8;
  if (is_ushort_type(t.type)) return 2;
  if (fixed_size(t.type) != SIZE_MAX) return 0;
  return 1;
}

TypeInfo column_type(const db::Column& c, const Collation& collation, const db::ValueView* sample) {
  TypeInfo t;
  const db::NativeType& n = c.native;
  const std::string base = base_name(n.name);
  if (n.pg_oid == 2950 || base == "uuid" || base == "uniqueidentifier") {
    t.type = type::kGuid;
    t.max_length = 16;
    return t;
  }
  switch (c.kind) {
    case db::Kind::Bool:
      t.type = type::kBitN;
      t.max_length = 1;
      return t;
    case db::Kind::I64:
      t.type = type::kIntN;
      t.max_length = 8;
      if (n.int_bytes == 2 || n.int_bytes == 4)  // the driver knows the width (db::NativeType)
        t.max_length = static_cast<uint32_t>(n.int_bytes);
      else if (n.int_bytes == 8)
        t.max_length = 8;
      else if (n.pg_oid == 23 || base == "int4" || base == "int" || base == "mediumint")
        t.max_length = 4;
      else if (n.pg_oid == 21 || base == "int2" || base == "smallint" || base == "tinyint")
        t.max_length = 2;  // MySQL's tinyint is signed: SQL Server's TINYINT is not
      return t;
    case db::Kind::U64:
      t.type = type::kDecimalN;
      t.precision = 20;
      t.scale = 0;
      t.max_length = static_cast<uint32_t>(decimal_bytes(20));
      return t;
    case db::Kind::F64:
      t.type = type::kFltN;
      // SQLite's REAL is a double (int_bytes 8); PostgreSQL's and SQL Server's a float.
      t.max_length =
          n.int_bytes != 8 && (n.pg_oid == 700 || base == "float4" || base == "real") ? 4 : 8;
      return t;
    case db::Kind::Decimal: {
      t.type = type::kDecimalN;
      if (n.precision >= 1 && n.precision <= 38 && n.scale >= 0 && n.scale <= n.precision) {
        t.precision = static_cast<uint8_t>(n.precision);
        t.scale = static_cast<uint8_t>(n.scale);
      } else {
        t.precision = 38;
        t.scale = 18;
        if (sample && sample->kind == db::Kind::Decimal) {
          const size_t dot = sample->str.find('.');
          t.scale = dot == std::string_view::npos
                        ? 0
                        : static_cast<uint8_t>(std::min<size_t>(sample->str.size() - dot - 1, 38));
        }
      }
      t.max_length = static_cast<uint32_t>(decimal_bytes(t.precision));
      return t;
    }
    case db::Kind::Time:
      if (n.time_form == db::TimeForm::date) {
        t.type = type::kDateN;
        t.max_length = 3;
        return t;
      }
      t.type =
          n.time_form == db::TimeForm::timestamptz ? type::kDateTimeOffsetN : type::kDateTime2N;
      t.scale = 7;
      t.max_length = t.type == type::kDateTimeOffsetN ? 10 : 8;
      return t;
    case db::Kind::Bytes:
      t.type = type::kBigVarBinary;
      t.max_length =
          n.length >= 1 && n.length <= kMaxShortLen ? static_cast<uint32_t>(n.length) : kPlpMarker;
      return t;
    case db::Kind::Text:
    case db::Kind::Null:
    default:
      // A declared length counts characters; a character above U+FFFF takes
      // two UCS-2 code units, so 2 * length units (4 bytes a character) are
      // declared. Unknown or longer: NVARCHAR(MAX).
      t.type = type::kNVarChar;
      t.collation = collation;
      t.max_length = c.kind == db::Kind::Text && n.length >= 1 && n.length * 4 <= kMaxShortLen
                         ? static_cast<uint32_t>(n.length * 4)
                         : kPlpMarker;
      return t;
  }
}

}  // namespace wirepool::tds
