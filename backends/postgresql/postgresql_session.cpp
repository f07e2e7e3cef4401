#include "backends/postgresql/postgresql_session.hpp"

#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <dlfcn.h>

#include <array>

#include "backends/postgresql/postgresql_errors.hpp"

namespace wirepool::postgresql {

// ---- optional entry points ----------------------------------------------------

LibpqExtras find_libpq_extras(SymbolLookup lookup) {
  LibpqExtras x;
  if (lookup == nullptr) return x;
  // A data pointer to a function pointer: what dlsym's contract (POSIX) allows.
  x.set_chunked_rows_mode = reinterpret_cast<ChunkedRowsFn>(lookup("PQsetChunkedRowsMode"));
  x.send_close_prepared = reinterpret_cast<ClosePreparedFn>(lookup("PQsendClosePrepared"));
  return x;
}

const LibpqExtras& libpq_extras() {
  static const LibpqExtras extras =
      find_libpq_extras([](const char* name) { return dlsym(RTLD_DEFAULT, name); });
  return extras;
}

RowMode select_row_mode(PGconn* conn, const LibpqExtras& extras) {
  if (extras.set_chunked_rows_mode != nullptr &&
      extras.set_chunked_rows_mode(conn, kChunkRows) == 1) {
    return RowMode::chunked;
  }
  if (PQsetSingleRowMode(conn) == 1) return RowMode::single_row;
  return RowMode::whole;
}

// ---- session ------------------------------------------------------------------

Session::Session(PGconn* conn) : conn_(conn), cancel_(PQgetCancel(conn)), extras_(libpq_extras()) {
  PQsetNoticeReceiver(conn_, &Session::notice_receiver, this);
  // Values reported at connection time are server_parameters(), not changes.
  reported_.reserve(std::size(kReportedParameters));
  for (size_t i = 0; i < std::size(kReportedParameters); ++i) {
    const std::string_view name = kReportedParameters[i];
    const char* v = PQparameterStatus(conn_, std::string(name).c_str());
    reported_.push_back(v ? std::optional<std::string>(v) : std::nullopt);
    // deliver() looks up, after every command, only what can change: each
    // lookup walks libpq's list of parameters with strcmp. A parameter the
    // server did not report at start it never reports (all GUC_REPORT ones
    // come at start); these three are fixed for the life of a connection.
    const bool fixed =
        name == "server_version" || name == "server_encoding" || name == "integer_datetimes";
    if (v != nullptr && !fixed) watched_.push_back(static_cast<uint8_t>(i));
  }
}

Session::~Session() {
  close();
}

void Session::close() {
  std::lock_guard lock(cancel_mu_);
  if (closed_) return;
  closed_ = true;
  holder_ = nullptr;
  op.reset();
  if (cancel_) PQfreeCancel(cancel_);
  cancel_ = nullptr;
  PQfinish(conn_);
  conn_ = nullptr;
}

void Session::cancel() noexcept {
  std::lock_guard lock(cancel_mu_);
  if (closed_ || cancel_ == nullptr) return;
  char err[256];
  (void)PQcancel(cancel_, err, sizeof err);  // harmless when nothing runs
}

db::Error Session::would_block(bool read, bool write) {
  interest_ = db::IoInterest{PQsocket(conn_), read, write};
  return would_block_error();
}

db::Error Session::lost() const {
  return connection_lost(conn_ ? PQerrorMessage(conn_) : "connection is closed");
}

db::Error Session::result_error(const PGresult* r) const {
  return error_from_result(r, PQstatus(conn_) == CONNECTION_BAD, PQerrorMessage(conn_));
}

db::Error Session::send_failed() const {
  if (PQstatus(conn_) == CONNECTION_BAD) return lost();
  return error_from_result(nullptr, false, PQerrorMessage(conn_));
}

std::optional<db::Error> Session::poll_result(PGresult*& out) {
  // Non-blocking libpq: flush what is queued first. 1 = not all sent: wait
  // for write (or read: the server may be waiting for us to read).
  const int f = PQflush(conn_);
  if (f < 0) return lost();
  if (f == 1) {
    if (bind_seen_ == BindSeen::watching) peek_bind();
    if (PQconsumeInput(conn_) == 0) return lost();
    return would_block(true, true);
  }
  // Right after a command went out the answer cannot be there yet: wait for it
  // rather than spend a read on finding nothing (one system call a round trip).
  if (just_sent_ && PQisBusy(conn_)) {
    just_sent_ = false;
    return would_block(true, false);
  }
  just_sent_ = false;
  while (PQisBusy(conn_)) {
    if (bind_seen_ == BindSeen::watching) peek_bind();
    if (PQconsumeInput(conn_) == 0) {
      // The link failed; libpq may still hand out the error result it read.
      if (PQisBusy(conn_)) return lost();
      break;
    }
    if (PQisBusy(conn_)) return would_block(true, false);
  }
  out = PQgetResult(conn_);
  return std::nullopt;
}

std::optional<db::Error> Session::enter(bool check_busy) {
  if (closed_) return db::Error::closed();
  if (PQstatus(conn_) == CONNECTION_BAD) return lost();
  if (broken_) return db::Error::connection("the connection is unusable (a replication stream)");
  if (check_busy && holder_ != nullptr) return busy_error();
  return std::nullopt;
}

std::optional<db::Error> Session::unwind_copy() {
  if (copy_in_abandoned_) {
    const int r = PQputCopyEnd(conn_, "COPY abandoned: its stream was closed without finish()");
    if (r < 0) return lost();
    if (r == 0) return would_block(false, true);
    copy_in_abandoned_ = false;
  }
  while (copy_out_draining_) {
    char* buf = nullptr;
    const int n = PQgetCopyData(conn_, &buf, 1);
    if (n > 0) {
      PQfreemem(buf);
    } else if (n == 0) {
      if (PQconsumeInput(conn_) == 0) return lost();
      buf = nullptr;
      const int again = PQgetCopyData(conn_, &buf, 1);
      if (again > 0) {
        PQfreemem(buf);
      } else if (again == 0) {
        return would_block(true, false);
      } else {
        copy_out_draining_ = false;  // -1: done; -2: error, reported by the result
      }
    } else {
      copy_out_draining_ = false;
    }
  }
  return std::nullopt;
}

std::optional<db::Error> Session::collect(Exchange& x) {
  while (in_flight_) {
    if (auto e = unwind_copy()) return e;
    PGresult* r = nullptr;
    if (auto e = poll_result(r)) return e;
    if (r == nullptr) {
      command_done();
      break;
    }
    switch (PQresultStatus(r)) {
      case PGRES_COPY_IN:
        copy_in_abandoned_ = true;  // nobody here writes: end it with an error
        if (!x.error) x.error = db::Error::unsupported("COPY FROM STDIN needs a COPY stream");
        break;
      case PGRES_COPY_OUT:
        copy_out_draining_ = true;
        if (!x.error) x.error = db::Error::unsupported("COPY TO STDOUT needs a COPY stream");
        break;
      case PGRES_COPY_BOTH:  // a replication stream: nothing here can end it
        PQclear(r);
        broken_ = true;
        return db::Error::connection(
            "replication (COPY BOTH) streams are not supported: the connection is unusable");
      case PGRES_BAD_RESPONSE:
      case PGRES_NONFATAL_ERROR:
      case PGRES_FATAL_ERROR:
        if (!x.error) x.error = result_error(r);
        break;
      default:
        if (const char* tag = PQcmdStatus(r)) x.tag = tag;
        if (x.keep && x.kept == nullptr) {
          x.kept = r;
          continue;
        }
        break;
    }
    PQclear(r);
  }
  return std::nullopt;
}

std::optional<db::Error> Session::settle() {
  for (;;) {
    if (in_flight_) {
      Exchange discard;
      if (auto e = collect(discard)) return e;
      continue;
    }
    if (deallocate_.empty()) return std::nullopt;
    // Errors are ignored: the name may be gone already (DISCARD ALL).
    const std::string name = std::move(deallocate_.back());
    deallocate_.pop_back();
    int ok = 0;
    if (extras_.send_close_prepared != nullptr) {
      ok = extras_.send_close_prepared(conn_, name.c_str());
    } else {
      ok = PQsendQuery(conn_, ("DEALLOCATE " + name).c_str());
    }
    if (ok == 0) return send_failed();
    sent();
  }
}

bool Session::bound() {
  const bool refused = bind_seen_ == BindSeen::refused;
  bind_seen_ = BindSeen::off;
  return !refused;
}

void Session::peek_bind() {
  // The answer's first bytes, before libpq reads them: ParseComplete ('1'),
  // asynchronous messages ('N', 'S', 'A'), then BindComplete ('2') or not.
  std::array<unsigned char, 256> buf;
  ssize_t n = -1;
  if (auto* ssl = static_cast<SSL*>(PQsslStruct(conn_, "OpenSSL"))) {
    n = SSL_peek(ssl, buf.data(), static_cast<int>(buf.size()));
  } else {
    n = recv(PQsocket(conn_), buf.data(), buf.size(), MSG_PEEK | MSG_DONTWAIT);
  }
  if (n <= 0) return;  // nothing yet: libpq reads nothing either
  size_t at = 0;
  while (at + 5 <= static_cast<size_t>(n)) {
    const unsigned char type = buf[at];
    const uint32_t len = (uint32_t{buf[at + 1]} << 24) | (uint32_t{buf[at + 2]} << 16) |
                         (uint32_t{buf[at + 3]} << 8) | uint32_t{buf[at + 4]};
    if (type == '2') {
      bind_seen_ = BindSeen::bound;
      return;
    }
    if (type != '1' && type != 'N' && type != 'S' && type != 'A') {
      bind_seen_ = BindSeen::refused;
      return;
    }
    at += 1 + size_t{len};
  }
  // Undecided within what arrived: libpq now reads it, so the watch ends
  // (BindComplete assumed, as before the watch).
  bind_seen_ = BindSeen::bound;
}

void Session::command_done() {
  in_flight_ = false;
  deliver();
}

db::TxState Session::tx_state() const {
  if (closed_) return db::TxState::idle;
  if (relay_tx_) return *relay_tx_;
  switch (PQtransactionStatus(conn_)) {
    case PQTRANS_INTRANS:
      return db::TxState::in_transaction;
    case PQTRANS_INERROR:
      return db::TxState::failed;
    case PQTRANS_ACTIVE:  // a command is running: the state before it
      return last_tx_;
    case PQTRANS_IDLE:
    case PQTRANS_UNKNOWN:
      break;
  }
  return db::TxState::idle;
}

void Session::deliver() {
  if (closed_) return;
  const PGTransactionStatusType t = PQtransactionStatus(conn_);
  if (t == PQTRANS_INTRANS) last_tx_ = db::TxState::in_transaction;
  if (t == PQTRANS_INERROR) last_tx_ = db::TxState::failed;
  if (t == PQTRANS_IDLE) last_tx_ = db::TxState::idle;
  while (PGnotify* n = PQnotifies(conn_)) {
    if (sink_) {
      db::Notification note;
      note.pid = n->be_pid;
      note.channel = n->relname ? n->relname : "";
      note.payload = n->extra ? n->extra : "";
      sink_->on_notification(note);
    }
    PQfreemem(n);
  }
  for (const uint8_t i : watched_) {
    const char* v = PQparameterStatus(conn_, kReportedParameters[i].data());
    std::optional<std::string>& seen = reported_[i];
    if (v == nullptr || (seen && *seen == v)) continue;
    seen = v;
    if (sink_) sink_->on_parameter(db::ParameterChange{std::string(kReportedParameters[i]), v});
  }
}

std::vector<std::pair<std::string, std::string>> Session::server_parameters() const {
  std::vector<std::pair<std::string, std::string>> out;
  if (closed_) return out;
  for (std::string_view name : kReportedParameters) {
    if (const char* v = PQparameterStatus(conn_, name.data())) out.emplace_back(name, v);
  }
  return out;
}

void Session::notice_receiver(void* arg, const PGresult* r) {
  auto* self = static_cast<Session*>(arg);
  if (self == nullptr || self->sink_ == nullptr) return;  // not printed to stderr either
  auto field = [&](int code) {
    const char* v = PQresultErrorField(r, code);
    return v ? std::string(v) : std::string();
  };
  db::Notice n;
  n.severity = field(PG_DIAG_SEVERITY_NONLOCALIZED);
  if (n.severity.empty()) n.severity = field(PG_DIAG_SEVERITY);
  n.sqlstate = field(PG_DIAG_SQLSTATE);
  n.message = field(PG_DIAG_MESSAGE_PRIMARY);
  n.detail = field(PG_DIAG_MESSAGE_DETAIL);
  n.hint = field(PG_DIAG_MESSAGE_HINT);
  n.fields = other_fields(r);
  self->sink_->on_notice(n);
}

}  // namespace wirepool::postgresql

