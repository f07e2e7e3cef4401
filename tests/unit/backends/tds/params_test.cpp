// The SQL Server driver's pure parts: marker rewriting for sp_executesql
// (?, $N, @name; not inside strings, [brackets], "quotes" or comments; NULL as
// the literal NULL; count mismatches), parameter types and declarations, the
// connection string (keys, braces, redaction, the required tls.ca), error
// mapping (number, state, severity kept), and TDS column types as db kinds.

#include <gtest/gtest.h>

#include "backends/tds/tds_connection.hpp"
#include "backends/tds/tds_errors.hpp"
#include "backends/tds/tds_options.hpp"
#include "backends/tds/tds_params.hpp"

namespace wirepool::tdsdrv {
namespace {

db::Param P(db::Value v, std::string name = {}) {
  db::Param p;
  p.name = std::move(name);
  p.value = std::move(v);
  return p;
}

Rewritten rewrite(std::string_view sql, std::vector<db::Param> params) {
  auto r = rewrite_statement(sql, params);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : Rewritten{};
}

TEST(TdsRewrite, QuestionMarksBecomeNumberedParameters) {
  auto r = rewrite("SELECT * FROM t WHERE a = ? AND b = ?",
                   {P(db::Value::int64(1)), P(db::Value::text("x"))});
  EXPECT_EQ(r.sql, "SELECT * FROM t WHERE a = @p1 AND b = @p2");
  EXPECT_EQ(r.declarations, "@p1 bigint,@p2 nvarchar(4000)");
  ASSERT_EQ(r.values.size(), 2u);
  EXPECT_EQ(r.values[0].name, "@p1");
  EXPECT_EQ(r.values[0].value.type.type, tds::type::kIntN);
  EXPECT_EQ(r.values[1].value.type.type, tds::type::kNVarChar);
}

TEST(TdsRewrite, DollarMarkersKeepTheirNumbers) {
  auto r = rewrite("SELECT $2, $1, $2", {P(db::Value::int64(1)), P(db::Value::int64(2))});
  EXPECT_EQ(r.sql, "SELECT @p2, @p1, @p2");
}

TEST(TdsRewrite, MarkersInsideStringsIdentifiersAndCommentsStay) {
  auto r = rewrite("SELECT '?', N'$1', [a?b], \"c?\", [x]]?] /* ? */ -- $1\n, ?",
                   {P(db::Value::int64(9))});
  EXPECT_EQ(r.sql, "SELECT '?', N'$1', [a?b], \"c?\", [x]]?] /* ? */ -- $1\n, @p1");
}

TEST(TdsRewrite, NullIsTheLiteralNullAndNotDeclared) {
  auto r = rewrite("INSERT INTO t VALUES (?, ?, ?)",
                   {P(db::Value::int64(1)), P(db::Value::null()), P(db::Value::bytes("b"))});
  EXPECT_EQ(r.sql, "INSERT INTO t VALUES (@p1, NULL, @p3)");
  EXPECT_EQ(r.declarations, "@p1 bigint,@p3 varbinary(8000)");
  EXPECT_EQ(r.values.size(), 2u);
  // The NULL pattern is part of a prepared statement's signature.
  auto other = rewrite("INSERT INTO t VALUES (?, ?, ?)",
                       {P(db::Value::int64(1)), P(db::Value::int64(2)), P(db::Value::bytes("b"))});
  EXPECT_NE(r.signature, other.signature);
}

TEST(TdsRewrite, NamedParametersBindByName) {
  auto r = rewrite("SELECT @b, @A, @@VERSION, @local",
                   {P(db::Value::int64(1), "a"), P(db::Value::int64(2), "@b")});
  EXPECT_EQ(r.sql, "SELECT @p2, @p1, @@VERSION, @local");
}

TEST(TdsRewrite, NamedMarkersTakePositionalParametersInOrder) {
  auto r = rewrite("SELECT @x, @y, @x", {P(db::Value::int64(1)), P(db::Value::int64(2))});
  EXPECT_EQ(r.sql, "SELECT @p1, @p2, @p1");
}

TEST(TdsRewrite, ParameterCountOfAStatement) {
  EXPECT_EQ(count_parameters("SELECT $2, $1"), 2u);
  EXPECT_EQ(count_parameters("SELECT ?, [a?], ?"), 2u);
  EXPECT_EQ(count_parameters("SELECT @a, @b, @A, @@ROWCOUNT"), 2u);
  EXPECT_EQ(count_parameters("SELECT '?', 1 -- ?"), 0u);
}

TEST(TdsRewrite, CountMismatchIs08P01) {
  std::vector<db::Param> one{P(db::Value::int64(1))};
  auto r = rewrite_statement("SELECT ?, ?", one);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().sqlstate, "08P01");
  auto none = rewrite_statement("SELECT 1", one);
  ASSERT_FALSE(none.ok());
}

TEST(TdsRewrite, LargeValuesAreMaxTypes) {
  std::string decl;
  EXPECT_EQ(param_type(db::Value::text(std::string(4001, 'a')), &decl).max_length, tds::kPlpMarker);
  EXPECT_EQ(decl, "nvarchar(max)");
  EXPECT_EQ(param_type(db::Value::bytes(std::string(8001, 'a')), &decl).max_length,
            tds::kPlpMarker);
  EXPECT_EQ(decl, "varbinary(max)");
  auto d = param_type(db::Value::decimal("-12.3400"), &decl);
  EXPECT_EQ(decl, "decimal(38,4)");
  EXPECT_EQ(d.scale, 4);
  param_type(db::Value::uint64(UINT64_MAX), &decl);
  EXPECT_EQ(decl, "decimal(20,0)");
  param_type(db::Value::time(0), &decl);
  EXPECT_EQ(decl, "datetimeoffset(6)");
  param_type(db::Value::boolean(true), &decl);
  EXPECT_EQ(decl, "bit");
}

TEST(TdsOptions, ConnectionStringKeysAndBraces) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string error;
  ASSERT_TRUE(split_connection("Server=db.example; PORT=1444;uid=sa;pwd={a;b}}c};", pairs, &error));
  ASSERT_EQ(pairs.size(), 4u);
  EXPECT_EQ(pairs[0].first, "server");
  EXPECT_EQ(pairs[1].second, "1444");
  EXPECT_EQ(pairs[3].second, "a;b}c");
  EXPECT_FALSE(split_connection("host=x;pwd={open", pairs, &error));
  EXPECT_FALSE(split_connection("host", pairs, &error));
}

