#include "backends/postgresql/postgresql_types.hpp"

#include <bit>
#include <cstring>
#include <limits>

#include "protocol/pg/types.hpp"

namespace wirepool::postgresql {

namespace {

namespace oid = pg::oid;
constexpr uint32_t kXml = 142;

constexpr int64_t kMicrosPerDay = 86400LL * 1000000;
constexpr int64_t kPgEpochDays = 10957;  // 2000-01-01 - 1970-01-01
constexpr int64_t kPgEpochMicros = kPgEpochDays * kMicrosPerDay;
constexpr int64_t kInfinity = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinusInfinity = std::numeric_limits<int64_t>::min();

db::Error binary_error(uint32_t type_oid, std::string_view why) {
  std::string name(type_name(type_oid));
  if (name.empty()) name = "OID " + std::to_string(type_oid);
  db::Error e;
  e.code = db::Errc::invalid_query;
  e.sqlstate = "22P03";  // invalid_binary_representation
  e.message = "incorrect binary data format for type " + name + ": " + std::string(why);
  return e;
}

[[gnu::cold, gnu::noinline]] db::Error size_error(std::string_view b, size_t n, uint32_t type_oid) {
  return binary_error(type_oid,
                      "expected " + std::to_string(n) + " bytes, got " + std::to_string(b.size()));
}

/// A value of a fixed-size type has exactly its size; the check inline, the
/// error out of line.
inline std::optional<db::Error> want(std::string_view b, size_t n, uint32_t type_oid) {
  if (b.size() == n) [[likely]]
    return std::nullopt;
  return size_error(b, n, type_oid);
}

bool is_special_numeric(std::string_view s) {
  return s == "NaN" || s == "Infinity" || s == "-Infinity";
}

void append_uuid(std::string& out, std::string_view b) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    const auto u = static_cast<uint8_t>(b[i]);
    out.push_back(kHex[u >> 4]);
    out.push_back(kHex[u & 15]);
  }
}

std::optional<db::Error> decode_binary(Read how, uint32_t type_oid, std::string_view b,
                                       std::string& scratch, db::ValueView& out) {
  if (decode_binary_fast(how, b, out)) return std::nullopt;
  switch (how) {
    case Read::boolean:
      if (auto e = want(b, 1, type_oid)) return e;
      out = db::ValueView::boolean(b[0] != 0);
      return std::nullopt;
    case Read::int2:  // decode_binary_fast took the right size
      return size_error(b, 2, type_oid);
    case Read::int4:  // decode_binary_fast took the right size
      return size_error(b, 4, type_oid);
    case Read::oid:
      if (auto e = want(b, 4, type_oid)) return e;
      out = db::ValueView::int64(static_cast<int64_t>(load_be<4>(b)));
      return std::nullopt;
    case Read::int8:  // decode_binary_fast took the right size
      return size_error(b, 8, type_oid);
    case Read::float4:
      if (auto e = want(b, 4, type_oid)) return e;
      out = db::ValueView::float64(
          static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(load_be<4>(b)))));
      return std::nullopt;
    case Read::float8:  // decode_binary_fast took the right size
      return size_error(b, 8, type_oid);
    case Read::numeric: {
      auto text = pg::numeric_from_binary(b);
      if (!text) return binary_error(type_oid, "invalid numeric value");
      scratch = std::move(*text);
      out = is_special_numeric(scratch) ? db::ValueView::text(scratch)
                                        : db::ValueView::decimal(scratch);
      return std::nullopt;
    }
    case Read::text:  // decode_binary_fast
      return std::nullopt;
    case Read::jsonb:
      if (b.empty() || b[0] != 1) return binary_error(type_oid, "unsupported jsonb version");
      out = db::ValueView::text(b.substr(1));
      return std::nullopt;
    case Read::bytea:
    case Read::other:
      out = db::ValueView::bytes(b);
      return std::nullopt;
    case Read::uuid:
      if (auto e = want(b, 16, type_oid)) return e;
      scratch.clear();
      append_uuid(scratch, b);
      out = db::ValueView::text(scratch);
      return std::nullopt;
    case Read::date: {
      if (auto e = want(b, 4, type_oid)) return e;
      const auto days = static_cast<int32_t>(load_be<4>(b));
      int64_t micros = 0;
      if (days == INT32_MAX) {
        micros = kInfinity;
      } else if (days == INT32_MIN) {
        micros = kMinusInfinity;
      } else {
        micros = (int64_t{days} + kPgEpochDays) * kMicrosPerDay;  // |days| < 2^31: no overflow
      }
      out = db::ValueView::time(micros);
      return std::nullopt;
    }
    case Read::timestamp:
    case Read::timestamptz: {
      if (auto e = want(b, 8, type_oid)) return e;
      const auto pgt = static_cast<int64_t>(load_be<8>(b));
      int64_t micros = pgt;
      if (pgt != kInfinity && pgt != kMinusInfinity &&
          __builtin_add_overflow(pgt, kPgEpochMicros, &micros)) {
        return binary_error(type_oid, "timestamp out of range");
      }
      out = db::ValueView::time(micros);
      return std::nullopt;
    }
  }
  out = db::ValueView::bytes(b);
  return std::nullopt;
}

