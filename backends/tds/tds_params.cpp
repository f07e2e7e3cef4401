#include "backends/tds/tds_params.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include "sql/lexer.hpp"

namespace wirepool::tdsdrv {

namespace {

using db::Error;

Error mismatch(size_t supplied, size_t required) {
  Error e;
  e.code = db::Errc::invalid_query;
  e.sqlstate = "08P01";  // PostgreSQL's protocol_violation for the same mistake
  e.message = "bind message supplies " + std::to_string(supplied) +
              " parameters, but the statement requires " + std::to_string(required);
  return e;
}

bool iequal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

#ifdef WIREPOOL_PLANTED_DEFECTS
/// The planted defect "a ? inside a bracketed name taken as a marker": adds
/// the ?s of every [...] span, as a lexer that forgot brackets would.
void plant_bracket_markers(std::string_view sql, std::vector<sql::Marker>& markers) {
  size_t i = 0;
  while ((i = sql.find('[', i)) != std::string_view::npos) {
    const size_t close = sql.find(']', i);
    if (close == std::string_view::npos) break;
    for (size_t j = i; j < close; ++j) {
      if (sql[j] == '?') markers.push_back({sql::Marker::Type::question, j, 1, 0, {}});
    }
    i = close + 1;
  }
  std::sort(markers.begin(), markers.end(),
            [](const sql::Marker& a, const sql::Marker& b) { return a.offset < b.offset; });
  int n = 0;
  for (auto& m : markers) {
    if (m.type == sql::Marker::Type::question) m.number = ++n;
  }
}
#endif

size_t decimal_scale(std::string_view text) {
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos) return 0;
  size_t n = 0;
  for (size_t i = dot + 1; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
       ++i)
    ++n;
  return n;
}

}  // namespace

tds::TypeInfo param_type(const db::Value& v, std::string* declaration) {
  tds::TypeInfo t;
  switch (v.kind) {
    case db::Kind::Bool:
      t.type = tds::type::kBitN;
      t.max_length = 1;
      *declaration = "bit";
      break;
    case db::Kind::I64:
      t.type = tds::type::kIntN;
      t.max_length = 8;
      *declaration = "bigint";
      break;
    case db::Kind::U64:
      if (v.u64 <= static_cast<uint64_t>(INT64_MAX)) {
        t.type = tds::type::kIntN;
        t.max_length = 8;
        *declaration = "bigint";
      } else {
        t.type = tds::type::kDecimalN;
        t.max_length = 17;
        t.precision = 20;
        t.scale = 0;
        *declaration = "decimal(20,0)";
      }
      break;
    case db::Kind::F64:
      t.type = tds::type::kFltN;
      t.max_length = 8;
      *declaration = "float";
      break;
    case db::Kind::Bytes:
      t.type = tds::type::kBigVarBinary;
      t.max_length = v.str.size() <= tds::kMaxShortLen ? tds::kMaxShortLen : tds::kPlpMarker;
      *declaration = t.max_length == tds::kPlpMarker ? "varbinary(max)" : "varbinary(8000)";
      break;
    case db::Kind::Decimal: {
      const size_t scale = std::min<size_t>(decimal_scale(v.str), 38);
      t.type = tds::type::kDecimalN;
      t.max_length = 17;
      t.precision = 38;
      t.scale = static_cast<uint8_t>(scale);
      *declaration = "decimal(38," + std::to_string(scale) + ")";
      break;
    }
    case db::Kind::Time:
      t.type = tds::type::kDateTimeOffsetN;
      t.scale = 6;
      t.max_length = 10;
      *declaration = "datetimeoffset(6)";
      break;
    case db::Kind::Text:
    case db::Kind::Null:
    default:
      // UTF-8 -> UTF-16 at most doubles the bytes; 4000 characters is nvarchar's
      // bounded maximum, beyond it nvarchar(max) (PLP).
      t.type = tds::type::kNVarChar;
      t.collation = tds::kDefaultCollation;
      t.max_length = v.str.size() * 2 <= tds::kMaxShortLen ? tds::kMaxShortLen : tds::kPlpMarker;
      *declaration = t.max_length == tds::kPlpMarker ? "nvarchar(max)" : "nvarchar(4000)";
      break;
  }
  return t;
}

