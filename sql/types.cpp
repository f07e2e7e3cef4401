// The value vocabulary's out-of-line parts: Error's constructors and the names
// of Errc, Kind and TxState.

#include "sql/types.hpp"

#include <string>

namespace wirepool::db {

Error Error::closed() {
  return closed("connection");
}

Error Error::closed(std::string_view what) {
  Error e;
  e.code = Errc::closed;
  e.sqlstate = "08003";  // connection_does_not_exist
  e.message = std::string(what) + " is closed";
  return e;
}

Error Error::unsupported(std::string message) {
  Error e;
  e.code = Errc::unsupported;
  e.sqlstate = "0A000";  // feature_not_supported
  e.message = std::move(message);
  return e;
}

Error Error::connection(std::string message) {
  Error e;
  e.code = Errc::connection;
  e.sqlstate = "08006";  // connection_failure
  e.message = std::move(message);
  return e;
}

Error Error::value_too_large(uint64_t limit) {
  Error e;
  e.code = Errc::invalid_query;
  e.sqlstate = "54000";  // program_limit_exceeded
  e.message = "value too large: a value exceeds server.max_value_size (" + std::to_string(limit) +
              " bytes)";
  e.hint = "Fetch it in parts (substr), or raise server.max_value_size.";
  return e;
}

std::string_view to_string(Errc code) {
  switch (code) {
    case Errc::ok:
      return "ok";
    case Errc::closed:
      return "closed";
    case Errc::invalid_query:
      return "invalid_query";
    case Errc::constraint:
      return "constraint";
    case Errc::busy:
      return "busy";
    case Errc::unsupported:
      return "unsupported";
    case Errc::connection:
      return "connection";
    case Errc::would_block:
      return "would_block";
  }
  return "unknown";
}

std::string_view to_string(Kind kind) {
  switch (kind) {
    case Kind::Null:
      return "null";
    case Kind::Bool:
      return "bool";
    case Kind::I64:
      return "i64";
    case Kind::U64:
      return "u64";
    case Kind::F64:
      return "f64";
    case Kind::Text:
      return "text";
    case Kind::Bytes:
      return "bytes";
    case Kind::Time:
      return "time";
    case Kind::Decimal:
      return "decimal";
  }
  return "unknown";
}

std::string_view to_string(TxState s) {
  switch (s) {
    case TxState::idle:
      return "idle";
    case TxState::in_transaction:
      return "in_transaction";
    case TxState::failed:
      return "failed";
  }
  return "unknown";
}

}  // namespace wirepool::db
