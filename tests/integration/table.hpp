#pragma once
// A result read whole, for the integration suites of the drivers that answer
// without waiting (sqlite, mysql, odbc, tds_driver; the PostgreSQL suite drives
// its non-blocking driver through db::call_blocking and has its own).

#include <string_view>
#include <vector>

#include "backends/db.hpp"

namespace wirepool::it {

/// One result of a query, read whole.
struct Table {
  std::vector<db::Column> columns;
  std::vector<std::vector<db::Value>> rows;
  db::CommandInfo info;
};

/// Reads the current result of `rows` to its end.
inline db::Result<Table> read_all(db::Rows& rows) {
  Table t;
  t.columns.assign(rows.columns().begin(), rows.columns().end());
  std::vector<db::Value> row(t.columns.size());
  for (;;) {
    auto more = rows.next(row);
    if (!more.ok()) return more.take_error();
    if (!more.value()) break;
    t.rows.push_back(row);
  }
  t.info = rows.command();
  return t;
}

/// Runs `sql` and reads its first result whole; a failing close after a
/// complete read is an error too.
inline db::Result<Table> fetch(db::Connection& c, std::string_view sql,
                               std::vector<db::Param> params = {}) {
  auto rows = c.query(sql, params);
  if (!rows.ok()) return rows.take_error();
  auto t = read_all(rows.value());
  auto closed = rows.value().close();
  if (t.ok() && !closed.ok()) return closed.take_error();
  return t;
}

}  // namespace wirepool::it
