// PgClient: a result's encoding (RowDescription, DataRows, CommandComplete)
// for the result pump, and what follows a backend's error.

#include "server/pg/client.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <cstring>

#include "protocol/pg/arrays.hpp"
#include "protocol/pg/scram.hpp"
#include "server/admin.hpp"
#include "server/pg/client_detail.hpp"
#include "tls/tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using namespace pg_detail;

void PgClient::Streamer::begin_columns(std::span<const db::Column> cols,
                                       const std::vector<db::ValueView>*, std::string& out) {
  // The types announced by Describe (from the statement before execution) rule.
  std::span<const db::Column> shown = described.size() == cols.size() ? described : cols;
  if (native) {
    types.clear();
    formats.clear();
    actual.clear();
    for (size_t i = 0; i < cols.size(); ++i) {
      const auto& n = cols[i].native;
      types.push_back({n.pg_oid, n.pg_typlen, n.pg_typmod});
      formats.push_back(requested.empty()       ? 0
                        : requested.size() == 1 ? requested[0]
                                                : requested[i]);
      actual.push_back(n.pg_format);
    }
  } else {
    set_wire_types(shown, requested, types, formats);
  }
  if (describe) {
    std::vector<pg::FieldDescription> fields(cols.size());
    for (size_t i = 0; i < cols.size(); ++i) {
      fields[i].name = shown[i].name;
      fields[i].type_oid = types[i].oid;
      fields[i].type_size = types[i].size;
      fields[i].type_modifier = types[i].modifier;
      fields[i].format = formats[i];
      if (native) {
        fields[i].table_oid = cols[i].native.pg_table_oid;
        fields[i].column = cols[i].native.pg_column;
      }
    }
    pg::Encoder(out).row_description(fields);
  }
}

namespace {

/// A native value fetched in one format and wanted in the other: convert
/// through the contract's kinds (PostgreSQL's own text and binary forms of the
/// types protocol/pg/types knows). Other types cannot be converted.
bool convert_native(std::string_view bytes, uint32_t oid, int16_t from, int16_t to,
                    std::string& out, std::string* why) {
  if (from == 0 && to == 1 && pg::array_element(oid)) {
    if (pg::array_text_to_binary(bytes, oid, out, why)) return true;
    *why = "wirepool cannot convert a value of array type OID " + std::to_string(oid) +
           " to binary: " + *why;
    return false;
  }
  auto decoded = pg::decode_param(bytes, oid, from);
  if (!decoded.ok() || decoded.value().untyped) {
    *why = "wirepool cannot convert values of type OID " + std::to_string(oid) + " from " +
           (from ? "binary" : "text") + " to " + (to ? "binary" : "text") +
           " (libpq fetches one result format for all columns; ask for one format)";
    return false;
  }
  return pg::encode_value(db::view_of(decoded.value().value), oid, to, out, why);
}

}  // namespace

bool PgClient::Streamer::add_row(std::span<const db::ValueView> values, std::string& out,
                                 std::optional<db::Error>& failure) {
  pg::Encoder enc(out);
  const size_t n = values.size();
  const size_t row_start = out.size();
  std::string why;
  enc.begin_data_row(static_cast<int16_t>(n));
  bool ok = true;
  for (size_t i = 0; i < n && ok; ++i) {
    const auto& v = values[i];
    if (v.is_null()) {
      enc.null_field();
      continue;
    }
    if (native && actual[i] == formats[i]) {
      enc.field(v.str);
      continue;
    }
    enc.begin_field();
    ok = native ? convert_native(v.str, types[i].oid, actual[i], formats[i], out, &why)
                : pg::encode_value(v, types[i].oid, formats[i], out, &why);
    if (ok) enc.end_field();
  }
  if (!ok) {
    out.resize(row_start);
    // A value too wide for its column's declared type is PostgreSQL's 22003.
    const bool range = why.find("out of range") != std::string::npos;
    failure = make_error(native ? "0A000" : range ? "22003" : "22P02", why);
    return false;
  }
  enc.end_data_row();
  return true;
}

void PgClient::Streamer::end_result(const db::CommandInfo& info, bool has_columns, int64_t rows,
                                    std::string& out) {
  std::string tag = command_tag(info, fallback_verb, has_columns, rows);
  pg::Encoder(out).command_complete(tag);
  tags.push_back(std::move(tag));
}

size_t PgClient::Streamer::encoded_row_size(std::string_view buffered) const {
  // A whole DataRow: its type byte and a length that counts itself.
  const auto* b = reinterpret_cast<const unsigned char*>(buffered.data());
  return 1 + (size_t{b[1]} << 24 | size_t{b[2]} << 16 | size_t{b[3]} << 8 | size_t{b[4]});
}

awaitable<void> PgClient::backend_error(db::Error err) {
  session_->explain_cancel(err);
  // PostgreSQL ends a session whose server process is gone; so does wirepool
  // when the client's state went with the backend (session mode, or a
  // transaction): carrying on elsewhere would hide the loss.
  // 57P01..57P04: the server ended the session with that error (libpq may
  // not have seen the end of the connection yet).
  Backend* held = session_->backend();
  const bool lost = held && (err.code == db::Errc::connection || err.sqlstate.starts_with("57P") ||
                             !held->conn.alive());
  if (lost && (session_->mode() == config::PoolMode::session || session_->in_transaction() ||
               session_->implicit_begun())) {
    backend_gone_ = true;
  }
  send_error(err, backend_gone_ ? "FATAL" : "ERROR");
  if (err.sqlstate == "0A000" && err.message == kCachedPlanChanged && session_->backend()) {
    // Its statements predate DDL: prepared again on next use (the server's
    // copies go with the DISCARD ALL before another client gets it).
    session_->backend()->statements.forget();
    session_->mark_dirty();
  }
  if (err.sqlstate == "26000" && session_->backend()) {
    // A statement wirepool prepared is gone (DEALLOCATE inside a function, say):
    // none of the cache is trusted, each is prepared again on next use.
    session_->backend()->statements.forget();
  }
  if (lost) {
    spdlog::warn("client {}: backend of database \"{}\" lost: {}", peer_,
                 session_->pool().config().name, err.message);
    // Readers of the lost backend go first; the pool then closes it.
    co_await close_portals();
    session_->backend_lost();
  }
  session_->sync_tx_state();
}

}  // namespace wirepool::server
