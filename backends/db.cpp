// The handle wrappers of db.hpp and the contract's shared defaults.
//
// Every handle owns (or, for Transaction, points at) a driver object. Closing,
// committing or rolling back empties the handle first and then asks the driver,
// so the handle is empty even when the driver reports an error; an empty handle
// answers Errc::closed (SQLSTATE 08003) without reaching the driver.

#include "backends/db.hpp"

#include <openssl/rand.h>
#include <poll.h>

#include <cerrno>

#include <algorithm>
#include <random>

#include "backends/mysql/mysql_driver.hpp"
#include "backends/odbc/odbc_driver.hpp"
#include "backends/postgresql/postgresql_driver.hpp"
#include "backends/sqlite/sqlite_driver.hpp"
#include "backends/tds/tds_driver.hpp"

namespace wirepool::db {

// ---- driver-side defaults ---------------------------------------------------

Result<bool> RowsImpl::next(std::span<Value> row) {
  scratch_.resize(row.size());
  auto more = next_borrowed(scratch_);
  if (!more.ok() || !more.value()) return more;
  const size_t n = std::min(row.size(), columns().size());
  for (size_t i = 0; i < n; ++i) {
    const ValueView& v = scratch_[i];
    Value& out = row[i];
    out.kind = v.kind;
    out.i64 = v.i64;  // the whole scalar union
    out.str.assign(v.str.data(), v.str.size());
  }
  return true;
}

Status ConnectionImpl::reset(std::string_view reset_query) {
  if (reset_query.empty()) return {};
  auto rows = query(reset_query, {}, {});
  if (!rows.ok()) return rows.take_error();
  Rows handle(std::move(rows.value()));
  auto info = drain(handle);
  auto closed = handle.close();
  if (!info.ok()) return info.take_error();
  return closed;
}

Status ConnectionImpl::set_event_sink(EventSink*) {
  return Error::unsupported("this backend reports no notices, parameters or notifications");
}

Result<std::unique_ptr<CopyStreamImpl>> ConnectionImpl::copy(std::string_view) {
  return Error::unsupported("COPY is not supported by this backend");
}

Result<std::vector<Column>> ConnectionImpl::describe_portal(std::string_view name) {
  Error e;
  e.sqlstate = "34000";  // invalid_cursor_name
  e.message = "portal \"" + std::string(name) + "\" does not exist";
  return e;
}

// ---- Rows -------------------------------------------------------------------

namespace {
constexpr std::string_view kRows = "result";
constexpr std::string_view kStatement = "statement";
constexpr std::string_view kTransaction = "transaction";
constexpr std::string_view kConnection = "connection";
}  // namespace

std::span<const Column> Rows::columns() const {
  if (!impl_) return {};
  return impl_->columns();
}

Result<bool> Rows::next(std::span<Value> row) {
  if (!impl_) return Error::closed(kRows);
  return impl_->next(row);
}

Result<bool> Rows::next_borrowed(std::span<ValueView> row) {
  if (!impl_) return Error::closed(kRows);
  return impl_->next_borrowed(row);
}

Result<bool> Rows::next_result() {
  if (!impl_) return Error::closed(kRows);
  return impl_->next_result();
}

CommandInfo Rows::command() const {
  if (!impl_) return {};
  return impl_->command();
}

std::string random_statement_prefix(std::string_view base) {
  unsigned char bits[8];
  if (RAND_bytes(bits, sizeof bits) != 1) {
    // OpenSSL's generator failed: fall back to the OS's, never to a guessable name.
    std::random_device rd;
    for (auto& b : bits)
      b = static_cast<unsigned char>(rd());
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(base);
  for (unsigned char b : bits) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  out += '_';
  return out;
}

bool wait_io(const ConnectionImpl& conn, std::chrono::milliseconds timeout) {
  IoInterest io = conn.io_interest();
  if (io.none()) return true;  // nothing to wait for: just call again
  pollfd p{};
  p.fd = io.fd;
  p.events = static_cast<short>((io.read ? POLLIN : 0) | (io.write ? POLLOUT : 0));
  for (;;) {
    int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

Error no_answer(std::chrono::milliseconds timeout) {
  return Error::connection("no answer from the backend within " + std::to_string(timeout.count()) +
                           " ms");
}

namespace {
bool would_block(const Status& st) {
  return is_would_block(st);
}
}  // namespace

// Closing empties a handle even when the driver reports an error, except
// would_block: then the caller repeats the close on the same, still open, handle.

Status Rows::close() {
  if (!impl_) return Error::closed(kRows);
  auto st = impl_->close();
  if (!would_block(st)) impl_.reset();
  return st;
}

Result<CommandInfo> drain(Rows& rows) {
  if (!rows.is_open()) return Error::closed(kRows);
  std::vector<ValueView> row;
  CommandInfo info;
  for (;;) {
    row.resize(rows.columns().size());
    for (;;) {
      auto more = rows.next_borrowed(row);
      if (!more.ok()) return more.take_error();
      if (!more.value()) break;
    }
    info = rows.command();
    auto another = rows.next_result();
    if (!another.ok()) return another.take_error();
    if (!another.value()) return info;
  }
}

namespace {
/// Runs a query to completion and closes its reader; the first error wins.
Result<CommandInfo> execute_rows(Result<std::unique_ptr<RowsImpl>> impl) {
  if (!impl.ok()) return impl.take_error();
  Rows rows(std::move(impl.value()));
  auto info = drain(rows);
  auto closed = rows.close();
  if (!info.ok()) return info;
  if (!closed.ok()) return closed.take_error();
  return info;
}

Result<Rows> wrap(Result<std::unique_ptr<RowsImpl>> impl) {
  if (!impl.ok()) return impl.take_error();
  return Rows(std::move(impl.value()));
}

Result<Statement> wrap(Result<std::unique_ptr<StatementImpl>> impl) {
  if (!impl.ok()) return impl.take_error();
  return Statement(std::move(impl.value()));
}
}  // namespace

// ---- Statement --------------------------------------------------------------

std::span<const ParamInfo> Statement::params() const {
  if (!impl_) return {};
  return impl_->params();
}

std::span<const Column> Statement::columns() const {
  if (!impl_) return {};
  return impl_->columns();
}

Result<Rows> Statement::query(Params params, const QueryOptions& options) {
  if (!impl_) return Error::closed(kStatement);
  return wrap(impl_->query(params, options));
}

Result<CommandInfo> Statement::execute(Params params) {
  if (!impl_) return Error::closed(kStatement);
  return execute_rows(impl_->query(params, {}));
}

Result<BatchInfo> Statement::execute_batch(std::span<const Params> rows) {
  if (!impl_) return Error::closed(kStatement);
  return impl_->execute_batch(rows);
}

Result<BatchInfo> StatementImpl::execute_batch(std::span<const Params> rows) {
  BatchInfo out;
  out.affected.reserve(rows.size());
  for (Params params : rows) {
    auto info = execute_rows(query(params, {}));
    if (!info.ok()) return info.take_error();
    const int64_t n = std::max<int64_t>(info.value().affected, 0);
    out.affected.push_back(n);
    out.total += n;
  }
  return out;
}

Status Statement::close() {
  if (!impl_) return Error::closed(kStatement);
  auto st = impl_->close();
  if (!would_block(st)) impl_.reset();
  return st;
}

// ---- Transaction ------------------------------------------------------------

Result<Rows> Transaction::query(std::string_view sql, Params params, const QueryOptions& options) {
  if (!conn_) return Error::closed(kTransaction);
  return wrap(conn_->query(sql, params, options));
}

Result<CommandInfo> Transaction::execute(std::string_view sql, Params params) {
  if (!conn_) return Error::closed(kTransaction);
  return execute_rows(conn_->query(sql, params, {}));
}

Result<Statement> Transaction::prepare(std::string_view sql, std::span<const ParamInfo> hints) {
  if (!conn_) return Error::closed(kTransaction);
  return wrap(conn_->prepare(sql, hints));
}

Status Transaction::commit() {
  if (!conn_) return Error::closed(kTransaction);
  auto st = conn_->commit();
  if (!would_block(st)) conn_ = nullptr;
  return st;
}

Status Transaction::rollback() {
  if (!conn_) return Error::closed(kTransaction);
  auto st = conn_->rollback();
  if (!would_block(st)) conn_ = nullptr;
  return st;
}

// ---- Connection -------------------------------------------------------------

Capabilities Connection::capabilities() const {
  if (!impl_) return {};
  return impl_->capabilities();
}

Result<Rows> Connection::query(std::string_view sql, Params params, const QueryOptions& options) {
  if (!impl_) return Error::closed(kConnection);
  return wrap(impl_->query(sql, params, options));
}

Result<CommandInfo> Connection::execute(std::string_view sql, Params params) {
  if (!impl_) return Error::closed(kConnection);
  return execute_rows(impl_->query(sql, params, {}));
}

Result<Statement> Connection::prepare(std::string_view sql, std::span<const ParamInfo> hints) {
  if (!impl_) return Error::closed(kConnection);
  return wrap(impl_->prepare(sql, hints));
}

Result<Transaction> Connection::begin(const BeginOptions& options) {
  if (!impl_) return Error::closed(kConnection);
  auto started = impl_->begin(options);
  if (!started.ok()) return started.take_error();
  return Transaction(impl_.get());
}

TxState Connection::tx_state() const {
  if (!impl_) return TxState::idle;
  return impl_->tx_state();
}

void Connection::cancel() noexcept {
  if (impl_) impl_->cancel();
}

Status Connection::reset(std::string_view reset_query) {
  if (!impl_) return Error::closed(kConnection);
  return impl_->reset(reset_query);
}

bool Connection::alive() const {
  return impl_ && impl_->alive();
}

Status Connection::set_event_sink(EventSink* sink) {
  if (!impl_) return Error::closed(kConnection);
  return impl_->set_event_sink(sink);
}

Status Connection::close() {
  if (!impl_) return Error::closed(kConnection);
  auto st = impl_->close();
  if (!would_block(st)) impl_.reset();
  return st;
}

// ---- drivers ----------------------------------------------------------------

namespace {
struct DriverEntry {
  std::string_view name;
  const Driver* (*get)();  // nullptr: not built into this binary yet
};

constexpr DriverEntry kDrivers[] = {
    {"sqlite", [] { return &sqlite::driver(); }},
    {"postgresql", [] { return &postgresql::driver(); }},
    {"mysql", [] { return &mysql::driver(); }},
    {"odbc", [] { return &odbc::driver(); }},
    {"tds", [] { return &tdsdrv::driver(); }},
};
}  // namespace

const Driver* find_driver(std::string_view name) {
  for (const auto& d : kDrivers) {
    if (d.name == name) return d.get ? d.get() : nullptr;
  }
  return nullptr;
}

std::vector<std::string_view> driver_names() {
  std::vector<std::string_view> out;
  for (const auto& d : kDrivers) {
    if (d.get) out.push_back(d.name);
  }
  return out;
}

}  // namespace wirepool::db
