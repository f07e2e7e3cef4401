#pragma once
// The value vocabulary that drivers, codecs and the session layer share:
// errors as values (Errc, Error, Result, Status), value kinds and values
// (Kind, Value, ValueView), columns, parameters, what a statement did and the
// transaction state. Kept in namespace wirepool::db, where the driver contract
// (backends/db.hpp) has always named them.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace wirepool::db {

// ---------------------------------------------------------------------------
// Errors

/// The portable errors. Code that only needs "was it a constraint" stays portable;
/// the precise SQLSTATE, vendor code and message are in Error.
enum class Errc : uint8_t {
  ok = 0,
  closed,         ///< the handle was closed, committed or rolled back
  invalid_query,  ///< syntax, unknown table/column, bad parameter, type mismatch
  constraint,     ///< unique, foreign key, not null, check
  busy,           ///< lock not available, deadlock, a reader still open, cancelled
  unsupported,    ///< the driver or backend has no such feature
  connection,     ///< the backend went away; the pool discards this connection
  would_block,    ///< non-blocking connections only: wait for io_interest(), repeat the call
};
std::string_view to_string(Errc code);

/// An error as a value, with the backend's own detail.
struct Error {
  Errc code = Errc::invalid_query;
  std::string sqlstate = "XX000";  ///< precise five-character SQLSTATE (DESIGN.md "Errors")
  int64_t vendor_code = 0;  ///< the backend's native code (SQLite extended code, MySQL errno)
  std::string message;      ///< the backend's message, passed to the client as is
  std::string detail;       ///< optional (PostgreSQL DETAIL)
  std::string hint;         ///< optional (PostgreSQL HINT)
  /// A PostgreSQL backend's other fields (position, context, schema, table,
  /// column, type, constraint, source), encoded as on the wire: a code byte
  /// and a NUL-terminated text each. Passed on to the client as they are.
  std::string fields;
  /// The server refused the Bind of an extended-protocol command (a parameter
  /// it could not convert, an error while planning): no BindComplete was sent.
  bool before_bind = false;

  /// Errc::closed, SQLSTATE 08003, "connection is closed".
  static Error closed();
  /// Errc::closed, SQLSTATE 08003, "<what> is closed" ("statement", "transaction", ...).
  static Error closed(std::string_view what);
  /// Errc::unsupported, SQLSTATE 0A000.
  static Error unsupported(std::string message);
  /// Errc::connection, SQLSTATE 08006.
  static Error connection(std::string message);
  /// Errc::invalid_query, SQLSTATE 54000 (program_limit_exceeded): a value
  /// above `limit` bytes (server.max_value_size).
  static Error value_too_large(uint64_t limit);
};

/// Either a value or an Error. [[nodiscard]]: errors are values on the data path.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  T& operator*() & { return std::get<0>(v_); }
  const Error& error() const { return std::get<1>(v_); }
  Error&& take_error() { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : e_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *e_; }
  Error&& take_error() { return std::move(*e_); }

 private:
  std::optional<Error> e_;
};
using Status = Result<void>;

// ---------------------------------------------------------------------------
// Values

/// The value kinds. Decimal is exact decimal text at its scale ("-0.000100"),
/// kept apart from Text so protocols can type it as numeric / DECIMAL.
enum class Kind : uint8_t { Null, Bool, I64, U64, F64, Text, Bytes, Time, Decimal };
std::string_view to_string(Kind kind);

/// What a Time column holds, so a protocol can choose timestamptz, timestamp or date.
enum class TimeForm : uint8_t { timestamptz, timestamp, date };

/// One tagged value. `Str` is std::string for caller-owned values and
/// std::string_view for borrowed ones (valid until the next row or close).
/// Time is microseconds since 1970-01-01T00:00:00Z.
template <class Str>
struct BasicValue {
  Kind kind = Kind::Null;
  union {
    bool b;
    int64_t i64;
    uint64_t u64;
    double f64;
    int64_t micros;
  };
  Str str{};  ///< Text (UTF-8), Bytes, Decimal (exact text)