namespace wirepool::postgresql {

bool Session::probe() {
  if (!usable()) return false;
  if (in_flight_ || holder_ || op) return true;  // busy: the call itself will tell
  // A terminated backend sends FATAL and closes: libpq takes the FATAL, while
  // idle, as a notice, and sees the end only at the next read. So read while
  // something is there (bounded: a live connection has little to say).
  bool read = false;
  for (int i = 0; i < 4; ++i) {
    pollfd p{};
    p.fd = PQsocket(conn_);
    p.events = POLLIN;
    if (::poll(&p, 1, 0) <= 0) break;  // nothing (more) arrived
    if (PQconsumeInput(conn_) == 0) return false;
    (void)PQisBusy(conn_);  // parses what was read
    read = true;
  }
  // Notifications or parameters that came while idle go to the sink now;
  // what libpq parsed before was delivered then (command_done).
  if (read) deliver();
  return PQstatus(conn_) == CONNECTION_OK;
}

int Session::relay_socket() {
  if (!usable() || in_flight_ || holder_ || op || copy_in_abandoned_ || copy_out_draining_ ||
      !deallocate_.empty() || PQsslInUse(conn_) != 0) {
    return -1;
  }
  return PQsocket(conn_);
}

void Session::relay_done(db::TxState state, bool broken) {
  relay_tx_ = state;
  last_tx_ = state;
  if (broken) broken_ = true;  // usable() is false from now on: the pool discards it
}

}  // namespace wirepool::postgresql
