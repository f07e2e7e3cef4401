#pragma once
// What the files of PgClient share: the result being sent (Streamer), a
// portal, and helpers for command tags, wire types and ReadyForQuery.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "server/pg/client.hpp"

namespace wirepool::server {

namespace pg_detail {

/// PostgreSQL's command tag for what a statement did.
inline std::string command_tag(const db::CommandInfo& ci, const std::string& fallback_verb,
                               bool had_rows, int64_t rows_sent) {
  if (!ci.tag.empty()) return ci.tag;
  const std::string& verb = ci.verb.empty() ? fallback_verb : ci.verb;
  int64_t n = ci.affected >= 0 ? ci.affected : rows_sent;
  if (verb == "INSERT") return "INSERT 0 " + std::to_string(n);
  if (verb == "UPDATE" || verb == "DELETE" || verb == "MERGE") {
    return verb + " " + std::to_string(n);
  }
  if (verb == "MOVE" || verb == "FETCH" || verb == "COPY") return verb + " " + std::to_string(n);
  if (verb == "SELECT" || verb.empty() || had_rows) return "SELECT " + std::to_string(rows_sent);
  return verb;
}

inline bool is_transaction_control(const Classified& c) {
  return c.kind == StatementKind::begin || c.kind == StatementKind::commit ||
         c.kind == StatementKind::rollback;
}

inline char rfq_status(db::TxState s) {
  switch (s) {
    case db::TxState::idle:
      return 'I';
    case db::TxState::in_transaction:
      return 'T';
    case db::TxState::failed:
      return 'E';
  }
  return 'I';
}

template <class... Ts>
struct overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;

/// Fills `s.types` / `s.formats` for `columns` with the client's format codes.
inline void set_wire_types(std::span<const db::Column> columns, std::span<const int16_t> formats,
                           std::vector<pg::WireType>& types, std::vector<int16_t>& fmt) {
  types.clear();
  fmt.clear();
  for (size_t i = 0; i < columns.size(); ++i) {
    types.push_back(pg::wire_type_for(columns[i]));
    int16_t f = formats.empty() ? 0 : formats.size() == 1 ? formats[0] : formats[i];
    fmt.push_back(f);
  }
}

/// RowDescription for columns known before execution (Describe): PostgreSQL's
/// own descriptions for a native backend, else the wire types of their kinds.
inline void describe_columns(std::span<const db::Column> columns, std::span<const int16_t> formats,
                             bool native, std::string& out) {
  std::vector<pg::FieldDescription> fields(columns.size());
  std::vector<pg::WireType> types;
  std::vector<int16_t> fmt;
  set_wire_types(columns, formats, types, fmt);
  for (size_t i = 0; i < columns.size(); ++i) {
    const auto& n = columns[i].native;
    fields[i].name = columns[i].name;
    fields[i].format = fmt[i];
    if (native) {
      fields[i].type_oid = n.pg_oid;
      fields[i].type_size = n.pg_typlen;
      fields[i].type_modifier = n.pg_typmod;
      fields[i].table_oid = n.pg_table_oid;
      fields[i].column = n.pg_column;
    } else {
      fields[i].type_oid = types[i].oid;
      fields[i].type_size = types[i].size;
      fields[i].type_modifier = types[i].modifier;
    }
  }
  pg::Encoder(out).row_description(fields);
}

}  // namespace pg_detail

/// A result being sent (ResultPump) and its encoding as RowDescription,
/// DataRows and, for each of several results, CommandComplete.
struct PgClient::Streamer final : ResultPump, RowSink {
  void begin_columns(std::span<const db::Column> columns, const std::vector<db::ValueView>* first,
                     std::string& out) override;
  bool add_row(std::span<const db::ValueView> values, std::string& out,
               std::optional<db::Error>& failure) override;
  void end_result(const db::CommandInfo& info, bool has_columns, int64_t rows,
                  std::string& out) override;
  size_t encoded_row_size(std::string_view buffered) const override;

  /// Native PostgreSQL results: values are the backend's bytes, converted only
  /// where the format fetched (`actual`) differs from the one asked for.
  bool native = false;
  /// A result's columns get a RowDescription (not after a Describe).
  bool describe = true;
  /// The columns Describe announced (from the statement before execution):
  /// their types rule when their number matches.
  std::span<const db::Column> described;
  std::vector<int16_t> requested;  ///< the client's result format codes (Bind)
  std::vector<pg::WireType> types;
  std::vector<int16_t> formats;   ///< per column: the format the client gets
  std::vector<int16_t> actual;    ///< native: per column, the format fetched
  std::vector<std::string> tags;  ///< multi: the tag of every finished result, in order
  std::string fallback_verb;      ///< multi: the verb of a tag the backend did not give
  bool suspended = false;         ///< sent PortalSuspended before
};

struct PgClient::Portal {
  std::shared_ptr<Prepared> stmt;
  std::vector<db::Param> params;
  std::vector<int16_t> result_formats;
  std::unique_ptr<Streamer> open;  ///< a suspended reader (Execute with a row limit)
  bool done = false;
  /// Declared on the backend under the client's name (a PostgreSQL backend,
  /// inside a transaction): each Execute is a FETCH from it, and SQL (MOVE,
  /// FETCH, CLOSE) reaches it as in PostgreSQL.
  bool cursor = false;
};

}  // namespace wirepool::server