std::optional<db::Error> decode_text(Read how, uint32_t type_oid, std::string_view t,
                                     std::string& scratch, db::ValueView& out) {
  switch (how) {
    case Read::text:
    case Read::jsonb:
      out = db::ValueView::text(t);
      return std::nullopt;
    case Read::other:
      out = db::ValueView::bytes(t);  // the text representation
      return std::nullopt;
    default:
      break;
  }
  auto decoded = pg::decode_param(t, type_oid, 0);
  if (!decoded.ok()) {
    // A form the parser does not know (a DateStyle other than ISO): the text itself.
    out = db::ValueView::text(t);
    return std::nullopt;
  }
  const db::Value& v = decoded->value;
  scratch = v.str;
  out = db::ValueView{};
  out.kind = v.kind;
  out.i64 = v.i64;
  out.str = scratch;
  if (v.kind == db::Kind::Decimal && is_special_numeric(scratch)) out.kind = db::Kind::Text;
  return std::nullopt;
}

db::Error param_error(std::string why, int index) {
  db::Error e;
  e.code = db::Errc::invalid_query;
  if (why.find("out of range") != std::string::npos || why.find("overflows") != std::string::npos) {
    e.sqlstate = "22003";  // numeric_value_out_of_range
  } else if (why.find("is not valid for type") != std::string::npos) {
    e.sqlstate = "22P02";  // invalid_text_representation
  } else if (why.find("cannot convert") != std::string::npos) {
    e.sqlstate = "42804";  // datatype_mismatch
  } else {
    e.sqlstate = "22023";  // invalid_parameter_value
  }
  e.message = std::move(why);
  e.detail = "parameter $" + std::to_string(index);
  return e;
}

bool has_binary_form(uint32_t type_oid) {
  switch (read_for_oid(type_oid)) {
    case Read::text:
    case Read::jsonb:
    case Read::other:
      return false;
    default:
      return true;
  }
}

}  // namespace

Read read_for_oid(uint32_t t) {
  switch (t) {
    case oid::kBool:
      return Read::boolean;
    case oid::kInt2:
      return Read::int2;
    case oid::kInt4:
      return Read::int4;
    case oid::kInt8:
      return Read::int8;
    case oid::kOid:
      return Read::oid;
    case oid::kFloat4:
      return Read::float4;
    case oid::kFloat8:
      return Read::float8;
    case oid::kNumeric:
      return Read::numeric;
    case oid::kText:
    case oid::kVarchar:
    case oid::kBpchar:
    case oid::kName:
    case oid::kChar:
    case oid::kJson:
    case oid::kUnknown:
    case kXml:
      return Read::text;
    case oid::kJsonb:
      return Read::jsonb;
    case oid::kBytea:
      return Read::bytea;
    case oid::kDate:
      return Read::date;
    case oid::kTimestamp:
      return Read::timestamp;
    case oid::kTimestamptz:
      return Read::timestamptz;
    case oid::kUuid:
      return Read::uuid;
    default:
      return Read::other;
  }
}

db::Kind kind_for_oid(uint32_t t) {
  switch (read_for_oid(t)) {
    case Read::boolean:
      return db::Kind::Bool;
    case Read::int2:
    case Read::int4:
    case Read::int8:
    case Read::oid:
      return db::Kind::I64;
    case Read::float4:
    case Read::float8:
      return db::Kind::F64;
    case Read::numeric:
      return db::Kind::Decimal;
    case Read::text:
    case Read::jsonb:
    case Read::uuid:
      return db::Kind::Text;
    case Read::bytea:
      return db::Kind::Bytes;
    case Read::date:
    case Read::timestamp:
    case Read::timestamptz:
      return db::Kind::Time;
    case Read::other:
      return db::Kind::Bytes;
  }
  return db::Kind::Bytes;
}

