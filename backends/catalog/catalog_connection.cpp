#include "backends/catalog/catalog_connection.hpp"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sql/pg_tokens.hpp"
#include "sql/rewrite.hpp"
#include "sql/rewrite_mysql.hpp"

namespace wirepool::db {

namespace {

using Clock = std::chrono::steady_clock;

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return out;
}

std::string cell(const Value& v) {
  switch (v.kind) {
    case Kind::I64:
      return std::to_string(v.i64);
    case Kind::U64:
      return std::to_string(v.u64);
    case Kind::Bool:
      return v.b ? "1" : "0";
    case Kind::Null:
      return {};
    default:
      return v.str;
  }
}

/// "name" as a SQLite identifier.
std::string ident(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

/// Runs `sql` on `conn` and answers its rows as text (NULL as nullopt).
using Row = std::vector<std::optional<std::string>>;
Result<std::vector<Row>> fetch(ConnectionImpl& conn, std::string_view sql) {
  auto r = call_blocking(conn, [&] { return conn.query(sql, {}, {}); });
  if (!r.ok()) return r.error();
  Rows rows(std::move(r.value()));
  std::vector<Value> row(rows.columns().size());
  std::vector<Row> out;
  for (;;) {
    auto more = call_blocking(conn, [&] { return rows.next(row); });
    if (!more.ok()) return more.error();
    if (!more.value()) break;
    Row& o = out.emplace_back();
    for (const Value& v : row)
      o.push_back(v.is_null() ? std::nullopt : std::optional<std::string>(cell(v)));
  }
  (void)rows.close();
  return out;
}

// ---- MariaDB information_schema -> mirror DDL --------------------------------

constexpr std::string_view kMysqlColumns =
    "SELECT c.TABLE_NAME, c.COLUMN_NAME, c.DATA_TYPE, c.COLUMN_TYPE, c.IS_NULLABLE, "
    "c.COLUMN_DEFAULT, c.NUMERIC_PRECISION, c.NUMERIC_SCALE, c.CHARACTER_MAXIMUM_LENGTH, "
    "t.TABLE_TYPE FROM information_schema.COLUMNS c JOIN information_schema.TABLES t "
    "ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME "
    "WHERE c.TABLE_SCHEMA = DATABASE() ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION";
constexpr std::string_view kMysqlIndexes =
    "SELECT TABLE_NAME, INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS "
    "WHERE TABLE_SCHEMA = DATABASE() ORDER BY TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX";
constexpr std::string_view kMysqlForeignKeys =
    "SELECT k.TABLE_NAME, k.CONSTRAINT_NAME, k.COLUMN_NAME, k.REFERENCED_TABLE_NAME, "
    "k.REFERENCED_COLUMN_NAME, r.UPDATE_RULE, r.DELETE_RULE "
    "FROM information_schema.KEY_COLUMN_USAGE k JOIN information_schema.REFERENTIAL_CONSTRAINTS r "
    "ON r.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND r.CONSTRAINT_NAME = k.CONSTRAINT_NAME "
    "AND r.TABLE_NAME = k.TABLE_NAME WHERE k.TABLE_SCHEMA = DATABASE() "
    "AND k.REFERENCED_TABLE_NAME IS NOT NULL "
    "ORDER BY k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION";

/// The mirror's declared type for a MariaDB column: "pgtype_<typname>[(typmod)]",
/// which the SQLite catalog reads as that PostgreSQL type (sqlite_catalog.cpp),
/// the type the mysql driver sends for the column where that is not text.
std::string mysql_column_type(const Row& c) {
  const std::string data = c[2].value_or("");
  const std::string full = c[3].value_or("");
  const bool is_unsigned = full.find("unsigned") != std::string::npos;
  if (data == "tinyint") return full.rfind("tinyint(1)", 0) == 0 ? "pgtype_bool" : "pgtype_int2";
  if (data == "smallint") return is_unsigned ? "pgtype_int4" : "pgtype_int2";
  if (data == "mediumint" || data == "year") return "pgtype_int4";
  if (data == "int") return is_unsigned ? "pgtype_int8" : "pgtype_int4";
  if (data == "bigint") return is_unsigned ? "pgtype_numeric" : "pgtype_int8";
  if (data == "float" || data == "double") return "pgtype_float8";
  if (data == "decimal") {
    return "pgtype_numeric(" + c[6].value_or("10") + "," + c[7].value_or("0") + ")";
  }
  if (data == "bit") return "pgtype_numeric";
  if (data == "date") return "pgtype_date";
  if (data == "datetime") return "pgtype_timestamp";
  if (data == "timestamp") return "pgtype_timestamptz";
  if (data == "varchar" && c[8]) return "pgtype_varchar(" + *c[8] + ")";
  if (data == "char" && c[8]) return "pgtype_bpchar(" + *c[8] + ")";
  if (data.find("blob") != std::string::npos || data.find("binary") != std::string::npos ||
      data == "geometry") {
    return "pgtype_bytea";
  }
  return "pgtype_text";
}

/// A MariaDB COLUMN_DEFAULT as a SQLite DEFAULT clause ("" for none).
std::string mysql_default(const std::optional<std::string>& d) {
  if (!d || *d == "NULL") return {};
  const std::string& s = *d;
  if (s == "current_timestamp()" || s.rfind("current_timestamp(", 0) == 0) {
    return " DEFAULT CURRENT_TIMESTAMP";
  }
  bool number = !s.empty();
  for (char ch : s)
    number = number && ((ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == 'e');
  if (number || (s.size() >= 2 && s.front() == '\'' && s.back() == '\'')) return " DEFAULT " + s;
  return " DEFAULT (" + s + ")";
}

struct Mirror {
  std::vector<std::string> tables;     // CREATE TABLE / VIEW statements
  std::vector<std::string> fallbacks;  // the same without defaults
  std::vector<std::string> indexes;    // CREATE [UNIQUE] INDEX statements
};

/// A backend's schema as the mirror needs it, whatever its metadata looked like.
struct Schema {
  struct Column {
    std::string table, name, type;  // type: the mirror's (pgtype_...)
    bool not_null = false;
    bool view = false;
    std::string default_clause;  // " DEFAULT ..." or ""
  };
  struct Index {
    std::string table;
    bool unique = false;
    std::vector<std::string> cols;
  };
  struct Fk {
    std::vector<std::string> cols, ref_cols;
    std::string ref, on_update, on_delete;
  };
  std::vector<Column> columns;                              // grouped by table, in column order
  std::map<std::string, std::vector<std::string>> primary;  // table -> key columns
  std::map<std::pair<std::string, std::string>, Index> indexes;  // (table, name)
  std::map<std::string, std::map<std::string, Fk>> foreign;      // table -> name -> key
};

/// The mirror's SQLite DDL for `s`.
Mirror build_mirror(Schema& s) {
  auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& c : v)
      out += (out.empty() ? "" : ", ") + ident(c);
    return out;
  };
  Mirror m;
  std::string table, body, plain;
  bool view = false;
  auto finish = [&] {
    if (table.empty()) return;
    if (view) {
      m.tables.push_back("CREATE VIEW " + ident(table) + " AS SELECT " + body);
      m.fallbacks.push_back(m.tables.back());
      return;
    }
    std::string tail;
    if (auto p = s.primary.find(table); p != s.primary.end())
      tail += ", PRIMARY KEY (" + list(p->second) + ")";
    for (const auto& [name, f] : s.foreign[table]) {
      tail += ", CONSTRAINT " + ident(name) + " FOREIGN KEY (" + list(f.cols) + ") REFERENCES " +
              ident(f.ref) + " (" + list(f.ref_cols) + ") ON UPDATE " + f.on_update +
              " ON DELETE " + f.on_delete;
    }
    m.tables.push_back("CREATE TABLE " + ident(table) + " (" + body + tail + ")");
    m.fallbacks.push_back("CREATE TABLE " + ident(table) + " (" + plain + tail + ")");
  };
  for (const Schema::Column& c : s.columns) {
    if (c.table != table) {
      finish();
      table = c.table;
      body.clear();
      plain.clear();
      view = c.view;
    }
    if (view) {
      body += (body.empty() ? "" : ", ") + std::string("CAST(NULL AS ") + c.type + ") AS " +
              ident(c.name);
      continue;
    }
    std::string col = ident(c.name) + " " + c.type;
    if (c.not_null) col += " NOT NULL";
    plain += (plain.empty() ? "" : ", ") + col;
    body += (body.empty() ? "" : ", ") + col + c.default_clause;
  }
  finish();
  // Index names are per table in MariaDB and SQL Server, per schema in SQLite and PostgreSQL.
  std::set<std::string> names;
  for (const auto& [key, i] : s.indexes) {
    std::string name = key.second;
    if (lower_ascii(name).rfind("sqlite_", 0) == 0) {
      // SQLite refuses such names (a SQLite server's own, read through another server's
      // INFORMATION_SCHEMA): PostgreSQL's name for a unique constraint instead.
      name = key.first;
      for (const auto& c : i.cols)
        name += "_" + c;
      name += "_key";
    }
    if (!names.insert(name).second) names.insert(name = key.first + "_" + key.second);
    m.indexes.push_back(std::string("CREATE ") + (i.unique ? "UNIQUE " : "") + "INDEX " +
                        ident(name) + " ON " + ident(i.table) + " (" + list(i.cols) + ")");
  }
  return m;
}

Result<Mirror> mysql_mirror(ConnectionImpl& conn) {
  auto columns = fetch(conn, kMysqlColumns);
  if (!columns.ok()) return columns.error();
  auto indexes = fetch(conn, kMysqlIndexes);
  if (!indexes.ok()) return indexes.error();
  auto fks = fetch(conn, kMysqlForeignKeys);
  if (!fks.ok()) return fks.error();

  Schema s;
  // Keys and indexes by table: PRIMARY into the table, the others as indexes.
  for (const Row& r : indexes.value()) {
    if (!r[0] || !r[1] || !r[3]) continue;
    if (*r[1] == "PRIMARY") {
      s.primary[*r[0]].push_back(*r[3]);
      continue;
    }
    Schema::Index& i = s.indexes[{*r[0], *r[1]}];
    i.table = *r[0];
    i.unique = r[2] && *r[2] == "0";
    i.cols.push_back(*r[3]);
  }
  for (const Row& r : fks.value()) {
    Schema::Fk& f = s.foreign[r[0].value_or("")][r[1].value_or("")];
    f.cols.push_back(r[2].value_or(""));
    f.ref = r[3].value_or("");
    f.ref_cols.push_back(r[4].value_or(""));
    f.on_update = r[5].value_or("NO ACTION");
    f.on_delete = r[6].value_or("NO ACTION");
  }
  for (const Row& c : columns.value()) {
    s.columns.push_back({c[0].value_or(""), c[1].value_or(""), mysql_column_type(c),
                         c[4] && *c[4] == "NO", c[9].value_or("") == "VIEW", mysql_default(c[5])});
  }
  return build_mirror(s);
}

// ---- SQL Server INFORMATION_SCHEMA -> mirror DDL --------------------------------

// The SQL standard's INFORMATION_SCHEMA only (SQL Server's sys.* views differ
// from every other server's): tables, views, columns, primary keys, unique
// constraints and foreign keys of the current database, every schema.
constexpr std::string_view kInfoSchemaUserSchema =
    "TABLE_SCHEMA NOT IN ('INFORMATION_SCHEMA', 'sys', 'information_schema', 'pg_catalog')";
const std::string kStdColumns =
    "SELECT c.TABLE_SCHEMA, c.TABLE_NAME, c.COLUMN_NAME, c.DATA_TYPE, c.IS_NULLABLE, "
    "c.COLUMN_DEFAULT, c.NUMERIC_PRECISION, c.NUMERIC_SCALE, c.CHARACTER_MAXIMUM_LENGTH, "
    "t.TABLE_TYPE FROM INFORMATION_SCHEMA.COLUMNS c JOIN INFORMATION_SCHEMA.TABLES t "
    "ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME WHERE t." +
    std::string(kInfoSchemaUserSchema) +
    " ORDER BY c.TABLE_NAME, c.TABLE_SCHEMA, c.ORDINAL_POSITION";
const std::string kStdKeys =
    "SELECT tc.TABLE_NAME, tc.CONSTRAINT_NAME, tc.CONSTRAINT_TYPE, k.COLUMN_NAME "
    "FROM INFORMATION_SCHEMA.TABLE_CONSTRAINTS tc JOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE k "
    "ON k.CONSTRAINT_SCHEMA = tc.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = tc.CONSTRAINT_NAME "
    "AND k.TABLE_NAME = tc.TABLE_NAME WHERE tc.CONSTRAINT_TYPE IN ('PRIMARY KEY', 'UNIQUE') "
    "AND tc." +
    std::string(kInfoSchemaUserSchema) +
    " ORDER BY tc.TABLE_NAME, tc.CONSTRAINT_NAME, k.ORDINAL_POSITION";
constexpr std::string_view kStdForeignKeys =
    "SELECT k.TABLE_NAME, k.CONSTRAINT_NAME, k.COLUMN_NAME, u.TABLE_NAME, u.COLUMN_NAME, "
    "r.UPDATE_RULE, r.DELETE_RULE FROM INFORMATION_SCHEMA.REFERENTIAL_CONSTRAINTS r "
    "JOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE k ON k.CONSTRAINT_SCHEMA = r.CONSTRAINT_SCHEMA "
    "AND k.CONSTRAINT_NAME = r.CONSTRAINT_NAME "
    "JOIN INFORMATION_SCHEMA.KEY_COLUMN_USAGE u ON u.CONSTRAINT_SCHEMA = "
    "r.UNIQUE_CONSTRAINT_SCHEMA AND u.CONSTRAINT_NAME = r.UNIQUE_CONSTRAINT_NAME "
    "AND u.ORDINAL_POSITION = k.ORDINAL_POSITION "
    "ORDER BY k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION";

/// The mirror's declared type for a SQL Server column (DATA_TYPE, and the
/// standard's names, which other servers' INFORMATION_SCHEMA use): the type
/// the tds driver sends for it (docs/tds-driver.md), text where it sends text.
std::string sqlserver_column_type(const Row& c) {
  const std::string data = lower_ascii(c[3].value_or(""));
  const std::optional<std::string>& length = c[8];
  if (data == "tinyint" || data == "smallint") return "pgtype_int2";
  if (data == "int" || data == "integer") return "pgtype_int4";
  if (data == "bigint") return "pgtype_int8";
  if (data == "bit" || data == "boolean") return "pgtype_bool";
  if (data == "decimal" || data == "numeric") {
    if (!c[6]) return "pgtype_numeric";
    return "pgtype_numeric(" + *c[6] + "," + c[7].value_or("0") + ")";
  }
  if (data == "money") return "pgtype_numeric(19,4)";
  if (data == "smallmoney") return "pgtype_numeric(10,4)";
  if (data == "float" || data == "real" || data == "double precision") return "pgtype_float8";
  if (data == "date") return "pgtype_date";
  if (data == "datetime" || data == "datetime2" || data == "smalldatetime" ||
      data == "timestamp without time zone") {
    return "pgtype_timestamp";
  }
  if (data == "datetimeoffset" || data == "timestamp with time zone") return "pgtype_timestamptz";
  const bool sized = length && *length != "-1" && *length != "0";
  if (data == "varchar" || data == "nvarchar" || data == "character varying") {
    return sized ? "pgtype_varchar(" + *length + ")" : "pgtype_text";
  }
  if (data == "char" || data == "nchar" || data == "character") {
    return sized ? "pgtype_bpchar(" + *length + ")" : "pgtype_bpchar";
  }
  if (data == "varbinary" || data == "binary" || data == "image" || data == "bytea") {
    return "pgtype_bytea";
  }
  return "pgtype_text";  // text, ntext, xml, uniqueidentifier, time, sql_variant, ...
}

/// A SQL Server COLUMN_DEFAULT ("((0))", "(N'x')", "(getdate())") as a SQLite
/// DEFAULT clause: constants and the current time; "" for other expressions.
std::string sqlserver_default(const std::optional<std::string>& d) {
  if (!d) return {};
  std::string_view s = *d;
  while (s.size() >= 2 && s.front() == '(' && s.back() == ')')
    s = s.substr(1, s.size() - 2);
  if (s.size() >= 3 && (s.front() == 'N' || s.front() == 'n') && s[1] == '\'') s.remove_prefix(1);
  const std::string l = lower_ascii(s);
  if (l == "getdate()" || l == "sysdatetime()" || l == "sysdatetimeoffset()" ||
      l == "current_timestamp" || l == "getutcdate()" || l == "sysutcdatetime()") {
    return " DEFAULT CURRENT_TIMESTAMP";
  }
  bool number = !s.empty();
  for (char ch : s)
    number = number && ((ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == 'e');
  if (number ||
      (s.size() >= 2 && s.front() == '\'' && s.back() == '\'' && s.find('\'', 1) == s.size() - 1)) {
    return " DEFAULT " + std::string(s);
  }
  return {};
}

Result<Mirror> sqlserver_mirror(ConnectionImpl& conn) {
  auto columns = fetch(conn, kStdColumns);
  if (!columns.ok()) return columns.error();
  auto keys = fetch(conn, kStdKeys);
  if (!keys.ok()) return keys.error();
  auto fks = fetch(conn, kStdForeignKeys);
  if (!fks.ok()) return fks.error();

  Schema s;
  for (const Row& r : keys.value()) {
    if (!r[0] || !r[1] || !r[2] || !r[3]) continue;
    if (*r[2] == "PRIMARY KEY") {
      s.primary[*r[0]].push_back(*r[3]);
      continue;
    }
    Schema::Index& i = s.indexes[{*r[0], *r[1]}];
    i.table = *r[0];
    i.unique = true;
    i.cols.push_back(*r[3]);
  }
  for (const Row& r : fks.value()) {
    Schema::Fk& f = s.foreign[r[0].value_or("")][r[1].value_or("")];
    f.cols.push_back(r[2].value_or(""));
    f.ref = r[3].value_or("");
    f.ref_cols.push_back(r[4].value_or(""));
    f.on_update = r[5].value_or("NO ACTION");
    f.on_delete = r[6].value_or("NO ACTION");
  }
  // One schema in the mirror: a table name met again in another schema is skipped.
  std::set<std::string> seen;
  std::string last_table, last_schema;
  for (const Row& c : columns.value()) {
    const std::string schema = c[0].value_or(""), table = c[1].value_or("");
    if (table != last_table || schema != last_schema) {
      if (!seen.insert(table).second) continue;
      last_table = table;
      last_schema = schema;
    }
    s.columns.push_back({table, c[2].value_or(""), sqlserver_column_type(c), c[4] && *c[4] == "NO",
                         c[9].value_or("") == "VIEW", sqlserver_default(c[5])});
  }
  return build_mirror(s);
}

// ---- SQLite (through ODBC) -> the same DDL ------------------------------------

Result<Mirror> sqlite_mirror(ConnectionImpl& conn) {
  auto objects = fetch(conn,
                       "SELECT type, sql FROM sqlite_schema WHERE type IN ('table', 'view', "
                       "'index') AND sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid");
  if (!objects.ok()) return objects.error();
  Mirror m;
  for (const Row& r : objects.value()) {
    if (!r[0] || !r[1]) continue;
    if (*r[0] == "index") {
      m.indexes.push_back(*r[1]);
    } else {
      m.tables.push_back(*r[1]);
      m.fallbacks.push_back(*r[1]);
    }
  }
  return m;
}

char lower_ascii(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

/// ASCII case-insensitive substring test (`word` in lower case).
bool icontains(std::string_view text, std::string_view word) {
  if (word.size() > text.size()) return false;
  for (size_t i = 0; i + word.size() <= text.size(); ++i) {
    size_t k = 0;
    while (k < word.size() && lower_ascii(text[i + k]) == word[k])
      ++k;
    if (k == word.size()) return true;
  }
  return false;
}

/// SQLite behind ODBC has neither information_schema nor the functions the
/// SQLite driver adds (version(), current_database(), current_schema()):
/// a statement that names one, outside strings, identifiers and comments, is
/// answered by the embedded SQLite too. The substring tests keep the plain
/// path to one scan.
bool sqlite_catalog_query(std::string_view sql) {
  if (!icontains(sql, "information_schema") && !icontains(sql, "version") &&
      !icontains(sql, "current_")) {
    return false;
  }
  const auto toks = sql::pg_client_tokens(sql, sql::Dialect::sqlite);
  for (size_t i = 0; i < toks.size(); ++i) {
    if (toks[i].kind != sql::PgToken::Kind::word) continue;
    std::string w(sql.substr(toks[i].begin, toks[i].end - toks[i].begin));
    for (char& c : w)
      c = lower_ascii(c);
    if (w == "information_schema") return true;
    const bool call = i + 1 < toks.size() && toks[i + 1].kind == sql::PgToken::Kind::lparen;
    if (call && (w == "version" || w == "current_database" || w == "current_schema")) return true;
  }
  return false;
}

/// Whether `sql` starts with a statement that changes the schema (cheap: the first word).
bool is_ddl(std::string_view sql) {
  size_t i = 0;
  while (i < sql.size() && (sql[i] == ' ' || sql[i] == '\n' || sql[i] == '\t' || sql[i] == '\r'))
    ++i;
  auto starts = [&](std::string_view w) {
    if (sql.size() - i < w.size()) return false;
    for (size_t k = 0; k < w.size(); ++k) {
      char c = sql[i + k];
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
      if (c != w[k]) return false;
    }
    return true;
  };
  return starts("CREATE") || starts("ALTER") || starts("DROP") || starts("RENAME");
}

/// A catalog statement prepared in the embedded SQLite: each execution sees a
/// mirror no older than a fill (`refresh` is the connection's).
class CatalogStatement final : public StatementImpl {
 public:
  CatalogStatement(std::unique_ptr<StatementImpl> inner, std::function<Status()> refresh)
      : inner_(std::move(inner)), refresh_(std::move(refresh)) {}
  std::span<const ParamInfo> params() const override { return inner_->params(); }
  std::span<const Column> columns() const override { return inner_->columns(); }
  Result<std::unique_ptr<RowsImpl>> query(Params params, const QueryOptions& options) override {
    if (auto st = refresh_(); !st.ok()) return st.error();
    return inner_->query(params, options);
  }
  Status close() override { return inner_->close(); }

 private:
  std::unique_ptr<StatementImpl> inner_;
  std::function<Status()> refresh_;
};

class CatalogConnection final : public ConnectionImpl {
 public:
  CatalogConnection(Connection inner, Connection catalog, CatalogSource source)
      : inner_(std::move(inner)),
        catalog_(std::move(catalog)),
        source_(source),
        dialect_(inner_.impl()->capabilities().dialect) {}

  Capabilities capabilities() const override { return inner_.impl()->capabilities(); }

  Result<std::unique_ptr<RowsImpl>> query(std::string_view sql, Params params,
                                          const QueryOptions& options) override {
    if (!is_catalog_query(sql)) {
      if (is_ddl(sql)) stale_ = true;
      return inner_.impl()->query(sql, params, options);
    }
    if (auto st = refresh(); !st.ok()) return st.error();
    std::string storage;
    return catalog_.impl()->query(for_sqlite(sql, storage), params, options);
  }

  Result<std::unique_ptr<StatementImpl>> prepare(std::string_view sql,
                                                 std::span<const ParamInfo> hints) override {
    if (!is_catalog_query(sql)) {
      if (is_ddl(sql)) stale_ = true;
      return inner_.impl()->prepare(sql, hints);
    }
    if (auto st = refresh(); !st.ok()) return st.error();
    std::string storage;
    auto st = catalog_.impl()->prepare(for_sqlite(sql, storage), hints);
    if (!st.ok()) return st.error();
    return std::unique_ptr<StatementImpl>(
        std::make_unique<CatalogStatement>(std::move(st.value()), [this] { return refresh(); }));
  }

  Status begin(const BeginOptions& o) override { return inner_.impl()->begin(o); }
  Status commit() override { return inner_.impl()->commit(); }
  Status rollback() override { return inner_.impl()->rollback(); }
  TxState tx_state() const override { return inner_.impl()->tx_state(); }
  void cancel() noexcept override {
    inner_.impl()->cancel();
    catalog_.impl()->cancel();
  }
  IoInterest io_interest() const override { return inner_.impl()->io_interest(); }
  std::vector<std::pair<std::string, std::string>> server_parameters() const override {
    return inner_.impl()->server_parameters();
  }
  Status reset(std::string_view reset_query) override { return inner_.impl()->reset(reset_query); }
  bool alive() const override { return inner_.impl()->alive(); }
  int64_t server_pid() const override { return inner_.impl()->server_pid(); }
  int socket_fd() const override { return inner_.impl()->socket_fd(); }
  Status set_event_sink(EventSink* sink) override { return inner_.impl()->set_event_sink(sink); }
  Result<std::unique_ptr<CopyStreamImpl>> copy(std::string_view sql) override {
    return inner_.impl()->copy(sql);
  }
  Result<std::vector<Column>> describe_portal(std::string_view name) override {
    return inner_.impl()->describe_portal(name);
  }
  const ConnectionImpl* inner() const { return inner_.impl(); }
  Status close() override {
    (void)catalog_.close();
    return inner_.close();
  }
  int relay_socket() override { return inner_.impl()->relay_socket(); }
  void relay_done(TxState state, bool broken) override { inner_.impl()->relay_done(state, broken); }

 private:
  bool is_catalog_query(std::string_view sql) const {
    return sql::reads_pg_catalog(sql, dialect_) ||
           (source_ == CatalogSource::sqlite_schema && sqlite_catalog_query(sql));
  }

  /// The client's PostgreSQL text as the embedded SQLite runs it (the server
  /// rewrote it already when the backend's own dialect is SQLite's).
  std::string_view for_sqlite(std::string_view sql, std::string& storage) const {
    if (dialect_ == sql::Dialect::sqlite) return sql;
    auto rewritten = sql::rewrite_pg_sql(sql, sql::Dialect::sqlite, {"wirepool"});
    if (!rewritten) return sql;
    storage = std::move(*rewritten);
    return storage;
  }

  /// Mirrors the backend's schema again unless the mirror is fresh.
  Status refresh() {
    const auto now = Clock::now();
    if (!stale_ && now - filled_at_ < kCatalogTtl) return {};
    Result<Mirror> m = Error::unsupported("no catalog source");
    switch (source_) {
      case CatalogSource::mysql_information_schema:
        m = mysql_mirror(*inner_.impl());
        break;
      case CatalogSource::sqlite_schema:
        m = sqlite_mirror(*inner_.impl());
        break;
      case CatalogSource::sqlserver_information_schema:
        m = sqlserver_mirror(*inner_.impl());
        break;
    }
    if (!m.ok()) return m.error();
    // In-memory DDL, each statement on its own: a failed one skips its object.
    ConnectionImpl& c = *catalog_.impl();
    auto run = [&](std::string_view sql) -> Status {
      auto r = c.query(sql, {}, {});
      if (!r.ok()) return r.error();
      Rows rows(std::move(r.value()));
      auto d = drain(rows);
      if (!d.ok()) return d.error();
      return {};
    };
    auto old = fetch(c,
                     "SELECT type, name FROM main.sqlite_schema WHERE type IN ('view', 'table') "
                     "AND name NOT LIKE 'sqlite_%' ORDER BY type = 'table'");
    if (!old.ok()) return old.error();
    Status st;
    for (const Row& r : old.value()) {
      if (st.ok()) st = run((*r[0] == "view" ? "DROP VIEW " : "DROP TABLE ") + ident(*r[1]));
    }
    for (size_t i = 0; st.ok() && i < m.value().tables.size(); ++i) {
      if (!run(m.value().tables[i]).ok()) (void)run(m.value().fallbacks[i]);  // else skipped
    }
    for (const std::string& ddl : m.value().indexes) {
      if (st.ok()) (void)run(ddl);  // an index on a column SQLite refused: skipped
    }
    if (!st.ok()) return st;
    filled_at_ = Clock::now();  // the TTL counts from the end of the fill
    stale_ = false;
    return {};
  }

  Connection inner_;
  Connection catalog_;
  CatalogSource source_;
  sql::Dialect dialect_;
  bool stale_ = true;
  Clock::time_point filled_at_{};
};

}  // namespace

Connection with_pg_catalog(Connection inner, CatalogSource source) {
  const Driver* sqlite = find_driver("sqlite");
  if (!inner.is_open() || !sqlite) return inner;
  OpenOptions o;
  o.connection = ":memory:";
  auto catalog = sqlite->open(o);
  if (!catalog.ok()) return inner;
  return Connection(
      std::make_unique<CatalogConnection>(std::move(inner), std::move(catalog.value()), source));
}

const ConnectionImpl* without_catalog(const ConnectionImpl* conn) {
  const auto* c = dynamic_cast<const CatalogConnection*>(conn);
  return c ? c->inner() : conn;
}

}  // namespace wirepool::db
