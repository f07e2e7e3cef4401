#pragma once
// SQL Server driver internals: a statement's parameter markers rewritten to
// sp_executesql's @p1.. and its parameters typed (pure functions, unit-tested
// in tests/unit/backends/tds/).

#include <string>
#include <string_view>
#include <vector>

#include "backends/db.hpp"
#include "protocol/tds/codec.hpp"

namespace wirepool::tdsdrv {

/// A statement ready for sp_executesql / sp_prepare.
struct Rewritten {
  /// The text with every marker replaced: @pN for a value, the literal NULL for
  /// a NULL value (a typed NULL does not convert into every column type: SQL
  /// Server error 257 "Implicit conversion from data type nvarchar to
  /// varbinary(max) is not allowed"; an untyped NULL literal goes anywhere).
  std::string sql;
  /// "@p1 bigint,@p2 nvarchar(4000)": one declaration per non-NULL parameter.
  std::string declarations;
  /// The non-NULL values as RPC parameters named @pN, in N order.
  std::vector<tds::RpcParam> values;
  /// Declarations plus which slots are NULL: a prepared statement's cache key.
  std::string signature;
};

/// Rewrites `sql`'s markers (sql::find_client_markers, tsql: `?`, `$N`,
/// `@name` outside strings, [bracketed] and "quoted" identifiers and comments).
/// `?` binds the next positional parameter, `$N` the N-th; `@name` binds the
/// parameter named `name` (case-insensitive) when parameters are named, and by
/// order of first appearance when they are positional and the text has no `?`
/// or `$N`; other `@name`s (T-SQL variables) stay. A count that does not match
/// the markers is 08P01, as PostgreSQL says it.
db::Result<Rewritten> rewrite_statement(std::string_view sql, db::Params params);

/// How many positional parameters `sql` takes: the largest `$N`, the number of
/// `?`s, or (when the text has neither) the number of distinct `@name`s — what
/// rewrite_statement() binds positional parameters to. For a prepared
/// statement's params() (a PostgreSQL client's Parse without types).
size_t count_parameters(std::string_view sql);

/// The TYPE_INFO and T-SQL declaration for a non-NULL value: Bool bit, I64
/// bigint, U64 bigint or decimal(20,0), F64 float, Text (and untyped) nvarchar(4000)
/// or nvarchar(max), Bytes varbinary(8000) or varbinary(max), Decimal
/// decimal(38,s) at the text's scale, Time datetimeoffset(6) at UTC.
tds::TypeInfo param_type(const db::Value& v, std::string* declaration);

}  // namespace wirepool::tdsdrv
