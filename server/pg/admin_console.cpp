// PgClient: the admin console (database "wirepool"): simple queries only,
// answered by server/admin.hpp.

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

awaitable<void> PgClient::serve_admin() {
  const size_t max_msg = server_.config().server.max_message_size;
  try {
    for (;;) {
      bool open = true;
      for (;;) {
        auto d = pg::decode_frontend(in_.view(), max_msg);
        if (d.status == pg::DecodeStatus::need_more) break;
        if (d.status == pg::DecodeStatus::error) {
          spdlog::warn("client {}: protocol error: {}", peer_, d.error);
          co_await fatal("08P01", d.error);
          open = false;
          break;
        }
        if (std::holds_alternative<pg::Terminate>(d.message)) {
          open = false;
          break;
        }
        const auto* q = std::get_if<pg::Query>(&d.message);
        if (!q) {
          // As PgBouncer: the console speaks the simple query protocol only.
          co_await fatal("0A000", "the wirepool admin console supports only simple queries");
          open = false;
          break;
        }
        std::string text(q->sql);
        in_.consume(d.consumed);
        // Several commands may come in one query, separated by semicolons
        // (the commands have no literals in which one could hide).
        bool any = false;
        size_t start = 0;
        while (start <= text.size()) {
          size_t end = text.find(';', start);
          if (end == std::string::npos) end = text.size();
          std::string_view piece(text.data() + start, end - start);
          start = end + 1;
          if (piece.find_first_not_of(" \t\r\n") == std::string_view::npos) continue;
          any = true;
          AdminResult r = co_await run_admin(server_, piece);
          if (!r.sqlstate.empty()) {
            send_error(r.sqlstate, r.error);
            break;
          }
          pg::Encoder enc(out_);
          if (!r.columns.empty()) {
            std::vector<pg::FieldDescription> fields;
            for (const auto& c : r.columns) {
              pg::FieldDescription f;
              f.name = c.name;
              f.type_oid = c.type_oid;
              f.type_size = c.type_oid == 20 ? 8 : -1;
              fields.push_back(f);
            }
            enc.row_description(fields);
            for (const auto& row : r.rows) {
              enc.begin_data_row(static_cast<int16_t>(row.size()));
              for (const auto& v : row) {
                if (v) {
                  enc.field(*v);
                } else {
                  enc.null_field();
                }
              }
              enc.end_data_row();
            }
          }
          enc.command_complete(r.tag);
        }
        if (!any) pg::Encoder(out_).empty_query_response();
        pg::Encoder(out_).ready_for_query('I');
      }
      if (!open) break;
      if (!out_.empty() && !co_await flush()) break;
      if (draining_) {
        co_await fatal("57P01", "terminating connection due to administrator command");
        break;
      }
      if (in_.empty() && !tls_pending()) {
        // Idle: wait without a deadline, as any client without client_idle_timeout;
        // the drain and KILL cancel the wait.
        idle_wait_ = true;
        boost::system::error_code ec;
        co_await socket_.async_wait(ClientSocket::wait_read,
                                    asio::redirect_error(use_awaitable, ec));
        idle_wait_ = false;
        if (draining_ || terminating_) {
          co_await fatal("57P01", "terminating connection due to administrator command");
          break;
        }
        if (ec) break;
        // What the wake-up found, or nothing (then back to the wait): not
        // read_more, whose 60 s timeout would end an idle console.
        if (!read_now(kFirstRead)) break;
        continue;
      }
      auto len = pg::peek_length(in_.view());
      size_t want = len ? std::min<size_t>(*len + 1, max_msg + 1) : 5;
      if (!co_await read_more(want > in_.size() ? want - in_.size() : 1)) break;
    }
  } catch (const std::exception& e) {
    spdlog::error("client {}: admin console closed after an internal error: {}", peer_, e.what());
  }
  co_await end();
}

}  // namespace wirepool::server
