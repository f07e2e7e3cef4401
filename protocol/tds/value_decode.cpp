// TDS values -> db::Value: the streaming decoder of one value (types.hpp).
#include "protocol/tds/types.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "protocol/tds/value_util.hpp"

namespace wirepool::tds {

using namespace detail;

namespace {

/// Builds the value of a non-NULL fixed or BYTELEN type from its bytes.
std::string decode_scalar(const TypeInfo& t, Bytes b, TypedValue& out) {
  const uint8_t ty = t.type;
  auto& v = out.value;
  const size_t n = b.size();
  switch (ty) {
    case type::kInt1:
      v = db::Value::int64(b[0]);  // TINYINT is unsigned
      return {};
    case type::kInt2:
      v = db::Value::int64(static_cast<int16_t>(read_le(b)));
      return {};
    case type::kInt4:
      v = db::Value::int64(static_cast<int32_t>(read_le(b)));
      return {};
    case type::kInt8:
      v = db::Value::int64(static_cast<int64_t>(read_le(b)));
      return {};
    case type::kIntN:
      if (n == 1)
        v = db::Value::int64(b[0]);
      else if (n == 2)
        v = db::Value::int64(static_cast<int16_t>(read_le(b)));
      else if (n == 4)
        v = db::Value::int64(static_cast<int32_t>(read_le(b)));
      else if (n == 8)
        v = db::Value::int64(static_cast<int64_t>(read_le(b)));
      else
        return "INTN value of " + std::to_string(n) + " bytes";
      return {};
    case type::kBit:
    case type::kBitN:
      if (n != 1) return "BITN value of " + std::to_string(n) + " bytes";
      v = db::Value::boolean(b[0] != 0);
      return {};
    case type::kFlt4:
    case type::kFltN:
    case type::kFlt8:
      if (n == 4) {
        float f;
        uint32_t u = static_cast<uint32_t>(read_le(b));
        std::memcpy(&f, &u, 4);
        v = db::Value::float64(f);
      } else if (n == 8) {
        double d;
        uint64_t u = read_le(b);
        std::memcpy(&d, &u, 8);
        v = db::Value::float64(d);
      } else {
        return "FLTN value of " + std::to_string(n) + " bytes";
      }
      return {};
    case type::kMoney:
    case type::kMoney4:
    case type::kMoneyN: {
      int64_t units;
      if (n == 8) {
        const uint64_t hi = read_le(b.subspan(0, 4)), lo = read_le(b.subspan(4, 4));
        units = static_cast<int64_t>((hi << 32) | lo);
      } else if (n == 4) {
        units = static_cast<int32_t>(read_le(b));
      } else {
        return "MONEYN value of " + std::to_string(n) + " bytes";
      }
      const bool neg = units < 0;
      const uint64_t mag = neg ? 0 - static_cast<uint64_t>(units) : static_cast<uint64_t>(units);
      uint8_t le[8];
      for (int i = 0; i < 8; ++i)
        le[i] = static_cast<uint8_t>(mag >> (8 * i));
      v = db::Value::decimal(decimal_to_text(neg, Bytes(le, 8), 4));
      return {};
    }
    case type::kDecimalN:
    case type::kNumericN: {
      if (n != decimal_bytes(t.precision))
        return "DECIMAL(" + std::to_string(t.precision) + ") value of " + std::to_string(n) +
               " bytes";
      const uint8_t sign = b[0];
      if (sign > 1) return "DECIMAL value with sign byte " + std::to_string(sign);
      const Bytes mag = b.subspan(1);
      u128 m = 0;
      for (size_t i = mag.size(); i-- > 0;)
        m = (m << 8) | mag[i];
      std::string digits = u128_text(m);
      if (digits.size() > t.precision && m != 0)
        return "DECIMAL value with more digits than its precision " + std::to_string(t.precision);
      v = db::Value::decimal(decimal_to_text(sign == 0, mag, t.scale));
      return {};
    }
    case type::kGuid:
      if (n != 16) return "GUID value of " + std::to_string(n) + " bytes";
      v = db::Value::text(guid_to_text(b));
      return {};
    case type::kDateN: {
      if (n != 3) return "DATE value of " + std::to_string(n) + " bytes";
      const int64_t days = static_cast<int64_t>(read_le(b));
      if (days > kMaxDateN) return "DATE value out of range";
      v = db::Value::time((days - kDaysTo1970From0001) * kMicrosPerDay);
      out.time_form = db::TimeForm::date;
      return {};
    }
    case type::kTimeN: {
      if (n != time_bytes(t.scale)) return "TIME value of " + std::to_string(n) + " bytes";
      const uint64_t units = read_le(b);
      if (units >= 86400ULL * static_cast<uint64_t>(pow10(t.scale)))
        return "TIME value out of range";
      v = db::Value::text(time_of_day_text(units, t.scale));
      return {};
    }
    case type::kDateTime2N:
    case type::kDateTimeOffsetN: {
      const size_t tb = time_bytes(t.scale);
      const size_t want = tb + 3 + (ty == type::kDateTimeOffsetN ? 2 : 0);
      if (n != want) return type_name(ty) + " value of " + std::to_string(n) + " bytes";
      const uint64_t units = read_le(b.subspan(0, tb));
      const int64_t days = static_cast<int64_t>(read_le(b.subspan(tb, 3)));
      if (units >= 86400ULL * static_cast<uint64_t>(pow10(t.scale)) || days > kMaxDateN)
        return type_name(ty) + " value out of range";
      // Scale 7 (100 ns) is truncated to microseconds, db::Value's resolution.
      const int64_t micros =
          t.scale >= 6 ? static_cast<int64_t>(units / static_cast<uint64_t>(pow10(t.scale - 6)))
                       : static_cast<int64_t>(units) * pow10(6 - t.scale);
      v = db::Value::time((days - kDaysTo1970From0001) * kMicrosPerDay + micros);
      if (ty == type::kDateTimeOffsetN) {
        out.offset_minutes = static_cast<int16_t>(read_le(b.subspan(tb + 3, 2)));
        if (out.offset_minutes < -840 || out.offset_minutes > 840)
          return "DATETIMEOFFSET offset out of range";
        out.time_form = db::TimeForm::timestamptz;
      }
      return {};
    }
    case type::kDateTime:
    case type::kDateTim4:
    case type::kDateTimN:
      if (n == 8) {
        const int64_t days = static_cast<int32_t>(read_le(b.subspan(0, 4)));
        const int64_t ticks = static_cast<int64_t>(read_le(b.subspan(4, 4)));  // 1/300 s
        if (ticks >= 300LL * 86400 || days < -53690 || days > 2958463)  // 1753-01-01..9999-12-31
          return "DATETIME value out of range";
        // 1/300 s to microseconds, rounded to the nearest.
        v = db::Value::time((days - kDaysTo1970From1900) * kMicrosPerDay + (ticks * 10000 + 1) / 3);
      } else if (n == 4) {
        const int64_t days = static_cast<int64_t>(read_le(b.subspan(0, 2)));
        const int64_t minutes = static_cast<int64_t>(read_le(b.subspan(2, 2)));
        if (minutes >= 1440) return "SMALLDATETIME value out of range";
        v = db::Value::time((days - kDaysTo1970From1900) * kMicrosPerDay + minutes * 60 * 1000000);
      } else {
        return "DATETIME value of " + std::to_string(n) + " bytes";
      }
      return {};
    default:
      return "unsupported TDS type " + type_name(ty);
  }
}

/// Text or bytes of a string/binary type into out.value.
std::string decode_string(const TypeInfo& t, Bytes b, TypedValue& out) {
  std::string s;
  std::string err;
  switch (t.type) {
    case type::kNVarChar:
    case type::kNChar:
    case type::kXml:
      if (!ucs2_to_utf8(b, s, &err)) return type_name(t.type) + " value: " + err;
      out.value = db::Value::text(std::move(s));
      return {};
    case type::kBigVarChar:
    case type::kBigChar:
      if (t.collation.utf8())
        s.assign(wire::as_view(b));
      else
        cp1252_to_utf8(b, s);
      out.value = db::Value::text(std::move(s));
      return {};
    default:
      out.value = db::Value::bytes(std::string(wire::as_view(b)));
      return {};
  }
}

}  // namespace

Decoded<TypedValue> decode_value(const TypeInfo& t, Bytes in, const Limits& limits) {
  Reader r(in);
  TypedValue tv;
  tv.type = t;
  std::string err;
  const uint8_t ty = t.type;
  auto more = [](size_t needed) {
    auto d = need_more<TypedValue>();
    d.needed = needed;
    return d;
  };
  const size_t fixed = fixed_size(ty);
  if (fixed != SIZE_MAX) {
    Bytes b = r.take(fixed);
    if (!r.ok()) return more(fixed);
    if (fixed > 0) err = decode_scalar(t, b, tv);
  } else if (t.plp()) {
    const uint64_t total = r.u64();
    if (!r.ok()) return more(8);
    if (total != UINT64_MAX) {
      constexpr uint64_t kUnknown = 0xFFFFFFFFFFFFFFFEULL;
      const uint64_t cap =
          uint64_t{limits.max_value} * (limits.ucs2_as_utf8 && is_ucs2_type(ty) ? 2 : 1);
      auto over = [&](std::string message) {
        auto d = fail<TypedValue>(std::move(message));
        d.over_limit = true;
        return d;
      };
      // Refused by the announced length, else once the chunks pass the limit.
      if (total != kUnknown && total > cap)
        return over("PLP value of " + std::to_string(total) + " bytes exceeds the limit of " +
                    std::to_string(cap));
      // The least the whole value takes: its data, one chunk header, the terminator.
      const size_t least =
          total == kUnknown ? 0 : 8 + static_cast<size_t>(total) + (total > 0 ? 8 : 4);
      std::string data;
      for (;;) {
        const uint32_t n = r.u32();
        if (!r.ok()) return more(std::max(least, r.pos() + 4));
        if (n == 0) break;
        if (data.size() + n > cap)
          return over("PLP value exceeds the limit of " + std::to_string(cap) + " bytes");
        Bytes chunk = r.take(n);
        if (!r.ok()) return more(std::max(least, r.pos() + n));
        wire::put_bytes(data, chunk);
      }
      if (total != kUnknown && total != data.size())
        return fail<TypedValue>("PLP value announced " + std::to_string(total) +
                                " bytes but its chunks hold " + std::to_string(data.size()));
      err = decode_string(t, as_bytes(data), tv);
    }
  } else if (is_ushort_type(ty)) {
    const uint16_t n = r.u16();
    if (!r.ok()) return more(2);
    if (n != 0xFFFF) {
      if (n > t.max_length)
        return fail<TypedValue>(type_name(ty) + " value of " + std::to_string(n) +
                                " bytes exceeds its declared length " +
                                std::to_string(t.max_length));
      Bytes b = r.take(n);
      if (!r.ok()) return more(2 + size_t{n});
      err = decode_string(t, b, tv);
    }
  } else {
    // BYTELEN: length 0 is NULL.
    const uint8_t n = r.u8();
    if (!r.ok()) return more(1);
    if (n != 0) {
      if (ty != type::kDecimalN && ty != type::kNumericN && n > t.max_length)
        return fail<TypedValue>(type_name(ty) + " value of " + std::to_string(n) +
                                " bytes exceeds its declared length " +
                                std::to_string(t.max_length));
      Bytes b = r.take(n);
      if (!r.ok()) return more(1 + size_t{n});
      err = decode_scalar(t, b, tv);
    }
  }
  if (!err.empty()) return fail<TypedValue>(std::move(err));
  if (tv.value.kind == db::Kind::Time && tv.time_form == db::TimeForm::timestamp &&
      ty == type::kDateN)
    tv.time_form = db::TimeForm::date;
  Decoded<TypedValue> d;
  d.status = DecodeStatus::ok;
  d.message = std::move(tv);
  d.consumed = r.pos();
  return d;
}

}  // namespace wirepool::tds
