// Parameter arrays for a batch (ParamArrays): one column-wise array per
// marker, bound once for all the rows.

#include <algorithm>
#include <cstring>

#include "backends/odbc/odbc_internal.hpp"

namespace wirepool::odbc::detail {

template <class T>
void ParamArrays::put(Col& c, size_t r, const T& v) {
  std::memcpy(c.data.data() + r * c.width, &v, sizeof v);
}

std::optional<Error> ParamArrays::fill(std::span<const db::Params> rows,
                                       const std::vector<size_t>& binds, bool same_binary_length,
                                       bool& fits) {
  fits = true;
  cols_.assign(binds.size(), {});
  const size_t n = rows.size();
  for (size_t i = 0; i < binds.size(); ++i) {
    Col& c = cols_[i];
    c.ind.assign(n, 0);
    db::Kind kind = db::Kind::Null;
    for (const db::Params& row : rows) {
      const db::Param& p = row[binds[i]];
      if (p.pg_format >= 0) {
        return Error::unsupported("the odbc driver takes no native PostgreSQL parameters");
      }
      const db::Kind k = p.value.kind;
      if (k == db::Kind::Null) continue;
      if (kind != db::Kind::Null && k != kind) {
        fits = false;
        return std::nullopt;
      }
      kind = k;
    }
    if (same_binary_length && kind == db::Kind::Bytes) {
      size_t len = SIZE_MAX;
      for (const db::Params& row : rows) {
        const db::Value& v = row[binds[i]].value;
        if (v.is_null()) continue;
        if (len != SIZE_MAX && v.str.size() != len) {
          fits = false;
          return std::nullopt;
        }
        len = v.str.size();
      }
    }
    if (auto e = fill_col(c, kind, rows, binds[i], fits); e || !fits) return e;
  }
  return std::nullopt;
}

Status ParamArrays::bind(Session& s, SQLHSTMT h) {
  for (size_t i = 0; i < cols_.size(); ++i) {
    Col& c = cols_[i];
    const SQLRETURN rc = SQLBindParameter(
        h, static_cast<SQLUSMALLINT>(i + 1), SQL_PARAM_INPUT, c.bd.c_type, c.bd.sql_type,
        c.bd.column_size, c.bd.digits, c.data.data(), static_cast<SQLLEN>(c.width), c.ind.data());
    if (!ok(rc)) return s.stmt_error(h);
  }
  return {};
}

std::optional<Error> ParamArrays::fill_col(Col& c, db::Kind kind, std::span<const db::Params> rows,
                                           size_t j, bool& fits) {
  const size_t n = rows.size();
  auto value = [&](size_t r) -> const db::Value& { return rows[r][j].value; };
  // Variable-width kinds: their bytes first (one buffer for all rows, no
  // allocation per value), to size the array.
  std::string bytes;
  std::vector<std::pair<size_t, size_t>> at(n);  // offset and length in `bytes`
  auto text_of = [&](size_t r) {
    return std::string_view(bytes).substr(at[r].first, at[r].second);
  };
  if (kind == db::Kind::Text || kind == db::Kind::Decimal || kind == db::Kind::U64 ||
      kind == db::Kind::Bytes) {
    int32_t scale = -1;
    size_t ndigits = 0;
    for (size_t r = 0; r < n; ++r) {
      const db::Value& v = value(r);
      if (v.is_null()) continue;
      const size_t offset = bytes.size();
      if (kind == db::Kind::Text) {
        thread_local std::u16string units;
        if (!to_utf16(v.str, units)) {
          return protocol_error("22021", "invalid byte sequence for encoding \"UTF8\"");
        }
        bytes.append(reinterpret_cast<const char*>(units.data()), units.size() * 2);
      } else if (kind == db::Kind::U64) {
        bytes += std::to_string(v.u64);
      } else {
        bytes += v.str;
      }
      at[r] = {offset, bytes.size() - offset};
      if (kind == db::Kind::Decimal) {
        const auto [digits, sc] = decimal_shape(v.str);
        if (scale >= 0 && sc != scale) {
          fits = false;  // one binding has one scale
          return std::nullopt;
        }
        scale = sc;
        ndigits = std::max(ndigits, digits);
      }
      c.width = std::max(c.width, at[r].second);
    }
    if (kind == db::Kind::Text) c.width = std::max<size_t>(c.width, 2);
    c.bd = binding_of(kind,
                      kind == db::Kind::Text      ? c.width / 2
                      : kind == db::Kind::Decimal ? ndigits
                                                  : c.width,
                      std::max(scale, 0));
  } else {
    c.bd = binding_of(kind);
    c.width = kind == db::Kind::I64    ? sizeof(int64_t)
              : kind == db::Kind::F64  ? sizeof(double)
              : kind == db::Kind::Time ? sizeof(SQL_TIMESTAMP_STRUCT)
                                       : 1;  // Bool, or a column of NULLs
  }
  c.data.assign(n * c.width, 0);
  for (size_t r = 0; r < n; ++r) {
    const db::Value& v = value(r);
    if (v.is_null()) {
      c.ind[r] = SQL_NULL_DATA;
      continue;
    }
    switch (kind) {
      case db::Kind::I64:
        put(c, r, v.i64);
        break;
      case db::Kind::F64:
        put(c, r, v.f64);
        break;
      case db::Kind::Bool:
        c.data[r] = v.b ? 1 : 0;
        break;
      case db::Kind::Time:
        put(c, r, timestamp_of(v.micros));
        break;
      default:
        std::memcpy(c.data.data() + r * c.width, text_of(r).data(), at[r].second);
        c.ind[r] = static_cast<SQLLEN>(at[r].second);
        break;
    }
  }
  return std::nullopt;
}

}  // namespace wirepool::odbc::detail