std::string_view type_name(uint32_t t) {
  switch (t) {
    case oid::kBool:
      return "bool";
    case oid::kBytea:
      return "bytea";
    case oid::kChar:
      return "char";
    case oid::kName:
      return "name";
    case oid::kInt8:
      return "int8";
    case oid::kInt2:
      return "int2";
    case oid::kInt4:
      return "int4";
    case oid::kText:
      return "text";
    case oid::kOid:
      return "oid";
    case oid::kJson:
      return "json";
    case kXml:
      return "xml";
    case oid::kFloat4:
      return "float4";
    case oid::kFloat8:
      return "float8";
    case oid::kUnknown:
      return "unknown";
    case oid::kBpchar:
      return "bpchar";
    case oid::kVarchar:
      return "varchar";
    case oid::kDate:
      return "date";
    case oid::kTime:
      return "time";
    case oid::kTimestamp:
      return "timestamp";
    case oid::kTimestamptz:
      return "timestamptz";
    case oid::kNumeric:
      return "numeric";
    case oid::kUuid:
      return "uuid";
    case oid::kJsonb:
      return "jsonb";
    default:
      return {};
  }
}

std::optional<std::pair<int32_t, int32_t>> numeric_typmod(int32_t typmod) {
  if (typmod < 4) return std::nullopt;  // VARHDRSZ: -1 is "no modifier"
  const int32_t t = typmod - 4;
  const int32_t precision = (t >> 16) & 0xffff;
  const int32_t scale = ((t & 0x7ff) ^ 1024) - 1024;  // 11-bit signed since PostgreSQL 15
  return std::make_pair(precision, scale);
}

db::Column make_column(std::string name, uint32_t type_oid, int32_t typmod, uint32_t table_oid,
                       int16_t column, int16_t typlen, int16_t format) {
  db::Column c;
  c.name = std::move(name);
  c.kind = kind_for_oid(type_oid);
  db::NativeType& n = c.native;
  n.name = std::string(type_name(type_oid));
  n.pg_oid = type_oid;
  n.pg_typmod = typmod;
  n.pg_table_oid = table_oid;
  n.pg_column = column;
  n.pg_typlen = typlen;
  n.pg_format = format;
  switch (read_for_oid(type_oid)) {
    case Read::numeric:
      if (auto ps = numeric_typmod(typmod)) {
        n.precision = ps->first;
        n.scale = ps->second;
      }
      break;
    case Read::text:
      if ((type_oid == oid::kVarchar || type_oid == oid::kBpchar) && typmod >= 4) {
        n.length = typmod - 4;
      }
      break;
    case Read::date:
      n.time_form = db::TimeForm::date;
      break;
    case Read::timestamp:
      n.time_form = db::TimeForm::timestamp;
      if (typmod >= 0) n.precision = typmod;
      break;
    case Read::timestamptz:
      n.time_form = db::TimeForm::timestamptz;
      if (typmod >= 0) n.precision = typmod;
      break;
    default:
      break;
  }
  return c;
}

std::optional<db::Error> decode_value(Read how, uint32_t type_oid, int16_t format,
                                      std::string_view bytes, std::string& scratch,
                                      db::ValueView& out) {
  if (format == 1) return decode_binary(how, type_oid, bytes, scratch, out);
  return decode_text(how, type_oid, bytes, scratch, out);
}

// ---- parameters -------------------------------------------------------------

void ParamBuffer::add_null(uint32_t type_oid) {
  offsets_.push_back(0);
  types_.push_back(type_oid);
  lengths_.push_back(0);
  formats_.push_back(0);
  nulls_.push_back(true);
}

std::optional<db::Error> ParamBuffer::close_value(size_t mark, uint32_t type_oid, int16_t format) {
  const size_t n = data_.size() - mark;
  if (format == 0 && std::memchr(data_.data() + mark, '\0', n) != nullptr) {
    data_.resize(mark);
    db::Error e;
    e.code = db::Errc::invalid_query;
    e.sqlstate = "22021";  // character_not_in_repertoire
    e.message = "invalid byte sequence for encoding \"UTF8\": 0x00";
    e.detail = "parameter $" + std::to_string(count() + 1);
    return e;
  }
  if (n > static_cast<size_t>(std::numeric_limits<int>::max())) {
    data_.resize(mark);
    db::Error e;
    e.code = db::Errc::invalid_query;
    e.sqlstate = "54000";  // program_limit_exceeded
    e.message = "parameter $" + std::to_string(count() + 1) + " is too large";
    return e;
  }
  data_.push_back('\0');
  offsets_.push_back(mark);
  types_.push_back(type_oid);
  lengths_.push_back(static_cast<int>(n));
  formats_.push_back(format);
  nulls_.push_back(false);
  return std::nullopt;
}

