// Result columns: describing a result, settling its rowset and binding its
// columns into one block of row arrays.

#include <algorithm>
#include <optional>

#include "backends/odbc/odbc_internal.hpp"
#include "backends/sqlite/sqlite_types.hpp"

namespace wirepool::odbc::detail {

namespace {

/// What the driver says of one result column.
struct ColumnDesc {
  std::string name;
  std::string type_name;  // empty: ODBC's name for `type`
  SQLSMALLINT type = 0;
  SQLSMALLINT digits = 0;
  SQLSMALLINT nullable = SQL_NULLABLE_UNKNOWN;
  SQLULEN size = 0;
};

/// psqlODBC answers SQLDescribeCol (for its nullable) and the type name with a
/// catalog query, a round trip per statement: read the fields that need none
/// (docs/odbc.md, quirks). Nullable stays unknown, the type name is ODBC's.
Status describe_from_attributes(Session& s, SQLHSTMT h, SQLUSMALLINT i, ColumnDesc& d) {
  auto num = [&](SQLUSMALLINT field) {
    SQLLEN v = 0;
    SQLColAttributeW(h, i, field, nullptr, 0, nullptr, &v);
    return v;
  };
  std::u16string name(256, u'\0');
  SQLSMALLINT name_bytes = 0;
  if (!ok(SQLColAttributeW(h, i, SQL_DESC_NAME, name.data(),
                           static_cast<SQLSMALLINT>(name.size() * 2), &name_bytes, nullptr))) {
    return s.stmt_error(h);
  }
  if (static_cast<size_t>(name_bytes) / 2 >= name.size()) {
    name.assign(static_cast<size_t>(name_bytes) / 2 + 1, u'\0');
    if (!ok(SQLColAttributeW(h, i, SQL_DESC_NAME, name.data(),
                             static_cast<SQLSMALLINT>(name.size() * 2), &name_bytes, nullptr))) {
      return s.stmt_error(h);
    }
  }
  d.name = to_utf8(name.data(), std::min(name.size() - 1, static_cast<size_t>(name_bytes) / 2));
  d.type = static_cast<SQLSMALLINT>(num(SQL_DESC_TYPE));
  if (d.type == SQL_DATETIME) {
    // psqlODBC 13 answers 0 for SQL_DESC_DATETIME_INTERVAL_CODE: the
    // display length tells date (10), time (8) and timestamp (19+) apart.
    const SQLLEN code = num(SQL_DESC_DATETIME_INTERVAL_CODE);
    const SQLLEN length = num(SQL_DESC_LENGTH);
    if (code == SQL_CODE_DATE || (code == 0 && length == 10)) {
      d.type = SQL_TYPE_DATE;
    } else if (code == SQL_CODE_TIME || (code == 0 && length < 19)) {
      d.type = SQL_TYPE_TIME;
    } else {
      d.type = SQL_TYPE_TIMESTAMP;
    }
  }
  const bool numeric = d.type == SQL_DECIMAL || d.type == SQL_NUMERIC;
  d.size = static_cast<SQLULEN>(
      std::max<SQLLEN>(num(numeric ? SQL_DESC_PRECISION : SQL_DESC_LENGTH), 0));
  d.digits = static_cast<SQLSMALLINT>(num(SQL_DESC_SCALE));
  return {};
}

/// A driver without W entry points (Session::narrow): UTF-8 through the narrow ones.
Status describe_narrow(Session& s, SQLHSTMT h, SQLUSMALLINT i, ColumnDesc& d) {
  std::string name(256, '\0');
  SQLSMALLINT name_len = 0;
  SQLRETURN rc = SQLDescribeCol(h, i, reinterpret_cast<SQLCHAR*>(name.data()),
                                static_cast<SQLSMALLINT>(name.size()), &name_len, &d.type, &d.size,
                                &d.digits, &d.nullable);
  if (!ok(rc)) return s.stmt_error(h);
  if (name_len >= static_cast<SQLSMALLINT>(name.size())) {
    name.assign(static_cast<size_t>(name_len) + 1, '\0');
    rc = SQLDescribeCol(h, i, reinterpret_cast<SQLCHAR*>(name.data()),
                        static_cast<SQLSMALLINT>(name.size()), &name_len, &d.type, &d.size,
                        &d.digits, &d.nullable);
    if (!ok(rc)) return s.stmt_error(h);
  }
  name.resize(std::min(name.size() - 1, static_cast<size_t>(std::max<SQLSMALLINT>(name_len, 0))));
  d.name = std::move(name);
  char tn[128] = {};
  SQLSMALLINT tn_len = 0;
  if (ok(SQLColAttribute(h, i, SQL_DESC_TYPE_NAME, tn, sizeof tn, &tn_len, nullptr))) {
    d.type_name.assign(
        tn, std::min<size_t>(sizeof tn - 1, static_cast<size_t>(std::max<SQLSMALLINT>(tn_len, 0))));
  }
  return {};
}

/// Every other driver: SQLDescribeColW and the type name as UTF-16.
Status describe_wide(Session& s, SQLHSTMT h, SQLUSMALLINT i, ColumnDesc& d) {
  std::u16string name(256, u'\0');
  SQLSMALLINT name_len = 0;
  SQLRETURN rc = SQLDescribeColW(h, i, wide(name), static_cast<SQLSMALLINT>(name.size()), &name_len,
                                 &d.type, &d.size, &d.digits, &d.nullable);
  if (!ok(rc)) return s.stmt_error(h);
  if (name_len >= static_cast<SQLSMALLINT>(name.size())) {
    name.assign(static_cast<size_t>(name_len) + 1, u'\0');
    rc = SQLDescribeColW(h, i, wide(name), static_cast<SQLSMALLINT>(name.size()), &name_len,
                         &d.type, &d.size, &d.digits, &d.nullable);
    if (!ok(rc)) return s.stmt_error(h);
  }
  d.name = to_utf8(name.data(),
                   std::min(name.size(), static_cast<size_t>(std::max<SQLSMALLINT>(name_len, 0))));
  std::u16string tn(64, u'\0');
  SQLSMALLINT tn_len = 0;
  if (ok(SQLColAttributeW(h, i, SQL_DESC_TYPE_NAME, tn.data(),
                          static_cast<SQLSMALLINT>(tn.size() * 2), &tn_len, nullptr))) {
    d.type_name = to_utf8(
        tn.data(), std::min(tn.size(), static_cast<size_t>(std::max<SQLSMALLINT>(tn_len, 0)) / 2));
  }
  return {};
}

/// SQLite ODBC names a DECIMAL(p,s) column "DECIMAL" without its (p,s): the
/// declared type as SQLite keeps it (pragma_table_info of the column's base
/// table), on a handle of its own. Unknown (false) for an expression or an
/// aliased column (the driver reports the alias as the base column).
bool sqlite_declared_numeric(Session& s, SQLHSTMT h, SQLUSMALLINT col, sqlite::DeclaredType& out) {
  auto attr = [&](SQLUSMALLINT field) {
    char buf[256] = {};
    SQLSMALLINT len = 0;
    if (!ok(SQLColAttribute(h, col, field, buf, sizeof buf, &len, nullptr))) return std::string();
    return std::string(
        buf, std::min<size_t>(sizeof buf - 1, static_cast<size_t>(std::max<SQLSMALLINT>(len, 0))));
  };
  const std::string table = attr(SQL_DESC_BASE_TABLE_NAME);
  const std::string column = attr(SQL_DESC_BASE_COLUMN_NAME);
  if (table.empty() || column.empty()) return false;
  auto literal = [](const std::string& v) {
    std::string q = "'";
    for (char c : v) {
      if (c == '\'') q += '\'';
      q += c;
    }
    return q + "'";
  };
  const std::string sql = "SELECT type FROM pragma_table_info(" + literal(table) +
                          ") WHERE name = " + literal(column) + " COLLATE NOCASE";
  // Never published as running (a cancel does not look for it): a plain handle.
  SQLHSTMT tmp = SQL_NULL_HSTMT;
  if (!ok(SQLAllocHandle(SQL_HANDLE_STMT, s.dbc, &tmp))) return false;
  const auto wsql = to_utf16(sql);
  char type[128] = {};
  SQLLEN ind = 0;
  const bool found = wsql && ok(exec_direct(s, tmp, sql, *wsql)) && ok(SQLFetch(tmp)) &&
                     ok(SQLGetData(tmp, 1, SQL_C_CHAR, type, sizeof type, &ind)) && ind > 0;
  SQLFreeHandle(SQL_HANDLE_STMT, tmp);
  if (!found) return false;
  out = sqlite::parse_declared_type(
      std::string_view(type, std::min<size_t>(sizeof type - 1, static_cast<size_t>(ind))));
  return out.decl == sqlite::Decl::numeric && out.native.precision > 0;
}

}  // namespace

Result<Shape> describe(Session& s, SQLHSTMT h) {
  Shape out;
  SQLSMALLINT n = 0;
  if (!ok(SQLNumResultCols(h, &n))) return s.stmt_error(h);
  size_t row_bytes = 0;
  bool unbounded = false;
  bool full_width = false;  // a long column bound at its whole declared width
  for (SQLSMALLINT i = 1; i <= n; ++i) {
    ColumnDesc d;
    const auto col = static_cast<SQLUSMALLINT>(i);
    const Status st = s.flavor == Flavor::postgresql && !s.narrow
                          ? describe_from_attributes(s, h, col, d)
                      : s.narrow ? describe_narrow(s, h, col, d)
                                 : describe_wide(s, h, col, d);
    if (!st.ok()) return st.error();
    SQLSMALLINT type = d.type;
    SQLULEN size = d.size;
    SQLSMALLINT digits = d.digits;
    if (s.flavor == Flavor::sqlite) {
      // SQLite ODBC describes DECIMAL as text and NUMERIC as a double, and
      // names either without its (p,s): read as exact text, of the declared
      // precision where the table says it.
      sqlite::DeclaredType decl = sqlite::parse_declared_type(d.type_name);
      if (decl.decl == sqlite::Decl::numeric && decl.native.precision <= 0) {
        sqlite::DeclaredType full;
        if (sqlite_declared_numeric(s, h, col, full)) decl = full;
      }
      if (decl.decl == sqlite::Decl::numeric) {
        type = SQL_DECIMAL;
        size = decl.native.precision > 0 ? static_cast<SQLULEN>(decl.native.precision) : 0;
        digits = static_cast<SQLSMALLINT>(std::max(decl.native.scale, 0));
      }
    }
    SQLLEN is_unsigned = SQL_FALSE;
    SQLColAttributeW(h, col, SQL_DESC_UNSIGNED, nullptr, 0, nullptr, &is_unsigned);
    ColumnPlan plan =
        plan_column(type, size, digits, is_unsigned == SQL_TRUE, s.options.long_bytes);
    if (plan.unbounded && !s.reread && s.flavor == Flavor::mariadb && plan.read == Read::wtext &&
        size > 0 && size <= 65535) {
      // MariaDB's TEXT holds at most 65,535 bytes, so at most 65,535 UTF-16
      // units: bound whole, it never overflows, and the rowset keeps several
      // rows although MariaDB ODBC cannot re-read a cell (docs/odbc.md).
      plan.unbounded = false;
      plan.width = (static_cast<size_t>(size) + 1) * sizeof(SQLWCHAR);
      full_width = true;
    }
    db::Column c;
    c.name = std::move(d.name);
    c.kind = plan.kind;
    // SQLite's width comes from the declared name, as on driver sqlite.
    c.native.int_bytes = s.flavor == Flavor::sqlite
                             ? sqlite::parse_declared_type(d.type_name).native.int_bytes
                             : plan.int_bytes;
    c.nullable = d.nullable != SQL_NO_NULLS;
    c.native.name = d.type_name.empty() ? sql_type_name(type) : d.type_name;
    if (plan.kind == db::Kind::Decimal) {
      c.native.precision = static_cast<int32_t>(size);
      c.native.scale = digits;
    } else if (plan.kind == db::Kind::Text || plan.kind == db::Kind::Bytes) {
      if (size > 0 && !plan.unbounded) c.native.length = static_cast<int64_t>(size);
    }
    c.native.time_form = plan.time_form;
    unbounded = unbounded || plan.unbounded;
    row_bytes += plan.width + sizeof(SQLLEN);
    out.columns.push_back(std::move(c));
    out.plans.push_back(plan);
  }
  if (unbounded && !s.reread) {
    out.get_data_only = true;
    out.rowset = 1;
  } else if (n > 0) {
    size_t budget = s.options.rowset_bytes;
    // A row of a full-width TEXT binding is up to 128 KiB: allow 8 of them
    // (1 MiB) rather than one a fetch.
    if (full_width) budget = std::max(budget, std::min<size_t>(8 * row_bytes, 2u << 20));
    out.rowset = std::clamp<size_t>(budget / std::max<size_t>(row_bytes, 1), 1, 4096);
  }
  return out;
}

/// Settles the rowset of a cursor that has not fetched yet and binds its
/// columns into one block: the handle's own if large enough, else the
/// session's spare, else a new one.
Status bind_columns(Session& s, Handle& hd) {
  const SQLHSTMT h = hd.h;
  const Shape& shape = *hd.shape;
  std::vector<Bound>& bound = hd.bound;
  SQLULEN* fetched = &hd.fetched;
  bound.clear();
  SQLFreeStmt(h, SQL_UNBIND);
  const size_t rowset = shape.get_data_only ? 1 : shape.rowset;
  SQLSetStmtAttrW(h, SQL_ATTR_ROW_BIND_TYPE, reinterpret_cast<SQLPOINTER>(SQL_BIND_BY_COLUMN), 0);
  if (!ok(SQLSetStmtAttrW(h, SQL_ATTR_ROW_ARRAY_SIZE, reinterpret_cast<SQLPOINTER>(rowset), 0))) {
    return s.stmt_error(h);
  }
  if (!ok(SQLSetStmtAttrW(h, SQL_ATTR_ROWS_FETCHED_PTR, fetched, 0))) return s.stmt_error(h);
  s.stats.rowset_size = rowset;
  if (shape.get_data_only) return {};
  // Each array starts aligned for any C type (SQL_TIMESTAMP_STRUCT, doubles).
  constexpr size_t kAlign = alignof(std::max_align_t);
  auto aligned = [](size_t n) { return (n + kAlign - 1) / kAlign * kAlign; };
  size_t need = 0;
  for (const ColumnPlan& plan : shape.plans) {
    need += aligned(rowset * sizeof(SQLLEN)) + aligned(rowset * plan.width);
  }
  if (hd.rows.size < need) {
    {
      std::lock_guard lock(s.mu);  // Handle::free gives blocks back under it
      if (s.spare_rows.size >= need) {
        hd.rows = std::move(s.spare_rows);
        s.spare_rows = {};
      }
    }
    if (hd.rows.size < need) {
      hd.rows.bytes.reset(new unsigned char[need]);  // operator new[]: aligned for max_align_t
      hd.rows.size = need;
      ++s.stats.row_blocks;
    }
  }
  unsigned char* at = hd.rows.bytes.get();
  bound.resize(shape.plans.size());
  for (size_t i = 0; i < shape.plans.size(); ++i) {
    Bound& b = bound[i];
    b.plan = shape.plans[i];
    b.ind = reinterpret_cast<SQLLEN*>(at);
    at += aligned(rowset * sizeof(SQLLEN));
    b.data = at;
    at += aligned(rowset * b.plan.width);
    const SQLRETURN rc = SQLBindCol(h, static_cast<SQLUSMALLINT>(i + 1), b.plan.c_type, b.data,
                                    static_cast<SQLLEN>(b.plan.width), b.ind);
    if (!ok(rc)) return s.stmt_error(h);
  }
  return {};
}

/// Describes the result the handle's cursor now holds and binds it, unless
/// the shape settled before execution still fits. The rowset is set here,
/// before the cursor's first fetch.
Status settle_result(Session& s, Handle& hd) {
  // A prepared statement described and bound before its execution returns
  // that result: no call needed.
  if (hd.settled && hd.described && hd.shape && !hd.shape->columns.empty()) return {};
  SQLSMALLINT n = 0;
  if (!ok(SQLNumResultCols(hd.h, &n))) return s.stmt_error(hd.h);
  if (hd.settled && hd.shape && hd.shape->columns.size() == static_cast<size_t>(n)) return {};
  if (n == 0) {
    // No result set (INSERT, UPDATE, ...): nothing to describe or bind, and
    // the empty shape of the last execution serves again (it was allocated
    // and described, with a second SQLNumResultCols, per execution).
    if (!hd.shape || !hd.shape->columns.empty()) hd.shape = std::make_unique<Shape>();
    hd.settled = false;
    return {};
  }
  auto shape = describe(s, hd.h);
  if (!shape.ok()) return shape.take_error();
  hd.shape = std::make_unique<Shape>(std::move(shape.value()));
  hd.settled = false;
  if (hd.shape->columns.empty()) return {};
  if (auto st = bind_columns(s, hd); !st.ok()) return st;
  hd.settled = true;
  return {};
}

/// Before SQLExecute of a prepared statement: describe what SQLPrepare told
/// and settle the rowset, so it is never set on an open cursor.
Status settle_prepared(Session& s, Handle& hd) {
  // Once per handle: psqlODBC answers SQLNumResultCols before an execution
  // with a Parse/Describe round trip and a plan it deallocates after the
  // next execution, which made every execution of a prepared INSERT three
  // round trips (docs/odbc.md, quirks).
  if (hd.settled || hd.described) return {};
  hd.described = true;
  SQLSMALLINT n = 0;
  if (!ok(SQLNumResultCols(hd.h, &n)) || n == 0) return {};  // known after execution
  auto shape = describe(s, hd.h);
  if (!shape.ok()) return shape.take_error();
  hd.shape = std::make_unique<Shape>(std::move(shape.value()));
  if (auto st = bind_columns(s, hd); !st.ok()) return st;
  hd.settled = true;
  return {};
}

}  // namespace wirepool::odbc::detail