  BasicValue() : i64(0) {}
  static BasicValue null() { return {}; }
  static BasicValue boolean(bool v) {
    BasicValue x;
    x.kind = Kind::Bool;
    x.b = v;
    return x;
  }
  static BasicValue int64(int64_t v) {
    BasicValue x;
    x.kind = Kind::I64;
    x.i64 = v;
    return x;
  }
  static BasicValue uint64(uint64_t v) {
    BasicValue x;
    x.kind = Kind::U64;
    x.u64 = v;
    return x;
  }
  static BasicValue float64(double v) {
    BasicValue x;
    x.kind = Kind::F64;
    x.f64 = v;
    return x;
  }
  static BasicValue time(int64_t micros_since_epoch) {
    BasicValue x;
    x.kind = Kind::Time;
    x.micros = micros_since_epoch;
    return x;
  }
  static BasicValue text(Str s) {
    BasicValue x;
    x.kind = Kind::Text;
    x.str = std::move(s);
    return x;
  }
  static BasicValue bytes(Str s) {
    BasicValue x;
    x.kind = Kind::Bytes;
    x.str = std::move(s);
    return x;
  }
  static BasicValue decimal(Str s) {
    BasicValue x;
    x.kind = Kind::Decimal;
    x.str = std::move(s);
    return x;
  }
  bool is_null() const { return kind == Kind::Null; }
};
using Value = BasicValue<std::string>;
using ValueView = BasicValue<std::string_view>;

/// A borrowed view of an owned value.
inline ValueView view_of(const Value& v) {
  ValueView out;
  out.kind = v.kind;
  out.i64 = v.i64;
  out.str = v.str;
  return out;
}
/// An owned copy of a borrowed value.
inline Value copy_of(const ValueView& v) {
  Value out;
  out.kind = v.kind;
  out.i64 = v.i64;
  out.str.assign(v.str.data(), v.str.size());
  return out;
}

/// What the backend said of a column's type, beyond its Kind.
struct NativeType {
  std::string name;  ///< the backend's spelling ("INTEGER", "numeric", "VARCHAR(20)"), may be empty
  uint32_t pg_oid = 0;     ///< PostgreSQL backends: the type OID (0 for other backends)
  int32_t pg_typmod = -1;  ///< PostgreSQL backends: the type modifier
  int32_t precision = -1;  ///< decimal precision, or -1
  int32_t scale = -1;      ///< decimal scale, or -1
  int64_t length = -1;     ///< declared length in characters or bytes, or -1
  TimeForm time_form = TimeForm::timestamptz;  ///< for Kind::Time columns
  uint32_t pg_table_oid = 0;                   ///< PostgreSQL backends: RowDescription's table OID
  int16_t pg_column = 0;   ///< PostgreSQL backends: RowDescription's column number
  int16_t pg_typlen = -1;  ///< PostgreSQL backends: RowDescription's type size
  /// Native results (QueryOptions::native): the format this column's values
  /// arrive in (0 text, 1 binary). libpq fetches one format for all columns, so
  /// it may differ from the one asked for; the caller converts where it does.
  int16_t pg_format = 0;
  /// Kind::I64 columns: the smallest PostgreSQL integer (2, 4 or 8 bytes) that
  /// holds every value of the backend's type; 0 when not known (int8).
  /// Kind::F64 columns: 8 where the driver knows the type is a double whatever
  /// its name (SQLite's REAL); 0 when not known.
  int8_t int_bytes = 0;
};

/// A result column. kind == Kind::Null means "not known" (an expression column of
/// a dynamically typed backend before any row); protocols then send text.
struct Column {
  std::string name;
  Kind kind = Kind::Null;
  bool nullable = true;
  NativeType native;
};

/// A bound parameter. Positional when `name` is empty: the i-th parameter binds
/// marker i+1 ($1, the first ?, @p1). Named parameters bind :name, @name or $name.
struct Param {
  std::string name;
  Value value;
  /// Untyped text (a PostgreSQL client's OID 0): the driver binds it as text and
  /// lets the backend convert it where it can.
  bool untyped = false;
  /// Native PostgreSQL parameter (pg_format 0 text, 1 binary; -1 = not native):
  /// value.str holds the client's own wire bytes (or value is Null), typed
  /// pg_oid (0 = unspecified). A PostgreSQL driver passes them through as they
  /// are; others never receive native parameters.
  uint32_t pg_oid = 0;
  int16_t pg_format = -1;
};
using Params = std::span<const Param>;

/// What a statement did, known once its rows are exhausted.
struct CommandInfo {
  std::string tag;        ///< the backend's own command tag (PostgreSQL), else empty
  std::string verb;       ///< "SELECT", "INSERT", "CREATE TABLE", ... (sql::command_verb)
  int64_t affected = -1;  ///< rows inserted, updated or deleted; -1 when not applicable
  int64_t last_insert_id = -1;
};

/// The backend's transaction state, reported after every call.
enum class TxState : uint8_t { idle, in_transaction, failed };
std::string_view to_string(TxState s);

/// Parameter information a prepared statement reports.
struct ParamInfo {
  Kind kind = Kind::Null;  ///< Null = unknown: the backend converts from text
  NativeType native;
};

}  // namespace wirepool::db
