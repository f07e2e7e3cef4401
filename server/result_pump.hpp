#pragma once
// One result sent to a client, whatever its protocol: rows pulled from a
// db::Rows and handed to the protocol's RowSink to encode, in chunks of
// kFlushBytes (the next chunk is fetched once the client took this one).
// ClientConnection::pump_result drives it; the protocols keep only their
// encoding.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::server {

/// Output is written to the socket once this much is buffered mid-result
/// (backpressure: the next rows are fetched only after the client took these).
inline constexpr size_t kFlushBytes = 64 * 1024;

/// Where sending a result stands: `more` (nothing fetched yet), `flush`
/// (output buffered, more rows may follow), `done`, `limit` (the row limit
/// was reached), `error`, `wait` (a non-blocking backend must be waited for:
/// Session::run repeats the job).
enum class Pumped : uint8_t { more, done, flush, limit, error, wait };
inline bool is_would_block(Pumped p) {
  return p == Pumped::wait;
}

/// A protocol's encoding of results. Its calls run where the backend's calls
/// run (the executor, or the loop for a non-blocking backend).
class RowSink {
 public:
  /// A result with columns begins: announce them. `first`: its first row when
  /// ResultPump::first_row_first asked for it (nullptr otherwise, or when the
  /// result has no row).
  virtual void begin_columns(std::span<const db::Column> columns,
                             const std::vector<db::ValueView>* first, std::string& out) = 0;
  /// Appends one row. False ends the result with `failure` set; nothing of
  /// the row is left in `out`.
  virtual bool add_row(std::span<const db::ValueView> values, std::string& out,
                       std::optional<db::Error>& failure) = 0;
  /// One of several results (ResultPump::multi) is complete: `rows` were sent.
  virtual void end_result(const db::CommandInfo& info, bool has_columns, int64_t rows,
                          std::string& out);
  /// The size of the encoded row at the front of `buffered` (rows parked by
  /// ResultPump are served one by one). Needed only by a protocol that parks.
  virtual size_t encoded_row_size(std::string_view buffered) const;

 protected:
  ~RowSink() = default;
};

/// A result being sent: the reader and where sending stands. Jobs on
/// non-blocking backends are repeated after a wait, so all progress lives
/// here, never in the job.
struct ResultPump {
  enum class Phase : uint8_t { start, columns, rows, next_result, closing, finished };

  /// The first run of the job: opens the result with `open()` (a driver call
  /// answering db::Result<db::Rows>), then fetch(). Repeated after a wait
  /// until the result is open.
  template <class Open>
  Pumped start(Open&& open, RowSink& sink, std::string& out, int64_t limit, db::Error& err) {
    if (phase == Phase::start) {
      auto r = open();
      if (db::is_would_block(r)) return Pumped::wait;
      if (!r.ok()) {
        err = r.take_error();
        return Pumped::error;
      }
      rows = std::move(r.value());
      phase = Phase::columns;
    }
    return fetch(sink, out, limit, err);
  }
  /// Appends to `out` through `sink` until `out` holds flush_at bytes, `limit`
  /// rows were sent (0: none), the result ends (`done`, or `error` with `err`
  /// set, the reader closed) or the backend would block. Resumable.
  Pumped fetch(RowSink& sink, std::string& out, int64_t limit, db::Error& err);
  /// Ends the result early with `e` (a cancel, the client gone): the next
  /// fetch() closes the reader and answers `error`.
  void fail(db::Error e);

  Phase phase = Phase::start;
  db::Rows rows;
  /// Several results (a simple query's statements): RowSink::end_result for each.
  bool multi = false;
  /// The first row is fetched before the columns are announced (TDS: a column
  /// whose type the backend does not know yet takes the kind of its first value).
  bool first_row_first = false;
  /// fetch() answers `flush` once `out` holds this many bytes.
  size_t flush_at = kFlushBytes;
  std::vector<db::ValueView> row;
  bool have_row = false;  ///< `row` was fetched and is not sent yet
  int64_t sent = 0;       ///< rows of the current result sent
  bool has_columns = false;
  db::CommandInfo info;              ///< of the current result, once its rows are through
  std::optional<db::Error> failure;  ///< set while closing after an error
  /// Parked: the rest of the result, encoded, read ahead so that the backend
  /// is free for another statement; served from `parked_at`.
  bool is_parked = false;
  std::string parked;
  size_t parked_at = 0;

 private:
  /// The current result's rows are through.
  void end_result(RowSink& sink, std::string& out);
};

}  // namespace wirepool::server