std::optional<db::Error> ParamBuffer::add_native(const db::Param& p) {
  if (p.value.is_null()) {
    add_null(p.pg_oid);
    return std::nullopt;
  }
  const size_t mark = data_.size();
  data_.append(p.value.str);
  return close_value(mark, p.pg_oid, p.pg_format == 1 ? 1 : 0);
}

std::optional<db::Error> ParamBuffer::add_natural(const db::Param& p) {
  if (p.pg_format >= 0) return add_native(p);
  const db::Value& v = p.value;
  uint32_t type_oid = 0;
  int16_t format = 1;
  switch (v.kind) {
    case db::Kind::Null:
      add_null(0);
      return std::nullopt;
    case db::Kind::Text: {  // unknown (OID 0): the server types it from context
      const size_t mark = data_.size();
      data_.append(v.str);
      return close_value(mark, 0, 0);
    }
    case db::Kind::Bool:
      type_oid = oid::kBool;
      break;
    case db::Kind::I64:
      type_oid = oid::kInt8;
      break;
    case db::Kind::U64:
      type_oid = oid::kNumeric;
      format = 0;
      break;
    case db::Kind::F64:
      type_oid = oid::kFloat8;
      break;
    case db::Kind::Bytes:
      type_oid = oid::kBytea;
      break;
    case db::Kind::Time:
      type_oid = oid::kTimestamptz;
      break;
    case db::Kind::Decimal:
      type_oid = oid::kNumeric;
      format = 0;
      break;
  }
  const size_t mark = data_.size();
  std::string why;
  if (!pg::encode_value(db::view_of(v), type_oid, format, data_, &why)) {
    return param_error(std::move(why), count() + 1);
  }
  return close_value(mark, type_oid, format);
}

std::optional<db::Error> ParamBuffer::add_typed(const db::Param& p, uint32_t server_oid) {
  if (p.pg_format >= 0) return add_native(p);
  const db::Value& v = p.value;
  if (v.is_null()) {
    add_null(server_oid);
    return std::nullopt;
  }
  if (v.kind == db::Kind::Text) {  // the server parses text as its own input
    const size_t mark = data_.size();
    data_.append(v.str);
    return close_value(mark, server_oid, 0);
  }
  const int16_t format = has_binary_form(server_oid) ? 1 : 0;
  const size_t mark = data_.size();
  std::string why;
  if (!pg::encode_value(db::view_of(v), server_oid, format, data_, &why)) {
    return param_error(std::move(why), count() + 1);
  }
  return close_value(mark, server_oid, format);
}

void ParamBuffer::clear() {
  if (data_.capacity() > 64 * 1024) {
    std::string().swap(data_);
  } else {
    data_.clear();
  }
  offsets_.clear();
  types_.clear();
  lengths_.clear();
  formats_.clear();
  nulls_.clear();
  ptrs_.clear();
}

ParamBuffer& ParamBuffer::reused() {
  thread_local ParamBuffer buf;
  buf.clear();
  return buf;
}

void ParamBuffer::finish() {
  ptrs_.resize(types_.size());
  for (size_t i = 0; i < types_.size(); ++i) {
    ptrs_[i] = nulls_[i] ? nullptr : data_.data() + offsets_[i];
  }
}

int result_format_for(const db::QueryOptions& o) {
  if (!o.native) return 1;
  if (o.formats.empty()) return 0;
  for (int16_t f : o.formats) {
    if (f != 1) return 0;
  }
  return 1;
}

std::pair<std::string, int64_t> parse_command_tag(std::string_view tag) {
  std::string verb;
  int64_t last_number = -1;
  size_t i = 0;
  while (i < tag.size()) {
    while (i < tag.size() && tag[i] == ' ')
      ++i;
    const size_t start = i;
    while (i < tag.size() && tag[i] != ' ')
      ++i;
    const std::string_view word = tag.substr(start, i - start);
    if (word.empty()) break;
    const bool numeric = word.find_first_not_of("0123456789") == std::string_view::npos;
    if (numeric) {
      last_number = 0;
      for (char c : word) {
        if (last_number > (std::numeric_limits<int64_t>::max() - 9) / 10) break;
        last_number = last_number * 10 + (c - '0');
      }
    } else if (last_number < 0) {
      if (!verb.empty()) verb.push_back(' ');
      verb.append(word);
    }
  }
  const bool counts =
      verb == "INSERT" || verb == "UPDATE" || verb == "DELETE" || verb == "MERGE" || verb == "COPY";
  return {verb, counts ? last_number : -1};
}

}  // namespace wirepool::postgresql
