// PgClient: a result sent to the client as RowDescription, DataRows and
// CommandComplete, in chunks, resumable after a wait on a non-blocking backend.

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

void PgClient::begin_result(Streamer& s, std::span<const db::Column> described, std::string& out,
                            bool describe) {
  auto cols = s.rows.columns();
  s.has_columns = !cols.empty();
  s.sent = 0;
  s.row.resize(cols.size());
  if (!s.has_columns) return;
  // The types announced by Describe (from the statement before execution) rule.
  std::span<const db::Column> shown = described.size() == cols.size() ? described : cols;
  if (s.native) {
    s.types.clear();
    s.formats.clear();
    s.actual.clear();
    for (size_t i = 0; i < cols.size(); ++i) {
      const auto& n = cols[i].native;
      s.types.push_back({n.pg_oid, n.pg_typlen, n.pg_typmod});
      s.formats.push_back(s.requested.empty()       ? 0
                          : s.requested.size() == 1 ? s.requested[0]
                                                    : s.requested[i]);
      s.actual.push_back(n.pg_format);
    }
  } else {
    set_wire_types(shown, s.requested, s.types, s.formats);
  }
  if (describe) {
    std::vector<pg::FieldDescription> fields(cols.size());
    for (size_t i = 0; i < cols.size(); ++i) {
      fields[i].name = shown[i].name;
      fields[i].type_oid = s.types[i].oid;
      fields[i].type_size = s.types[i].size;
      fields[i].type_modifier = s.types[i].modifier;
      fields[i].format = s.formats[i];
      if (s.native) {
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

PgClient::Fetch PgClient::fetch_rows(Streamer& s, std::string& out, int64_t limit, db::Error& err) {
  // Runs where the backend's calls run (the executor, or the loop for a
  // non-blocking backend, which repeats it after a wait): resumable by phase.
  using Phase = Streamer::Phase;
  pg::Encoder enc(out);
  std::string why;
  for (;;) {
    switch (s.phase) {
      case Phase::start:
      case Phase::rows: {
        s.phase = Phase::rows;
        if (s.is_parked) {
          while (s.parked_at < s.parked.size()) {
            if (out.size() >= kFlushBytes) return Fetch::flush;
            if (limit > 0 && s.sent >= limit) return Fetch::limit;
            // Each a whole DataRow: type byte and a length that counts itself.
            const auto* b = reinterpret_cast<const unsigned char*>(s.parked.data() + s.parked_at);
            const size_t size =
                1 + (size_t{b[1]} << 24 | size_t{b[2]} << 16 | size_t{b[3]} << 8 | size_t{b[4]});
            out.append(s.parked, s.parked_at, size);
            s.parked_at += size;
            ++s.sent;
          }
          s.parked.clear();
          s.phase = Phase::closing;
          break;
        }
        const size_t n = s.row.size();
        while (s.has_columns) {
          if (out.size() >= (s.parking ? s.park_mark : kFlushBytes)) return Fetch::flush;
          if (limit > 0 && s.sent >= limit) return Fetch::limit;
          auto r = s.rows.next_borrowed(s.row);
          if (db::is_would_block(r)) return Fetch::wait;
          if (!r.ok()) {
            s.failure = r.take_error();
            s.phase = Phase::closing;
            break;
          }
          if (!r.value()) break;
          size_t row_start = out.size();
          enc.begin_data_row(static_cast<int16_t>(n));
          bool ok = true;
          for (size_t i = 0; i < n && ok; ++i) {
            const auto& v = s.row[i];
            if (v.is_null()) {
              enc.null_field();
              continue;
            }
            if (s.native && s.actual[i] == s.formats[i]) {
              enc.field(v.str);
              continue;
            }
            enc.begin_field();
            ok = s.native
                     ? convert_native(v.str, s.types[i].oid, s.actual[i], s.formats[i], out, &why)
                     : pg::encode_value(v, s.types[i].oid, s.formats[i], out, &why);
            if (ok) enc.end_field();
          }
          if (!ok) {
            out.resize(row_start);
            s.failure = make_error(s.native ? "0A000" : "22P02", why);
            s.phase = Phase::closing;
            break;
          }
          enc.end_data_row();
          ++s.sent;
        }
        if (s.phase == Phase::closing) break;
        // This result is complete.
        s.info = s.rows.command();
        if (!s.multi) {
          s.phase = Phase::closing;
          break;
        }
        std::string tag = command_tag(s.info, s.fallback_verb, s.has_columns, s.sent);
        enc.command_complete(tag);
        s.tags.push_back(std::move(tag));
        s.phase = Phase::next_result;
        break;
      }
      case Phase::next_result: {
        auto r = s.rows.next_result();
        if (db::is_would_block(r)) return Fetch::wait;
        if (!r.ok()) {
          s.failure = r.take_error();
          s.phase = Phase::closing;
          break;
        }
        if (!r.value()) {
          s.phase = Phase::closing;
          break;
        }
        begin_result(s, {}, out, true);
        s.phase = Phase::rows;
        break;
      }
      case Phase::closing: {
        if (s.rows.is_open()) {
          auto st = s.rows.close();
          if (db::is_would_block(st)) return Fetch::wait;
        }
        s.phase = Phase::finished;
        break;
      }
      case Phase::finished:
        if (s.failure) {
          err = *s.failure;
          return Fetch::error;
        }
        return Fetch::done;
    }
  }
}

awaitable<PgClient::Fetch> PgClient::stream(Streamer& s, int64_t limit, db::Error& err, Fetch f) {
  std::string* out = &out_;
  auto step = [&](Backend&) -> Fetch { return fetch_rows(s, *out, limit, err); };
  for (;;) {
    if (f == Fetch::flush) {
      if (!co_await flush()) {
        // The client vanished mid-result: close the reader, then end the
        // connection (end() gives the backend back to the pool).
        s.failure = make_error("08006", "client connection lost", db::Errc::connection);
        s.phase = Streamer::Phase::closing;
        co_await session_->run(step);
        throw ClientGone{};
      }
    } else if (f != Fetch::more) {
      if (f == Fetch::error) session_->explain_cancel(err);
      co_return f;
    }
    if (session_->cancel_reason() != CancelReason::none && s.phase == Streamer::Phase::rows) {
      // Cancelled between two chunks: the driver is not running, so stop here.
      s.failure = make_error("57014", "canceling statement", db::Errc::busy);
      s.phase = Streamer::Phase::closing;
    }
    f = co_await session_->run(step);
  }
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