TEST(TdsOptions, ValidationAndDefaults) {
  db::OpenOptions o;
  o.connection = "host=h;user=u;password=p;database=d";
  o.tls_ca = "/ca.pem";
  EXPECT_TRUE(validate_options(o).empty());
  auto parsed = parse_options(o);
  EXPECT_EQ(parsed.port, 1433);
  EXPECT_EQ(parsed.password, "p");
  EXPECT_EQ(parsed.packet_size, 8192u);
  o.password = "from-env";
  EXPECT_EQ(parse_options(o).password, "from-env");

  db::OpenOptions bad = o;
  bad.tls_ca.clear();
  EXPECT_FALSE(validate_options(bad).empty()) << "no unverified mode";
  bad = o;
  bad.options["packet_size"] = "32767";
  EXPECT_FALSE(validate_options(bad).empty()) << "a packet must fit one TLS record";
  bad = o;
  bad.options["encrypt"] = "false";
  EXPECT_FALSE(validate_options(bad).empty());
  bad = o;
  bad.connection = "host=h;user=u;port=70000";
  EXPECT_FALSE(validate_options(bad).empty());
  bad = o;
  bad.tls_pins = {"abc"};
  EXPECT_FALSE(validate_options(bad).empty());
}

TEST(TdsOptions, PasswordIsRedacted) {
  EXPECT_EQ(redact_connection("host=h;password=secret;user=u"), "host=h;password=***;user=u");
  EXPECT_EQ(redact_connection("host=h;PWD={se;cret}"), "host=h;pwd=***");
  EXPECT_EQ(redact_connection("host=h; PWD = S3cretA ;user=u"), "host=h;pwd=***;user=u");
  EXPECT_EQ(redact_connection("host=h;PWD={a}}b X};user=u"), "host=h;pwd=***;user=u");
  EXPECT_EQ(redact_connection("host=h;\tpassword\t=\tS3cretB"), "host=h;password=***");
}