size_t count_parameters(std::string_view sql) {
  std::vector<sql::Marker> markers = sql::find_client_markers(sql, sql::Dialect::tsql);
#ifdef WIREPOOL_PLANTED_DEFECTS
  if (tds::planted_defect() == tds::PlantedDefect::marker_in_brackets) {
    plant_bracket_markers(sql, markers);
  }
#endif
  size_t positional = 0;
  std::vector<std::string_view> names;
  for (const auto& m : markers) {
    if (m.type != sql::Marker::Type::named) {
      if (m.number > 0) positional = std::max(positional, static_cast<size_t>(m.number));
    } else if (std::none_of(names.begin(), names.end(),
                            [&](std::string_view n) { return iequal(n, m.name); })) {
      names.push_back(m.name);
    }
  }
  return positional > 0 ? positional : names.size();
}

db::Result<Rewritten> rewrite_statement(std::string_view sql, db::Params params) {
  std::vector<sql::Marker> markers = sql::find_client_markers(sql, sql::Dialect::tsql);
#ifdef WIREPOOL_PLANTED_DEFECTS
  if (tds::planted_defect() == tds::PlantedDefect::marker_in_brackets) {
    plant_bracket_markers(sql, markers);
  }
#endif
  const bool named_params =
      std::any_of(params.begin(), params.end(), [](const db::Param& p) { return !p.name.empty(); });
  const bool positional_markers = std::any_of(markers.begin(), markers.end(), [](const auto& m) {
    return m.type != sql::Marker::Type::named;
  });
  // slot (0-based parameter index) of each marker, or -1 to leave it as it is.
  std::vector<long> slot(markers.size(), -1);
  std::vector<std::string_view> names_seen;
  size_t required = 0;
  for (size_t i = 0; i < markers.size(); ++i) {
    const auto& m = markers[i];
    if (m.type != sql::Marker::Type::named) {
      if (named_params || m.number <= 0) {
        if (named_params) return mismatch(params.size(), 0);
        continue;
      }
      slot[i] = m.number - 1;
    } else if (named_params) {
      for (size_t p = 0; p < params.size(); ++p) {
        std::string_view pname = params[p].name;
        if (!pname.empty() && (pname[0] == '@' || pname[0] == ':' || pname[0] == '$'))
          pname.remove_prefix(1);
        if (iequal(pname, m.name)) slot[i] = static_cast<long>(p);
      }
      continue;  // named: the count is checked by name, below
    } else if (!positional_markers && !params.empty()) {
      auto it = std::find_if(names_seen.begin(), names_seen.end(),
                             [&](std::string_view n) { return iequal(n, m.name); });
      if (it == names_seen.end()) {
        names_seen.push_back(m.name);
        slot[i] = static_cast<long>(names_seen.size() - 1);
      } else {
        slot[i] = static_cast<long>(it - names_seen.begin());
      }
    }
    if (slot[i] >= 0) required = std::max(required, static_cast<size_t>(slot[i]) + 1);
  }
  if (!named_params && required != params.size()) return mismatch(params.size(), required);

  Rewritten out;
  out.sql.reserve(sql.size() + 8 * markers.size());
  std::vector<bool> declared(params.size(), false);
  size_t at = 0;
  for (size_t i = 0; i < markers.size(); ++i) {
    if (slot[i] < 0) continue;
    const auto s = static_cast<size_t>(slot[i]);
    out.sql.append(sql.substr(at, markers[i].offset - at));
    at = markers[i].offset + markers[i].length;
    const db::Value& v = params[s].value;
    if (v.is_null()) {
      out.sql += "NULL";
      continue;
    }
    out.sql += "@p" + std::to_string(s + 1);
    declared[s] = true;
  }
  out.sql.append(sql.substr(at));
  for (size_t s = 0; s < params.size(); ++s) {
    if (!declared[s]) {
      out.signature += params[s].value.is_null() ? "N" : "-";
      continue;
    }
    std::string decl;
    tds::RpcParam p;
    p.name = "@p" + std::to_string(s + 1);
    p.value.type = param_type(params[s].value, &decl);
    p.value.value = params[s].value;
    if (p.value.value.kind == db::Kind::U64 && p.value.type.type == tds::type::kIntN) {
      p.value.value = db::Value::int64(static_cast<int64_t>(params[s].value.u64));
    }
    if (!out.declarations.empty()) out.declarations += ',';
    out.declarations += p.name + " " + decl;
    out.values.push_back(std::move(p));
    out.signature += "V";
  }
  out.signature += "|" + out.declarations;
  return out;
}

}  // namespace wirepool::tdsdrv
