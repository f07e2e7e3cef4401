// Statement routing for the session layer (statement.hpp).
#include "session/statement.hpp"

#include <utility>

namespace wirepool::server {

namespace {

/// Where the session layer runs a statement of kind `k`. Prepared statement
/// names are the session's own (a backend knows them under other names), and
/// DISCARD ALL resets what the session keeps: both stay with the session layer
/// even for backends that keep their own settings.
StatementKind route(sql::StatementKind k, bool backend_keeps_settings) {
  using K = sql::StatementKind;
  switch (k) {
    case K::begin:
      return StatementKind::begin;
    case K::commit:
      return StatementKind::commit;
    case K::rollback:
      return StatementKind::rollback;
    case K::deallocate:
      return StatementKind::deallocate;
    case K::discard_all:
      return StatementKind::discard;
    case K::set:
    case K::reset:
    case K::show:
      return backend_keeps_settings ? StatementKind::backend : StatementKind::setting;
    case K::discard:
      return backend_keeps_settings ? StatementKind::backend : StatementKind::discard;
    case K::listen:
      return backend_keeps_settings ? StatementKind::backend : StatementKind::listen;
    case K::other:
      break;
  }
  return StatementKind::backend;
}

}  // namespace

Classified classify(std::string_view stmt, sql::Dialect dialect, bool backend_keeps_settings) {
  auto info = sql::classify(stmt, dialect);
  Classified c;
  c.kind = route(info.kind, backend_keeps_settings);
  c.verb = std::move(info.verb);
  c.block = info.block;
  c.block_name = info.block_name;
  return c;
}

}  // namespace wirepool::server