TEST(TdsErrorsMap, NumbersToSqlstates) {
  struct Case {
    int32_t number;
    const char* message;
    const char* sqlstate;
    db::Errc code;
  };
  const Case cases[] = {
      {2627, "Violation of PRIMARY KEY constraint", "23505", db::Errc::constraint},
      {2601, "Cannot insert duplicate key row", "23505", db::Errc::constraint},
      {547, "conflicted with the FOREIGN KEY constraint", "23503", db::Errc::constraint},
      {547, "conflicted with the CHECK constraint", "23514", db::Errc::constraint},
      {515, "Cannot insert the value NULL", "23502", db::Errc::constraint},
      {102, "Incorrect syntax near 'x'.", "42601", db::Errc::invalid_query},
      {208, "Invalid object name 't'.", "42P01", db::Errc::invalid_query},
      {207, "Invalid column name 'c'.", "42703", db::Errc::invalid_query},
      {1205, "deadlock victim", "40P01", db::Errc::busy},
      {1222, "Lock request time out period exceeded.", "55P03", db::Errc::busy},
  };
  for (const auto& c : cases) {
    tds::ServerMessage m;
    m.number = c.number;
    m.state = 2;
    m.severity = 16;
    m.message = c.message;
    m.line = 3;
    auto e = map_server_error(m);
    EXPECT_EQ(e.sqlstate, c.sqlstate) << c.number;
    EXPECT_EQ(e.code, c.code) << c.number;
    EXPECT_EQ(e.vendor_code, c.number);
    EXPECT_EQ(e.message, c.message);
    EXPECT_EQ(e.detail,
              "SQL Server error " + std::to_string(c.number) + ", state 2, severity 16, line 3");
  }
  tds::ServerMessage fatal;
  fatal.number = 4014;
  fatal.severity = 20;
  EXPECT_EQ(map_server_error(fatal).code, db::Errc::connection);
}

TEST(TdsRouting, TargetOfARoutingEnvchange) {
  // [MS-TDS] 2.2.7.9 type 20: length, protocol 0 (TCP), port 1433, "db2".
  const std::string raw(
      "\x0b\x00\x00\x99\x05\x03\x00"
      "d\x00"
      "b\x00"
      "2\x00",
      13);
  EXPECT_EQ(routing_target(raw), "db2:1433");
  EXPECT_EQ(routing_target(raw.substr(0, 9)), "(unreadable)");
  EXPECT_EQ(routing_target(""), "(unreadable)");
}

TEST(TdsColumns, TypesAsKinds) {
  auto col = [](uint8_t type, uint32_t len, uint8_t prec = 0, uint8_t scale = 0) {
    tds::ColumnMeta m;
    m.type.type = type;
    m.type.max_length = len;
    m.type.precision = prec;
    m.type.scale = scale;
    return column_of(m);
  };
  EXPECT_EQ(col(tds::type::kIntN, 4).native.name, "int");
  EXPECT_EQ(col(tds::type::kIntN, 8).kind, db::Kind::I64);
  EXPECT_EQ(col(tds::type::kBitN, 1).kind, db::Kind::Bool);
  EXPECT_EQ(col(tds::type::kFltN, 8).kind, db::Kind::F64);
  EXPECT_EQ(col(tds::type::kMoneyN, 8).kind, db::Kind::Decimal);
  auto d = col(tds::type::kDecimalN, 9, 12, 3);
  EXPECT_EQ(d.kind, db::Kind::Decimal);
  EXPECT_EQ(d.native.name, "decimal(12,3)");
  EXPECT_EQ(d.native.scale, 3);
  auto n = col(tds::type::kNVarChar, 100);
  EXPECT_EQ(n.native.name, "nvarchar(50)");
  EXPECT_EQ(n.native.length, 50);
  EXPECT_EQ(col(tds::type::kNVarChar, tds::kPlpMarker).native.name, "nvarchar(max)");
  EXPECT_EQ(col(tds::type::kBigVarBinary, 16).kind, db::Kind::Bytes);
  EXPECT_EQ(col(tds::type::kGuid, 16).native.name, "uniqueidentifier");
  EXPECT_EQ(col(tds::type::kDateN, 3).native.time_form, db::TimeForm::date);
  EXPECT_EQ(col(tds::type::kDateTimeOffsetN, 10, 0, 7).native.time_form, db::TimeForm::timestamptz);
  EXPECT_EQ(col(tds::type::kDateTime2N, 8, 0, 7).native.time_form, db::TimeForm::timestamp);
  EXPECT_EQ(col(tds::type::kTimeN, 5, 0, 7).kind, db::Kind::Text);
  EXPECT_EQ(col(tds::type::kXml, 0).kind, db::Kind::Text);
}

}  // namespace
}  // namespace wirepool::tdsdrv
