// PgClient: COPY FROM STDIN / TO STDOUT with a PostgreSQL backend.

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

bool PgClient::is_copy_with_client(std::string_view stmt) {
  auto w = sql::leading_words(stmt, sql::Dialect::postgres, 1);
  if (w.empty() || w[0] != "COPY") return false;
  // FROM STDIN / TO STDOUT outside literals and identifiers: look at the
  // upper-cased words of the statement with its strings blanked by the lexer.
  std::string upper;
  for (char c : stmt)
    upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper.find("STDIN") != std::string::npos || upper.find("STDOUT") != std::string::npos;
}

awaitable<void> PgClient::copy(const std::string& sql) {
  // COPY FROM STDIN / TO STDOUT through a PostgreSQL backend. The Query message
  // is consumed first: COPY data messages follow it in the buffer.
  in_.consume(unconsumed_);
  unconsumed_ = 0;
  std::unique_ptr<db::CopyStreamImpl> stream;
  db::Error err;
  auto started = co_await session_->run([&](Backend& b) -> db::Status {
    auto r = b.conn.impl()->copy(sql);
    if (db::is_would_block(r)) return r.take_error();
    if (!r.ok()) {
      err = r.take_error();
      return {};
    }
    stream = std::move(r.value());
    return {};
  });
  forward_events();
  if (!started.ok() || !stream) {
    if (!started.ok()) err = started.take_error();
    co_await backend_error(std::move(err));
    co_return;
  }
  auto formats = stream->column_formats();
  std::optional<db::Error> failure;
  db::CommandInfo info;
  if (stream->is_input()) {
    pg::Encoder(out_).copy_in_response(static_cast<int8_t>(stream->format()), formats);
    if (!co_await flush()) throw ClientGone{};
    const size_t max_msg = server_.config().server.max_message_size;
    std::optional<std::string> abort_reason;
    for (bool more = true; more;) {
      auto d = pg::decode_frontend(in_.view(), max_msg);
      if (d.status == pg::DecodeStatus::need_more) {
        auto len = pg::peek_length(in_.view());
        size_t want = len ? std::min<size_t>(*len + 1, max_msg + 1) : 5;
        if (!co_await read_more(want > in_.size() ? want - in_.size() : 1)) {
          // The client went away mid-COPY: abort it on the backend, then end.
          auto* s = stream.get();
          std::optional<std::string> why = std::string("client connection lost");
          (void)co_await session_->run(
              [s, &why](Backend&) -> db::Result<db::CommandInfo> { return s->finish(why); });
          throw ClientGone{};
        }
        continue;
      }
      if (d.status == pg::DecodeStatus::error) {
        abort_reason = "protocol error during COPY: " + d.error;
        break;
      }
      if (auto* data = std::get_if<pg::CopyData>(&d.message)) {
        auto* s = stream.get();
        std::string_view bytes = data->data;
        auto st = co_await session_->run([s, bytes](Backend&) { return s->write(bytes); });
        if (!st.ok()) {
          failure = st.take_error();
          more = false;
        }
      } else if (std::holds_alternative<pg::CopyDone>(d.message)) {
        more = false;
      } else if (auto* fail = std::get_if<pg::CopyFail>(&d.message)) {
        abort_reason = "COPY from stdin failed: " + std::string(fail->message);
        more = false;
      } else if (std::holds_alternative<pg::Flush>(d.message) ||
                 std::holds_alternative<pg::Sync>(d.message)) {
        // ignored during COPY IN, as PostgreSQL does
      } else {
        abort_reason = "unexpected message during COPY from stdin";
        more = false;
      }
      in_.consume(d.consumed);
    }
    if (!failure) {
      auto* s = stream.get();
      auto r = co_await session_->run([s, &abort_reason](Backend&) -> db::Result<db::CommandInfo> {
        return s->finish(abort_reason);
      });
      if (r.ok() && !abort_reason) {
        info = r.value();
      } else if (!r.ok()) {
        failure = r.take_error();
      } else {
        failure = make_error("57014", *abort_reason, db::Errc::busy);
      }
    }
  } else {
    pg::Encoder(out_).copy_out_response(static_cast<int8_t>(stream->format()), formats);
    for (;;) {
      auto* s = stream.get();
      std::optional<std::string> chunk;
      auto r = co_await session_->run([s, &chunk](Backend&) -> db::Status {
        auto c = s->read();
        if (db::is_would_block(c)) return c.take_error();
        if (!c.ok()) return c.take_error();
        chunk = std::move(c.value());
        return {};
      });
      if (!r.ok()) {
        failure = r.take_error();
        break;
      }
      if (!chunk) break;
      pg::Encoder(out_).copy_data(*chunk);
      if (out_.size() >= kFlushBytes && !co_await flush()) throw ClientGone{};
    }
    if (!failure) {
      auto* s = stream.get();
      auto r = co_await session_->run(
          [s](Backend&) -> db::Result<db::CommandInfo> { return s->finish(std::nullopt); });
      if (r.ok()) {
        pg::Encoder(out_).copy_done();
        info = r.value();
      } else {
        failure = r.take_error();
      }
    }
  }
  forward_events();
  if (failure) {
    co_await backend_error(std::move(*failure));
    co_return;
  }
  pg::Encoder(out_).command_complete(info.tag.empty() ? "COPY " + std::to_string(info.affected)
                                                      : info.tag);
}

}  // namespace wirepool::server