namespace wirepool::odbc::detail {

/// SQLite ODBC types a column without a declared type (count(*), 1 + 1) from
/// the first row, once the statement has stepped; after SQLPrepare alone it
/// guesses "varchar" (255). The native SQLite driver's answer at Parse
/// (docs/odbc.md#types): a read-only SELECT is executed once with its
/// parameters NULL, described again and closed. Cancellable, and bounded by
/// query_timeout, as any execution.
Status probe_expression_types(Session& s, Handle& hd) {
  if (s.flavor != Flavor::sqlite || !hd.settled || !hd.shape) return {};
  const auto& verbs = hd.verb_list();
  if (verbs.size() != 1 || verbs[0] != "SELECT") return {};
  const auto& cols = hd.shape->columns;
  if (std::none_of(cols.begin(), cols.end(),
                   [](const db::Column& c) { return c.native.name == "varchar"; })) {
    return {};
  }
  SQLSMALLINT np = 0;
  if (!ok(SQLNumParams(hd.h, &np))) return {};
  SQLLEN null_ind = SQL_NULL_DATA;
  for (SQLSMALLINT i = 1; i <= np; ++i) {
    SQLBindParameter(hd.h, static_cast<SQLUSMALLINT>(i), SQL_PARAM_INPUT, SQL_C_CHAR, SQL_VARCHAR,
                     1, 0, nullptr, 0, &null_ind);
  }
  SQLRETURN rc;
  {
    Running running(hd);
    rc = SQLExecute(hd.h);
  }
  const bool timed_out = s.timed_out.load(std::memory_order_relaxed);
  const bool cancelled = s.cancelled.load() == hd.h;
  std::optional<Result<Shape>> shape;
  if (ok(rc) && !timed_out && !cancelled) shape = describe(s, hd.h);
  SQLFreeStmt(hd.h, SQL_CLOSE);
  SQLFreeStmt(hd.h, SQL_RESET_PARAMS);
  if (cancelled) s.cancelled.store(SQL_NULL_HSTMT);
  if (timed_out) return statement_timeout(s.options);
  if (cancelled) return user_cancel();
  // An error (the statement refuses NULLs) or an unchanged answer: SQLPrepare's stays.
  if (!shape || !shape->ok()) return {};
  hd.shape = std::make_unique<Shape>(std::move(shape->value()));
  hd.settled = false;
  if (auto st = bind_columns(s, hd); !st.ok()) return st;
  hd.settled = true;
  return {};
}

}  // namespace wirepool::odbc::detail
