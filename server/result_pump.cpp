// The result pump: the phases of one result (columns, rows in chunks, the
// next result, closing), and its I/O side on the client connection.

#include "server/result_pump.hpp"

#include "server/client_connection.hpp"

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;

void RowSink::end_result(const db::CommandInfo&, bool, int64_t, std::string&) {}

size_t RowSink::encoded_row_size(std::string_view buffered) const {
  return buffered.size();
}

void ResultPump::fail(db::Error e) {
  failure = std::move(e);
  phase = Phase::closing;
}

void ResultPump::end_result(RowSink& sink, std::string& out) {
  info = rows.command();
  if (!multi) {
    phase = Phase::closing;
    return;
  }
  sink.end_result(info, has_columns, sent, out);
  phase = Phase::next_result;
}

Pumped ResultPump::fetch(RowSink& sink, std::string& out, int64_t limit, db::Error& err) {
  for (;;) {
    switch (phase) {
      case Phase::start:
      case Phase::columns: {
        phase = Phase::columns;
        auto cols = rows.columns();
        has_columns = !cols.empty();
        sent = 0;
        row.resize(cols.size());
        if (!has_columns) {
          end_result(sink, out);
          break;
        }
        if (first_row_first) {
          auto got = rows.next_borrowed(row);
          if (db::is_would_block(got)) return Pumped::wait;
          if (!got.ok()) {
            fail(got.take_error());
            break;
          }
          have_row = got.value();
          sink.begin_columns(cols, have_row ? &row : nullptr, out);
          if (!have_row) {
            end_result(sink, out);
            break;
          }
        } else {
          sink.begin_columns(cols, nullptr, out);
        }
        phase = Phase::rows;
        break;
      }
      case Phase::rows: {
        if (is_parked) {
          while (parked_at < parked.size()) {
            if (out.size() >= flush_at) return Pumped::flush;
            if (limit > 0 && sent >= limit) return Pumped::limit;
            const size_t size = sink.encoded_row_size(std::string_view(parked).substr(parked_at));
            out.append(parked, parked_at, size);
            parked_at += size;
            ++sent;
          }
          parked.clear();
          phase = Phase::closing;
          break;
        }
        for (;;) {
          if (!have_row) {
            if (out.size() >= flush_at) return Pumped::flush;
            if (limit > 0 && sent >= limit) return Pumped::limit;
            auto got = rows.next_borrowed(row);
            if (db::is_would_block(got)) return Pumped::wait;
            if (!got.ok()) {
              fail(got.take_error());
              break;
            }
            if (!got.value()) {
              end_result(sink, out);
              break;
            }
          }
          have_row = false;
          if (!sink.add_row(row, out, failure)) {
            phase = Phase::closing;
            break;
          }
          ++sent;
        }
        break;
      }
      case Phase::next_result: {
        auto r = rows.next_result();
        if (db::is_would_block(r)) return Pumped::wait;
        if (!r.ok()) {
          fail(r.take_error());
          break;
        }
        phase = r.value() ? Phase::columns : Phase::closing;
        break;
      }
      case Phase::closing: {
        if (rows.is_open()) {
          auto st = rows.close();
          if (db::is_would_block(st)) return Pumped::wait;
        }
        phase = Phase::finished;
        break;
      }
      case Phase::finished:
        if (failure) {
          err = *failure;
          return Pumped::error;
        }
        return Pumped::done;
    }
  }
}

awaitable<Pumped> ClientConnection::pump_result(ResultPump& pump, RowSink& sink, std::string& out,
                                                int64_t limit, db::Error& err, Pumped f) {
  auto step = [&](Backend&) -> Pumped { return pump.fetch(sink, out, limit, err); };
  for (;;) {
    if (f == Pumped::flush) {
      frame_output();
      if (!co_await flush()) {
        // The client vanished mid-result: close the reader, then end the
        // connection (its end gives the backend back to the pool).
        pump.fail(make_error("08006", "client connection lost", db::Errc::connection));
        co_await session_->run(step);
        throw ClientGone{};
      }
    } else if (f != Pumped::more) {
      if (f == Pumped::error) session_->explain_cancel(err);
      co_return f;
    }
    if ((session_->cancel_reason() != CancelReason::none || result_stopped()) &&
        pump.phase == ResultPump::Phase::rows) {
      // Cancelled between two chunks: the driver is not running, so stop here.
      pump.fail(make_error("57014", "canceling statement", db::Errc::busy));
    }
    f = co_await session_->run(step);
  }
}

}  // namespace wirepool::server
