#include "server/tds_client.hpp"

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "protocol/pg/scram.hpp"
#include "protocol/tds/errors.hpp"
#include "sql/classify.hpp"

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;

namespace {

constexpr auto kLoginFailureDelay = std::chrono::milliseconds(250);
/// SQL Server's "Login failed for user" and its severity.
constexpr int32_t kLoginFailed = 18456;
/// "Could not find stored procedure".
constexpr int32_t kNoSuchProcedure = 2812;

/// Runs first in every hash job: the thread gets a name (top, /proc) and a
/// lower priority, once, so that the event loops win the CPU from hashes.
void as_hashing_thread() {
  static thread_local const bool marked = [] {
    pthread_setname_np(pthread_self(), "wp-hash");
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
    return true;
  }();
  (void)marked;
}

/// Thrown when the client's socket fails while a result is being sent.
struct ClientGone {};

db::Error make_error(std::string_view sqlstate, std::string message,
                     db::Errc code = db::Errc::invalid_query) {
  db::Error e;
  e.code = code;
  e.sqlstate = std::string(sqlstate);
  e.message = std::move(message);
  return e;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// DONE's CurCmd for a statement verb (what SQL Server reports).
uint16_t command_of(std::string_view verb) {
  if (verb == "SELECT") return 0xC1;
  if (verb == "INSERT") return 0xC3;
  if (verb == "DELETE") return 0xC4;
  if (verb == "UPDATE") return 0xC5;
  return 0;
}

/// Parses sp_executesql / sp_prepare's parameter declaration
/// ("@p1 int, @name nvarchar(50) OUTPUT") into the names, lower case, without '@'.
std::vector<std::string> declared_names(std::string_view decl) {
  std::vector<std::string> names;
  int depth = 0;
  bool at_start = true;
  for (size_t i = 0; i < decl.size(); ++i) {
    char c = decl[i];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      at_start = true;
      continue;
    }
    if (at_start && c == '@') {
      size_t j = i + 1;
      while (j < decl.size() && (std::isalnum(static_cast<unsigned char>(decl[j])) ||
                                 decl[j] == '_' || decl[j] == '@' || decl[j] == '#' ||
                                 decl[j] == '$' || static_cast<unsigned char>(decl[j]) >= 0x80))
        ++j;
      names.push_back(lower(decl.substr(i + 1, j - i - 1)));
      at_start = false;
      i = j - 1;
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      at_start = false;
    }
  }
  return names;
}

/// Rewrites T-SQL's @name markers of declared parameters to $n (1-based, in
/// declaration order), which every driver binds positionally (SQLite by
/// name, MySQL and ODBC rewriting $n to ?). Other @names (local variables,
/// @@ROWCOUNT) stay as they are. The lexer skips literals, [identifiers],
/// "identifiers" and comments.
std::string rewrite_markers(std::string_view sql, const std::vector<std::string>& names) {
  if (names.empty()) return std::string(sql);
  std::string out;
  size_t at = 0;
  for (const auto& m : sql::find_markers(sql, sql::Dialect::tsql)) {
    if (m.type != sql::Marker::Type::named) continue;
    if (m.offset > 0 && sql[m.offset - 1] == '@') continue;  // @@global
    auto it = std::find(names.begin(), names.end(), lower(m.name));
    if (it == names.end()) continue;
    out.append(sql.substr(at, m.offset - at));
    out += '$';
    out += std::to_string(it - names.begin() + 1);
    at = m.offset + m.length;
  }
  out.append(sql.substr(at));
  return out;
}

/// The text of an nvarchar/varchar parameter (sp_executesql's @stmt and @params).
std::optional<std::string> text_param(const tds::RpcParam& p) {
  if (p.value.value.kind == db::Kind::Text) return p.value.value.str;
  if (p.value.value.kind == db::Kind::Null) return std::string();
  return std::nullopt;
}

std::string proc_name_of(const tds::RpcRequest& r) {
  return r.proc_name.empty() ? tds::proc_name(r.proc_id) : r.proc_name;
}

std::optional<int64_t> int_param(const tds::RpcParam& p) {
  if (p.value.value.kind == db::Kind::I64) return p.value.value.i64;
  return std::nullopt;
}

}  // namespace

/// A result being sent: the reader, the columns announced, where sending stands.
/// Jobs on non-blocking backends are repeated after a wait, so all progress is here.
struct TdsClient::Result {
  enum class Phase : uint8_t { start, first_row, rows, closing, finished };
  Phase phase = Phase::start;
  db::Rows rows;
  std::vector<tds::ColumnMeta> meta;
  std::vector<db::ValueView> row;
  bool has_columns = false;
  bool have_row = false;  ///< the first row was fetched before COLMETADATA
  int64_t sent = 0;
  db::CommandInfo info;
  std::optional<db::Error> failure;
};

TdsClient::TdsClient(Server& server, Loop& loop, ClientSocket socket,
                     const config::Listener& listener, Admission::TicketPtr ticket)
    : ClientConnection(loop, std::move(socket), ProtocolIndex::tds, std::move(ticket)),
      server_(server),
      listener_(listener),
      assembler_(tds::AssemblerLimits{tds::kMaxLoginMessage, false}) {}

TdsClient::~TdsClient() = default;

bool TdsClient::describe(ClientInfo& out) const {
  if (!session_) return false;
  describe_connection(out, session_.get());
  out.protocol = "tds";
  return true;
}

std::string_view TdsClient::database() const {
  return session_ ? std::string_view(session_->pool_ptr()->config().name) : std::string_view();
}

void TdsClient::start(std::shared_ptr<TdsClient> client) {
  client->watch_displacement(client);
  auto& io = client->loop_.io;
  asio::co_spawn(io, client->begin(), asio::detached);
}

// ---------------------------------------------------------------------------
// Framing

void TdsClient::pack(bool eom) {
  const size_t room = packet_size_ - tds::kHeaderSize;
  size_t off = 0;
  while (payload_.size() - off > room || (eom && off <= payload_.size())) {
    size_t n = std::min(room, payload_.size() - off);
    bool last = eom && off + n == payload_.size();
    size_t len = n + tds::kHeaderSize;
    char header[tds::kHeaderSize] = {static_cast<char>(tds::PacketType::tabular_result),
                                     static_cast<char>(last ? tds::status::kEom : 0),
                                     static_cast<char>(len >> 8),
                                     static_cast<char>(len & 0xFF),
                                     0,
                                     0,
                                     static_cast<char>(packet_id_++),
                                     0};
    out_.append(header, sizeof header);
    out_.append(payload_, off, n);
    off += n;
    if (last) break;
  }
  payload_.erase(0, off);
  if (eom) packet_id_ = 1;
}

// ---------------------------------------------------------------------------
// Tokens

void TdsClient::error_token(int32_t number, uint8_t severity, std::string_view message) {
  tds::ServerMessage m;
  m.is_error = true;
  m.number = number;
  m.severity = severity;
  m.state = 1;
  m.message = std::string(message);
  m.server_name = "wirepool";
  tds::TokenEncoder(payload_).message(m);
}

void TdsClient::error_token(const db::Error& e) {
  metrics().sqlstate(e.sqlstate.size() == 5 ? e.sqlstate : "XX000");
  auto code = tds::error_for_sqlstate(e.sqlstate);
  std::string msg = e.message;
  if (!e.detail.empty()) msg += "\n" + e.detail;
  error_token(code.number, code.severity, msg);
}

void TdsClient::info_token(int32_t number, std::string_view message) {
  tds::ServerMessage m;
  m.is_error = false;
  m.number = number;
  m.severity = 0;
  m.state = 1;
  m.message = std::string(message);
  m.server_name = "wirepool";
  tds::TokenEncoder(payload_).message(m);
}

void TdsClient::done_token(uint8_t token, uint16_t status, uint16_t command, uint64_t rows) {
  tds::Done d;
  d.token = token;
  d.status = status;
  if (tx_descriptor_ != 0) d.status |= tds::done::kInXact;
  d.current_command = command;
  d.row_count = rows;
  tds::TokenEncoder(payload_).done(d);
}

void TdsClient::forward_notices() {
  if (!session_) return;
  auto ev = session_->take_events();
  if (!ev) return;
  for (const auto& n : ev->notices)
    info_token(0, n.message);
}

void TdsClient::backend_error(db::Error err) {
  session_->explain_cancel(err);
  error_token(err);
  if (err.code == db::Errc::connection && session_->backend()) {
    spdlog::warn("client {}: backend of database \"{}\" lost: {}", peer_,
                 session_->pool().config().name, err.message);
    session_->backend_lost();
  }
  session_->sync_tx_state();
}

awaitable<void> TdsClient::login_error(int32_t number, uint8_t severity, std::string_view message) {
  error_token(number, severity, message);
  done_token(tds::token::kDone, tds::done::kError, 0, 0);
  end_response();
  co_await flush();
}

// ---------------------------------------------------------------------------
// Login

awaitable<std::optional<tds::Message>> TdsClient::read_message() {
  for (;;) {
    tds::Message m;
    std::string error;
    auto st = assembler_.next(m, error);
    if (st == tds::DecodeStatus::ok) co_return std::optional<tds::Message>(std::move(m));
    if (st == tds::DecodeStatus::error) {
      spdlog::warn("client {}: TDS protocol error: {}", peer_, error);
      metrics().error(ErrorReason::protocol_error);
      protocol_error_ = true;
      co_return std::nullopt;
    }
    if (!co_await read_more(1)) {
      if (timed_out_) spdlog::info("client {}: closed: timed out waiting for a message", peer_);
      co_return std::nullopt;
    }
    assembler_.feed(in_.view());
    in_.consume(in_.size());
  }
}

awaitable<bool> TdsClient::wrapped_handshake() {
  // TDS 7.x: the TLS handshake records travel in PRELOGIN packets until TLS is
  // established; the records after it travel bare. Packets are parsed here
  // from in_ directly so that bare records behind the last handshake packet
  // stay in in_ and are handed to TLS.
  tls::ServerContextPtr context = server_.tds_tls();
  tls::SslPtr ssl(tls::new_server_ssl_memory(*context));
  if (!ssl) {
    spdlog::error("client {}: cannot start TLS: {}", peer_, tls::last_error());
    co_return false;
  }
  bool bare = false;  // the last bytes came as a bare record
  for (;;) {
    // One PRELOGIN packet with handshake bytes, or (FreeTDS sends its TLS 1.3
    // Finished bare) one bare TLS record.
    auto view = in_.view();
    bare = false;
    if (view.size() >= 2 && view[0] >= 0x14 && view[0] <= 0x17 && view[1] == 0x03) {
      if (view.size() < 5) {
        if (!co_await read_more(5 - view.size())) co_return false;
        continue;
      }
      size_t len = 5 + ((size_t{view[3]} << 8) | view[4]);
      if (view.size() < len) {
        if (!co_await read_more(len - view.size())) {
          spdlog::warn("client {}: refused: the TDS 7.x TLS handshake did not complete{}", peer_,
                       timed_out_ ? " (login_timeout)" : "");
          co_return false;
        }
        continue;
      }
      spdlog::debug("client {}: TDS 7.x handshake: bare TLS record type {} ({} bytes)", peer_,
                    view[0], len);
      BIO_write(SSL_get_rbio(ssl.get()), view.data(), static_cast<int>(len));
      in_.consume(len);
      bare = true;
    } else {
      auto header = tds::peek_header(view);
      if (header && (header->type != static_cast<uint8_t>(tds::PacketType::prelogin) ||
                     header->length < tds::kHeaderSize)) {
        spdlog::warn(
            "client {}: refused: {} packet before TLS was established (a login is never "
            "accepted unencrypted)",
            peer_, tds::packet_type_name(header->type));
        co_return false;
      }
      if (!header || in_.size() < header->length) {
        if (!co_await read_more(header ? header->length - in_.size() : tds::kHeaderSize)) {
          spdlog::warn("client {}: refused: the TDS 7.x TLS handshake did not complete{}", peer_,
                       timed_out_ ? " (login_timeout)" : "");
          co_return false;
        }
        continue;
      }
      auto body = view.subspan(tds::kHeaderSize, header->length - tds::kHeaderSize);
      spdlog::debug("client {}: TDS 7.x handshake: PRELOGIN packet with {} bytes (record type {})",
                    peer_, body.size(), body.empty() ? 0 : body[0]);
      BIO_write(SSL_get_rbio(ssl.get()), body.data(), static_cast<int>(body.size()));
      in_.consume(header->length);
    }
    int r = SSL_do_handshake(ssl.get());
    int e = r == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl.get(), r);
    if (r != 1 && e != SSL_ERROR_WANT_READ && bare) {
      // Seen with FreeTDS 1.3.17: its login arrives as a bare record before its
      // TLS 1.3 Finished was sent, so the handshake cannot complete.
      spdlog::warn(
          "client {}: refused: the TDS 7.x client sent a TLS record its handshake could "
          "not use ({}): it did not complete a TLS 1.3 handshake in PRELOGIN packets",
          peer_, tls::last_error(ssl.get()));
      ERR_clear_error();
      co_return false;
    }
    if (r != 1 && e != SSL_ERROR_WANT_READ) {
      spdlog::warn(
          "client {}: refused: the TDS 7.x client's TLS handshake (in PRELOGIN packets) "
          "failed: {} (wirepool accepts TLS 1.3 only)",
          peer_, tls::last_error(ssl.get()));
      ERR_clear_error();
      co_return false;
    }
    // What the server says goes back in PRELOGIN packets.
    std::string records;
    char buf[4096];
    int n;
    while ((n = BIO_read(SSL_get_wbio(ssl.get()), buf, sizeof buf)) > 0)
      records.append(buf, static_cast<size_t>(n));
    if (!records.empty()) {
      tds::PacketWriter w;
      w.write(out_, tds::PacketType::prelogin, records);
      if (!co_await flush()) co_return false;
    }
    if (r == 1) break;
  }
  // Records already received behind the handshake: those still in the memory
  // BIO, then those in in_.
  std::string prefix;
  char buf[4096];
  int n;
  while ((n = BIO_read(SSL_get_rbio(ssl.get()), buf, sizeof buf)) > 0)
    prefix.append(buf, static_cast<size_t>(n));
  prefix.append(reinterpret_cast<const char*>(in_.view().data()), in_.size());
  in_.consume(in_.size());
  if (!adopt_tls(context, std::move(ssl), std::move(prefix))) co_return false;
  spdlog::debug("client {}: {} in PRELOGIN packets (TDS 7.x)", peer_, tls::tls_version(ssl_.get()));
  co_return true;
}

awaitable<bool> TdsClient::login() {
  const auto& scfg = server_.config().server;
  io_deadline_ = std::chrono::steady_clock::now() + scfg.login_timeout;
  if (!server_.tds_tls()) {
    spdlog::error("client {}: the TDS listener has no TLS certificate", peer_);
    co_return false;
  }
  // The first byte tells TDS 8.0 (a TLS ClientHello) from TDS 7.x (PRELOGIN).
  boost::system::error_code ec;
  co_await socket_.async_wait(ClientSocket::wait_read, asio::redirect_error(use_awaitable, ec));
  if (timed_out_) {
    spdlog::info("client {}: closed at login_timeout before sending anything", peer_);
    co_return false;
  }
  uint8_t first = 0;
  if (::recv(socket_.native_handle(), &first, 1, MSG_PEEK) != 1) co_return false;
  const auto version = tds::wirepool_prelogin_version();
  if (first == 0x16) {
    tls::ServerContextPtr context = server_.tds_tls();
    if (!co_await tls_accept(context)) co_return false;
    // Strict encryption: PRELOGIN now, inside TLS.
    auto pre = co_await read_message();
    if (!pre) co_return false;
    if (pre->type != static_cast<uint8_t>(tds::PacketType::prelogin)) {
      spdlog::warn("client {}: refused: expected PRELOGIN, got {}", peer_,
                   tds::packet_type_name(pre->type));
      co_return false;
    }
    auto d = tds::decode_prelogin(tds::as_bytes(pre->payload));
    if (d.status != tds::DecodeStatus::ok) {
      spdlog::warn("client {}: bad PRELOGIN: {}", peer_, d.error);
      co_return false;
    }
    std::string body;
    tds::encode_prelogin(body, tds::prelogin_response(d.message, tds::encrypt::kReq, version));
    writer_.write(out_, tds::PacketType::tabular_result, body);
    if (!co_await flush()) co_return false;
  } else if (first == static_cast<uint8_t>(tds::PacketType::prelogin)) {
    // TDS 7.x: a cleartext PRELOGIN. Answer "encryption required"; serve the
    // client only if it then completes a TLS 1.3 handshake in PRELOGIN packets.
    tds::Message pre;
    for (;;) {
      auto header = tds::peek_header(in_.view());
      if (header && (header->type != static_cast<uint8_t>(tds::PacketType::prelogin) ||
                     header->length < tds::kHeaderSize || header->length > tds::kMaxLoginMessage)) {
        // A length below the header's own 8 bytes never completes a packet.
        spdlog::warn("client {}: refused: malformed PRELOGIN packet header (type {}, length {})",
                     peer_, header->type, header->length);
        metrics().error(ErrorReason::protocol_error);
        co_return false;
      }
      if (header && in_.size() >= header->length) {
        pre.type = header->type;
        pre.payload.assign(reinterpret_cast<const char*>(in_.view().data()) + tds::kHeaderSize,
                           header->length - tds::kHeaderSize);
        in_.consume(header->length);
        break;
      }
      size_t want = header ? std::max<size_t>(header->length, tds::kHeaderSize) : tds::kHeaderSize;
      if (!co_await read_more(want > in_.size() ? want - in_.size() : 1)) co_return false;
    }
    auto d = tds::decode_prelogin(tds::as_bytes(pre.payload));
    if (d.status != tds::DecodeStatus::ok) {
      spdlog::warn("client {}: bad PRELOGIN: {}", peer_, d.error);
      co_return false;
    }
    std::string body;
    tds::encode_prelogin(body, tds::prelogin_response(d.message, tds::encrypt::kReq, version));
    tds::PacketWriter w;
    w.write(out_, tds::PacketType::tabular_result, body);
    if (!co_await flush()) co_return false;
    uint8_t enc = d.message.encryption.value_or(tds::encrypt::kNotSup) & 0x7F;
    if (enc == tds::encrypt::kNotSup) {
      spdlog::warn(
          "client {}: refused: TDS 7.x client without encryption (ENCRYPT_NOT_SUP); wirepool "
          "accepts logins only over TLS 1.3",
          peer_);
      co_return false;
    }
    if (!co_await wrapped_handshake()) co_return false;
  } else {
    spdlog::warn(
        "client {}: refused: first byte 0x{:02x} is neither a TLS ClientHello nor a TDS "
        "PRELOGIN",
        peer_, first);
    co_return false;
  }

  // LOGIN7
  auto msg = co_await read_message();
  if (!msg) co_return false;
  if (msg->type != static_cast<uint8_t>(tds::PacketType::login7)) {
    spdlog::warn("client {}: refused: expected LOGIN7, got {}", peer_,
                 tds::packet_type_name(msg->type));
    co_return false;
  }
  auto decoded = tds::decode_login7(tds::as_bytes(msg->payload));
  OPENSSL_cleanse(msg->payload.data(), msg->payload.size());  // the obfuscated password
  if (decoded.status != tds::DecodeStatus::ok) {
    spdlog::warn("client {}: bad LOGIN7: {}", peer_, decoded.error);
    co_await login_error(kLoginFailed, 14,
                         "Login failed: malformed LOGIN7 (" + decoded.error + ")");
    co_return false;
  }
  tds::Login7& lg = decoded.message;
  struct Wipe {
    std::string& s;
    ~Wipe() { OPENSSL_cleanse(s.data(), s.size()); }
  } wipe{lg.password};
  const std::string user = lg.user_name;
  user_ = user;
  // The packet size: what the client asked for, within TDS's bounds.
  uint32_t psize = lg.packet_size == 0 ? tds::kDefaultPacketSize : lg.packet_size;
  psize = std::clamp<uint32_t>(psize, tds::kMinPacketSize, tds::kMaxPacketSize);

  if (server_.draining()) {
    co_await login_error(6005, 14, "SHUTDOWN is in progress.");
    co_return false;
  }
  if (lg.integrated_security()) {
    spdlog::warn("client {}: refused: integrated (SSPI) authentication is not supported", peer_);
    co_await login_error(kLoginFailed, 14,
                         "Login failed: wirepool accepts SQL Server authentication (user name "
                         "and password) only, not integrated authentication.");
    co_return false;
  }
  if (lg.find_feature(tds::feature::kFedAuth)) {
    spdlog::warn("client {}: refused: federated authentication is not supported", peer_);
    co_await login_error(kLoginFailed, 14,
                         "Login failed: wirepool does not support federated authentication "
                         "(Azure AD tokens); use a user name and password.");
    co_return false;
  }
  users_ = server_.users();  // kept: the session refers to its UserRecord
  const UserRecord* record = users_->find(user);
  // A full server refuses before the password; admin users may use the reserve.
  if (!server_.admission().has_room(record && record->admin)) {
    spdlog::warn("client {}: refused: max_clients ({}) reached", peer_, scfg.max_clients);
    co_await login_error(17809, 20,
                         "Could not connect because the maximum number of user connections "
                         "has already been reached.");
    co_return false;
  }
  // The database: LOGIN7's, else the user's first allowed one, else the first configured.
  std::string database = lg.database;
  if (database.empty() && record) {
    const auto& dbs = server_.config().databases;
    for (const auto& d : dbs)
      if (record->may_use(d.name)) {
        database = d.name;
        break;
      }
  }
  const bool known = server_.has_database(database);
  // What refuses this login whatever the password is decided before it is
  // looked at, and answered exactly as a wrong password (18456, after the
  // same delay): no answer tells a right password from a wrong one.
  std::optional<std::string> refusal;
  if (!record) {
    refusal = "no such user";
  } else if (auto why = certificate_refusal(*record, server_.config().tls)) {
    refusal = "certificate refused: " + *why;
  } else if (known && !record->may_use(database)) {
    refusal = "may not use database \"" + database + "\"";
  }
  auto answer_at = std::chrono::steady_clock::now();
  // Failed logins from this address (and for this user) wait their turn
  // before the password is looked at, up to the login deadline.
  if (auto wait = server_.throttle().delay(address(), user); wait.count() > 0) {
    if (io_deadline_ && answer_at + wait >= *io_deadline_) {
      metrics().refused(RefusedReason::throttled);
      spdlog::warn(
          "client {}: authentication refused for user \"{}\" without checking it: too many "
          "failed logins from {} (the next check in {} ms, after login_timeout)",
          peer_, user, to_string(address()),
          std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
      server_.login_failed();
      co_await wait_until(answer_at + kLoginFailureDelay);
      std::string m = "Login failed for user '" + user + "'.";
      co_await login_error(kLoginFailed, 14, m);
      co_return false;
    }
    co_await wait_until(answer_at + wait);
    if (timed_out_) co_return false;
    answer_at = std::chrono::steady_clock::now();
  }
  // The password, checked against the user's SCRAM verifier (an unknown
  // user's against a fake one, a refused user's too, so that all take the
  // same time) on the hashing threads: PBKDF2 with a verifier's iteration
  // count takes milliseconds to seconds, never on an event loop.
  // (By reference only: GCC 12 may destroy a lambda's owning captures twice
  // across a co_await; the verifier and lg.password live in this frame.)
  const pg::scram::Verifier verifier = users_->verifier_for(user);
  auto check = [&verifier, &lg] {
    as_hashing_thread();
    return pg::scram::verify_password(verifier, lg.password);
  };
  const bool password_ok = co_await server_.hashing().run(check);
  if (timed_out_) co_return false;
  if (refusal || !password_ok) {
    server_.login_failed();
    server_.throttle().failed(address(), user);
    spdlog::warn("client {}: authentication failed for user \"{}\": {}", peer_, user,
                 refusal ? *refusal : std::string("wrong password"));
    co_await wait_until(answer_at + kLoginFailureDelay);
    std::string m = "Login failed for user '" + user + "'.";
    co_await login_error(kLoginFailed, 14, m);
    co_return false;
  }
  if (!ticket_->promote(record->admin)) {
    spdlog::warn("client {}: refused: max_clients ({}) reached", peer_, scfg.max_clients);
    co_await login_error(17809, 20,
                         "Could not connect because the maximum number of user connections "
                         "has already been reached.");
    co_return false;
  }
  if (!known) {
    spdlog::info("client {}: user \"{}\" asked for unknown database \"{}\"", peer_, user, database);
    std::string m =
        "Cannot open database \"" + database + "\" requested by the login. The login failed.";
    co_await login_error(4060, 11, m);
    co_return false;
  }
  // The user's own pool: its backend connections serve no other user.
  auto pool = server_.pool_for(database, user);
  if (!pool) {
    std::string m =
        "Cannot open database \"" + database + "\" requested by the login. The login failed.";
    co_await login_error(4060, 11, m);
    co_return false;
  }
  database_ = database;
  session_ = std::make_unique<Session>(pool, *record, server_.blocking(), scfg.query_timeout);
  session_->set_client_metrics(&counters_);
  db_counters_ = &pool->metrics();
  if (!pool->pg_native()) (void)session_->settings().set("session_authorization", user);
  if (!lg.app_name.empty()) (void)session_->settings().set("application_name", lg.app_name);
  session_->settings().commit_startup();

  // The login response.
  tds::TokenEncoder enc(payload_);
  enc.env_change_text(tds::env::kDatabase, database, "master");
  info_token(5701, "Changed database context to '" + database + "'.");
  enc.env_collation(tds::kDefaultCollation, tds::Collation{});
  enc.env_change_text(tds::env::kLanguage, "us_english", "");
  info_token(5703, "Changed language setting to us_english.");
  tds::LoginAck ack;
  ack.tds_version = tds::kTds74;
  ack.prog_version = {1, 0, 0, 0};
  enc.login_ack(ack);
  enc.env_change_text(tds::env::kPacketSize, std::to_string(psize), std::to_string(psize));
  if (!lg.features.empty()) {
    // Nothing is acknowledged (text is always sent as NVARCHAR, so UTF8_SUPPORT
    // is not needed); an unknown acknowledgement would break the client.
    enc.feature_ext_ack({});
  }
  done_token(tds::token::kDone, tds::done::kFinal, 0, 0);
  end_response();
  packet_size_ = psize;
  assembler_.set_packet_size(psize);
  assembler_.set_max_message(scfg.max_message_size);
  io_deadline_.reset();
  spdlog::info("client {}: user \"{}\" connected to database \"{}\" over TDS ({})", peer_, user,
               database, lg.app_name.empty() ? lg.client_interface : lg.app_name);
  co_return co_await flush();
}

// ---------------------------------------------------------------------------
// The main loop

awaitable<void> TdsClient::begin() {
  auto self = shared_from_this();
  bool ok = false;
  try {
    ok = co_await login();
  } catch (const std::exception& e) {
    spdlog::error("client {}: login failed: {}", peer_, e.what());
  }
  if (ok) {
    co_await serve(false);
  } else {
    co_await end();
  }
}

awaitable<void> TdsClient::resume(boost::system::error_code ec) {
  auto self = shared_from_this();
  bool close = false;
  if (timed_out_) {
    timed_out_ = false;
    spdlog::info(
        "client {}: closed by {}", peer_,
        session_->in_transaction() ? "idle_in_transaction_timeout" : "client_idle_timeout");
    close = true;
  } else if (terminating_ || (draining_ && !session_->in_transaction())) {
    close = true;
  } else if (ec && ec != asio::error::operation_aborted) {
    close = true;
  }
  if (close) {
    co_await end();
  } else {
    co_await serve(true);
  }
}

awaitable<void> TdsClient::serve(bool readable) {
  try {
    for (;;) {
      if (readable) {
        readable = false;
        if (!read_available() && assembler_.idle()) break;  // EOF: the client left
      }
      bool open = true;
      for (;;) {
        tds::Message m;
        if (!pending_.empty()) {
          m = std::move(pending_.front());
          pending_.erase(pending_.begin());
        } else {
          std::string error;
          auto st = assembler_.next(m, error);
          if (st == tds::DecodeStatus::need_more) break;
          if (st == tds::DecodeStatus::error) {
            spdlog::warn("client {}: TDS protocol error: {}", peer_, error);
            metrics().error(ErrorReason::protocol_error);
            error_token(4002, 16,
                        "The incoming tabular data stream (TDS) protocol stream is "
                        "incorrect: " +
                            error);
            done_token(tds::token::kDone, tds::done::kError, 0, 0);
            end_response();
            open = false;
            break;
          }
        }
        open = co_await handle(m);
        if (!open || gone_) break;
      }
      if (gone_) {
        // Seen by the ATTENTION watch (EOF while the request ran) rather than by a write.
        spdlog::info("client {}: connection lost in the middle of a result", peer_);
        break;
      }
      if (!open) break;
      if (!out_.empty() && !co_await flush()) break;
      if (draining_ && assembler_.idle() && pending_.empty() && !session_->in_transaction()) break;
      if (assembler_.idle() && pending_.empty()) {
        if (tls_pending()) {
          auto n = read_available();
          if (!n) break;
          if (*n > 0) continue;  // else a partial TLS record: wait for the rest
        }
        in_.release();
        assembler_.shrink();
        std::string().swap(out_);
        std::string().swap(payload_);
        arm_idle_deadline();
        wait_idle(shared_from_this());
        co_return;
      }
      // Part of a message is here: wait for the rest (bounded by the I/O timeout).
      if (!co_await read_more(1)) {
        if (timed_out_) spdlog::warn("client {}: closed: stalled mid-message", peer_);
        break;
      }
      assembler_.feed(in_.view());
      in_.consume(in_.size());
    }
  } catch (const ClientGone&) {
    spdlog::info("client {}: connection lost in the middle of a result", peer_);
  } catch (const std::exception& e) {
    spdlog::error("client {}: closed after an internal error: {}", peer_, e.what());
  }
  co_await end();
}

std::optional<size_t> TdsClient::read_available() {
  size_t total = 0;
  for (;;) {
    auto n = read_now();
    if (!n) return std::nullopt;
    if (*n == 0) return total;
    total += *n;
    assembler_.feed(in_.view());
    in_.consume(in_.size());
  }
}

void TdsClient::arm_idle_deadline() {
  const auto& scfg = server_.config().server;
  auto now = std::chrono::steady_clock::now();
  if (session_->in_transaction()) {
    if (scfg.idle_in_transaction_timeout.count() > 0) {
      io_deadline_ = now + scfg.idle_in_transaction_timeout;
    }
  } else if (scfg.client_idle_timeout.count() > 0) {
    io_deadline_ = now + scfg.client_idle_timeout;
  }
}

awaitable<void> TdsClient::end() {
  running_ = false;
  if (session_) {
    try {
      co_await session_->finish();
    } catch (const std::exception& e) {
      spdlog::error("client {}: teardown: {}", peer_, e.what());
    }
    spdlog::debug("client {}: disconnected", peer_);
  }
  close_transport();
}

// ---------------------------------------------------------------------------
// ATTENTION while a request runs

void TdsClient::watch_attention() {
  socket_.async_wait(ClientSocket::wait_read,
                     [self = shared_from_this(), g = generation_](boost::system::error_code ec) {
                       self->on_attention_readable(ec, g);
                     });
}

void TdsClient::on_attention_readable(boost::system::error_code ec, uint64_t generation) {
  if (ec || !running_ || generation != generation_ || attention_) return;
  if (!read_available()) {
    gone_ = true;
    if (session_) session_->cancel(CancelReason::user);
    return;
  }
  for (;;) {
    tds::Message m;
    std::string error;
    auto st = assembler_.next(m, error);
    if (st == tds::DecodeStatus::need_more) break;
    if (st == tds::DecodeStatus::error) {
      protocol_error_ = true;
      break;
    }
    if (m.type == static_cast<uint8_t>(tds::PacketType::attention)) {
      attention_ = true;
      spdlog::debug("client {}: ATTENTION: cancelling the running request", peer_);
      if (session_) session_->cancel(CancelReason::user);
      return;
    }
    pending_.push_back(std::move(m));  // without MARS a client waits; keep it for later
  }
  if (!protocol_error_) watch_attention();
}

// ---------------------------------------------------------------------------
// Requests

awaitable<bool> TdsClient::handle(tds::Message& msg) {
  using tds::PacketType;
  if (msg.type == static_cast<uint8_t>(PacketType::attention)) {
    // Nothing runs (the request finished before the ATTENTION arrived): acknowledge.
    done_token(tds::token::kDone, tds::done::kAttn, 0, 0);
    end_response();
    co_return true;
  }
  ++generation_;
  running_ = true;
  attention_ = false;
  watch_attention();
  struct Stop {
    bool& running;
    ~Stop() { running = false; }
  } stop{running_};
  if (msg.reset_connection() || msg.reset_connection_skip_tran()) {
    co_await reset_connection();
  }
  switch (static_cast<PacketType>(msg.type)) {
    case PacketType::sql_batch: {
      auto d = tds::decode_sql_batch(tds::as_bytes(msg.payload));
      if (d.status != tds::DecodeStatus::ok) {
        error_token(4002, 16, "malformed SQL batch: " + d.error);
        done_token(tds::token::kDone, tds::done::kError, 0, 0);
        break;
      }
      co_await sql_batch(d.message.sql);
      break;
    }
    case PacketType::rpc: {
      auto d = tds::decode_rpc(tds::as_bytes(msg.payload));
      if (d.status != tds::DecodeStatus::ok) {
        spdlog::info("client {}: RPC refused: {}", peer_, d.error);
        error_token(8009, 16, "The RPC request could not be decoded: " + d.error);
        done_token(tds::token::kDoneProc, tds::done::kError, 0, 0);
        break;
      }
      co_await rpc(d.message);
      break;
    }
    case PacketType::transaction_manager: {
      auto d = tds::decode_transaction_request(tds::as_bytes(msg.payload));
      if (d.status != tds::DecodeStatus::ok) {
        error_token(4002, 16, "malformed transaction manager request: " + d.error);
        done_token(tds::token::kDone, tds::done::kError, 0, 0);
        break;
      }
      co_await transaction_request(d.message);
      break;
    }
    default:
      spdlog::warn("client {}: refused: {} message after login", peer_,
                   tds::packet_type_name(msg.type));
      error_token(
          4002, 16,
          "wirepool does not accept a " + tds::packet_type_name(msg.type) + " message here");
      done_token(tds::token::kDone, tds::done::kError, 0, 0);
      end_response();
      co_return false;
  }
  session_->sync_tx_state();
  sync_tx_descriptor();
  session_->release_if_idle(false);
  end_response();
  if (attention_) {
    // The cancelled request's response went out above; the acknowledgement is
    // a message of its own (tedious waits for both).
    done_token(tds::token::kDone, tds::done::kAttn, 0, 0);
    end_response();
    attention_ = false;
  }
  co_return !protocol_error_;
}

awaitable<void> TdsClient::reset_connection() {
  // sp_reset_connection: the session as it was after login.
  if (session_->in_transaction()) (void)co_await rollback_tx();
  prepared_.clear();
  nocount_ = false;
  tds::TokenEncoder(payload_).env_reset_connection_ack();
}

awaitable<bool> TdsClient::session_statement(std::string_view stmt, bool in_proc, bool more,
                                             bool* ok) {
  *ok = true;
  const auto c = sql::classify_tsql(stmt);
  if (c.kind == sql::TsqlKind::other) co_return false;
  const uint8_t done_tok = in_proc ? tds::token::kDoneInProc : tds::token::kDone;
  const uint16_t more_bit = more ? tds::done::kMore : 0;
  if (c.kind == sql::TsqlKind::rollback_named) {
    error_token(6401, 16,
                "wirepool does not support ROLLBACK TRANSACTION to a savepoint or a named "
                "transaction from TDS clients");
    done_token(done_tok, tds::done::kError | more_bit, 0, 0);
    *ok = false;
    co_return true;
  }
  const bool begin = c.kind == sql::TsqlKind::begin;
  const bool commit = c.kind == sql::TsqlKind::commit;
  const bool rollback = c.kind == sql::TsqlKind::rollback;
  if (begin || commit || rollback) {
    db::Status st;
    if (begin) {
      st = co_await begin_tx();
    } else if (commit) {
      st = co_await commit_tx();
    } else {
      st = co_await rollback_tx();
    }
    if (!st.ok()) {
      backend_error(st.take_error());
      done_token(done_tok, tds::done::kError | more_bit, 0, 0);
      *ok = false;
    } else {
      done_token(done_tok, more_bit, 0, 0);
    }
    co_return true;
  }
  // A backend that is not SQL Server has no equivalent of T-SQL's session
  // options: wirepool acknowledges them and honours NOCOUNT itself.
  if (c.kind == sql::TsqlKind::set_option && session_->pool().dialect() != sql::Dialect::tsql) {
    if (c.option == "nocount" && !c.value.empty()) nocount_ = c.value == "on";
    if (c.option == "implicit_transactions" && c.value == "on") {
      error_token(15001, 16,
                  "wirepool does not support SET IMPLICIT_TRANSACTIONS ON for this backend");
      done_token(done_tok, tds::done::kError | more_bit, 0, 0);
      *ok = false;
      co_return true;
    }
    done_token(done_tok, more_bit, 0, 0);
    co_return true;
  }
  co_return false;
}

awaitable<void> TdsClient::sql_batch(const std::string& text) {
  auto dialect = session_->pool().dialect();
  auto stmts = sql::split_statements(
      text, dialect == sql::Dialect::postgres || dialect == sql::Dialect::sqlite
                ? dialect
                : sql::Dialect::tsql);
  session_->statement_begin();
  if (stmts.empty()) {
    done_token(tds::token::kDone, tds::done::kFinal, 0, 0);
  }
  const std::vector<db::Param> none;
  for (size_t i = 0; i < stmts.size(); ++i) {
    bool more = i + 1 < stmts.size();
    bool ok = true;
    std::string stmt(stmts[i]);
    if (!co_await session_statement(stmt, false, more, &ok)) {
      ok = co_await run_statement(stmt, none, false, more);
    }
    if (!ok) {
      // SQL Server goes on after most statement errors; wirepool stops the
      // batch at the first one (docs/tds.md), so the DONE above ends it.
      if (more) {
        done_token(tds::token::kDone, tds::done::kError, 0, 0);
      }
      break;
    }
    if (attention_ || gone_) break;
  }
  session_->statement_end();
}

awaitable<bool> TdsClient::run_statement(const std::string& sql,
                                         const std::vector<db::Param>& params, bool in_proc,
                                         bool more) {
  const uint8_t done_tok = in_proc ? tds::token::kDoneInProc : tds::token::kDone;
  const uint16_t more_bit = (more || in_proc) ? tds::done::kMore : 0;
  if (auto err = co_await session_->ensure_backend()) {
    error_token(*err);
    done_token(done_tok, tds::done::kError | more_bit, 0, 0);
    co_return false;
  }
  Result r;
  db::Error err;
  std::string* out = &payload_;
  auto first = co_await session_->run([&](Backend& b) -> Fetch {
    if (r.phase == Result::Phase::start) {
      auto q = b.conn.query(sql, params);
      if (db::is_would_block(q)) return Fetch::wait;
      if (!q.ok()) {
        err = q.take_error();
        return Fetch::error;
      }
      r.rows = std::move(q.value());
      r.phase = Result::Phase::first_row;
    }
    return fetch_rows(r, *out, err);
  });
  Fetch f = co_await stream(r, err, first);
  forward_notices();
  if (f == Fetch::error) {
    if (attention_ && err.sqlstate == "57014") {
      done_token(done_tok, more_bit, command_of(r.info.verb), static_cast<uint64_t>(r.sent));
      co_return false;
    }
    backend_error(std::move(err));
    done_token(done_tok, tds::done::kError | more_bit, 0, 0);
    co_return false;
  }
  const std::string verb =
      r.info.verb.empty() ? sql::command_verb(sql, session_->pool().dialect()) : r.info.verb;
  uint64_t count = r.has_columns ? static_cast<uint64_t>(r.sent)
                                 : static_cast<uint64_t>(std::max<int64_t>(r.info.affected, 0));
  bool has_count = !nocount_ && (r.has_columns || r.info.affected >= 0);
  done_token(done_tok, more_bit | (has_count ? tds::done::kCount : 0), command_of(verb), count);
  co_return true;
}

TdsClient::Fetch TdsClient::fetch_rows(Result& r, std::string& out, db::Error& err) {
  using Phase = Result::Phase;
  tds::TokenEncoder enc(out);
  for (;;) {
    switch (r.phase) {
      case Phase::start:
      case Phase::first_row: {
        // COLMETADATA goes out before the rows, so a column whose type the
        // backend does not know yet (a SQLite expression) takes the kind of
        // its first value: fetch the first row first.
        auto cols = r.rows.columns();
        r.has_columns = !cols.empty();
        r.row.resize(cols.size());
        if (!r.has_columns) {
          r.phase = Phase::closing;
          break;
        }
        auto got = r.rows.next_borrowed(r.row);
        if (db::is_would_block(got)) return Fetch::wait;
        if (!got.ok()) {
          r.failure = got.take_error();
          r.phase = Phase::closing;
          break;
        }
        r.have_row = got.value();
        r.meta.resize(cols.size());
        for (size_t i = 0; i < cols.size(); ++i) {
          db::Column c = cols[i];
          const db::ValueView* sample = r.have_row ? &r.row[i] : nullptr;
          if (c.kind == db::Kind::Null && sample && !sample->is_null()) c.kind = sample->kind;
          r.meta[i].name = c.name;
          r.meta[i].flags = tds::col_flag::kNullable;
          r.meta[i].type = tds::column_type(c, tds::kDefaultCollation, sample);
        }
        enc.col_metadata(r.meta);
        r.phase = Phase::rows;
        break;
      }
      case Phase::rows: {
        for (;;) {
          if (!r.have_row) {
            if (out.size() >= kFlushBytes) return Fetch::flush;
            auto got = r.rows.next_borrowed(r.row);
            if (db::is_would_block(got)) return Fetch::wait;
            if (!got.ok()) {
              r.failure = got.take_error();
              r.phase = Phase::closing;
              break;
            }
            if (!got.value()) {
              r.info = r.rows.command();
              r.phase = Phase::closing;
              break;
            }
          }
          r.have_row = false;
          // A dynamically typed backend may hold another kind than the column's:
          // the codec converts what converts exactly (numbers to text, integers
          // to float) and refuses the rest (docs/tds.md).
          auto st = enc.row(r.meta, r.row);
          if (!st.ok()) {
            r.failure = st.take_error();
            r.phase = Phase::closing;
            break;
          }
          ++r.sent;
        }
        break;
      }
      case Phase::closing: {
        if (!r.has_columns && !r.failure) r.info = r.rows.command();
        if (r.rows.is_open()) {
          auto st = r.rows.close();
          if (db::is_would_block(st)) return Fetch::wait;
        }
        r.phase = Phase::finished;
        break;
      }
      case Phase::finished:
        if (r.failure) {
          err = *r.failure;
          return Fetch::error;
        }
        return Fetch::done;
    }
  }
}

awaitable<TdsClient::Fetch> TdsClient::stream(Result& r, db::Error& err, Fetch f) {
  std::string* out = &payload_;
  auto step = [&](Backend&) -> Fetch { return fetch_rows(r, *out, err); };
  for (;;) {
    if (f == Fetch::flush) {
      pack(false);
      if (!co_await flush()) {
        r.failure = make_error("08006", "client connection lost", db::Errc::connection);
        r.phase = Result::Phase::closing;
        co_await session_->run(step);
        throw ClientGone{};
      }
    } else if (f != Fetch::more) {
      if (f == Fetch::error && !attention_) session_->explain_cancel(err);
      co_return f;
    }
    if ((session_->cancel_reason() != CancelReason::none || attention_ || gone_) &&
        r.phase == Result::Phase::rows) {
      r.failure = make_error("57014", "canceling statement", db::Errc::busy);
      r.phase = Result::Phase::closing;
    }
    f = co_await session_->run(step);
  }
}

// ---------------------------------------------------------------------------
// RPC

awaitable<void> TdsClient::rpc(tds::RpcRequest& req) {
  const uint16_t id = req.proc_id;
  std::string name = lower(req.proc_name);
  auto proc_is = [&](uint16_t pid, std::string_view pname) {
    return id == pid || name == pname || name == std::string("sys.") + std::string(pname);
  };
  auto fail = [&](int32_t number, std::string_view message) {
    error_token(number, 16, message);
    done_token(tds::token::kDoneProc, tds::done::kError, 0, 0);
  };
  std::vector<db::Param> params;
  std::string sql;
  int32_t handle_out = 0;
  bool returns_handle = false;
  size_t first_value = 0;
  std::vector<std::string> names;
  if (proc_is(tds::proc::kExecuteSql, "sp_executesql") ||
      proc_is(tds::proc::kPrepExec, "sp_prepexec")) {
    // sp_executesql @stmt [, @params, values...];
    // sp_prepexec @handle OUTPUT, @params, @stmt, values...
    bool prepexec = proc_is(tds::proc::kPrepExec, "sp_prepexec");
    const size_t stmt_at = prepexec ? 2 : 0, decl_at = 1;
    if (req.params.size() <= stmt_at) {
      fail(8144, "Procedure or function " + proc_name_of(req) + " has too few arguments.");
      co_return;
    }
    auto stmt = text_param(req.params[stmt_at]);
    auto decl = req.params.size() > decl_at ? text_param(req.params[decl_at])
                                            : std::optional<std::string>(std::string());
    if (!stmt || !decl) {
      fail(214, "Procedure expects parameter '@statement' of type 'ntext/nchar/nvarchar'.");
      co_return;
    }
    names = declared_names(*decl);
    sql = rewrite_markers(*stmt, names);
    first_value = prepexec ? 3 : 2;
    if (prepexec) {
      Prepared p;
      p.sql = sql;
      p.names = names;
      handle_out = next_handle_++;
      prepared_[handle_out] = std::move(p);
      returns_handle = true;
    }
  } else if (proc_is(tds::proc::kPrepare, "sp_prepare")) {
    // sp_prepare @handle OUTPUT, @params, @stmt [, @options]
    if (req.params.size() < 3) {
      fail(8144, "Procedure or function sp_prepare has too few arguments.");
      co_return;
    }
    auto decl = text_param(req.params[1]);
    auto stmt = text_param(req.params[2]);
    if (!stmt || !decl) {
      fail(214, "Procedure expects parameter '@stmt' of type 'ntext/nchar/nvarchar'.");
      co_return;
    }
    Prepared p;
    p.names = declared_names(*decl);
    p.sql = rewrite_markers(*stmt, p.names);
    handle_out = next_handle_++;
    prepared_[handle_out] = std::move(p);
    tds::TokenEncoder enc(payload_);
    enc.return_status(0);
    tds::TypeInfo t;
    t.type = tds::type::kIntN;
    t.max_length = 4;
    auto v = db::ValueView::int64(handle_out);
    (void)enc.return_value(0, req.params[0].name, 0x01, t, v);
    done_token(tds::token::kDoneProc, tds::done::kFinal, 0, 0);
    co_return;
  } else if (proc_is(tds::proc::kUnprepare, "sp_unprepare")) {
    if (!req.params.empty()) {
      if (auto h = int_param(req.params[0])) prepared_.erase(static_cast<int32_t>(*h));
    }
    tds::TokenEncoder(payload_).return_status(0);
    done_token(tds::token::kDoneProc, tds::done::kFinal, 0, 0);
    co_return;
  } else if (proc_is(tds::proc::kExecute, "sp_execute")) {
    std::optional<int64_t> h = req.params.empty() ? std::nullopt : int_param(req.params[0]);
    auto it = h ? prepared_.find(static_cast<int32_t>(*h)) : prepared_.end();
    if (it == prepared_.end()) {
      fail(8179, "Could not find prepared statement with handle " +
                     (h ? std::to_string(*h) : std::string("(none)")) + ".");
      co_return;
    }
    sql = it->second.sql;
    names = it->second.names;
    first_value = 1;
  } else {
    std::string shown = req.proc_name.empty() ? tds::proc_name(id) : req.proc_name;
    spdlog::info("client {}: RPC {} refused: not supported", peer_, shown);
    fail(kNoSuchProcedure, "Could not find stored procedure '" + shown + "'.");
    co_return;
  }

  // The values, in declaration order: named ones by name, others by position.
  std::vector<const tds::RpcParam*> ordered(names.size(), nullptr);
  std::vector<std::pair<size_t, const tds::RpcParam*>> outputs;
  size_t position = 0;
  for (size_t i = first_value; i < req.params.size(); ++i) {
    const auto& p = req.params[i];
    size_t at = position;
    if (!p.name.empty()) {
      std::string n = lower(p.name);
      if (!n.empty() && n[0] == '@') n.erase(0, 1);
      auto it = std::find(names.begin(), names.end(), n);
      if (it == names.end()) {
        fail(8145, p.name + " is not a parameter for procedure " + proc_name_of(req) + ".");
        co_return;
      }
      at = static_cast<size_t>(it - names.begin());
    }
    ++position;
    if (at >= ordered.size()) ordered.resize(at + 1, nullptr);
    ordered[at] = &p;
    if (p.output()) outputs.emplace_back(i, &p);
  }
  for (size_t i = 0; i < ordered.size(); ++i) {
    db::Param param;
    if (ordered[i]) param.value = ordered[i]->value.value;
    params.push_back(std::move(param));
  }

  session_->statement_begin();
  bool ok = true;
  bool handled = co_await session_statement(sql, true, true, &ok);
  if (!handled) ok = co_await run_statement(sql, params, true, true);
  session_->statement_end();
  tds::TokenEncoder enc(payload_);
  if (!ok) {
    done_token(tds::token::kDoneProc, tds::done::kError, 0, 0);
    co_return;
  }
  enc.return_status(0);
  if (returns_handle) {
    tds::TypeInfo t;
    t.type = tds::type::kIntN;
    t.max_length = 4;
    auto v = db::ValueView::int64(handle_out);
    (void)enc.return_value(0, req.params[0].name, 0x01, t, v);
  }
  for (const auto& [ordinal, p] : outputs) {
    // The backends have no output parameters: they come back as they went in.
    auto v = db::view_of(p->value.value);
    if (!enc.return_value(static_cast<uint16_t>(ordinal), p->name, 0x01, p->value.type, v).ok()) {
      auto null = db::ValueView();
      (void)enc.return_value(static_cast<uint16_t>(ordinal), p->name, 0x01, p->value.type, null);
    }
  }
  done_token(tds::token::kDoneProc, tds::done::kFinal, 0, 0);
}

// ---------------------------------------------------------------------------
// Transactions

awaitable<db::Status> TdsClient::begin_tx() {
  if (session_->in_transaction()) {
    // SQL Server nests BEGIN TRAN (@@TRANCOUNT); wirepool keeps one level.
    info_token(0,
               "a transaction is already in progress (nested transactions are not supported; "
               "this BEGIN is ignored)");
    co_return db::Status();
  }
  auto st = co_await session_->begin("BEGIN");
  if (st.ok()) sync_tx_descriptor();
  co_return st;
}

awaitable<db::Status> TdsClient::commit_tx() {
  if (!session_->in_transaction()) {
    error_token(3902, 16, "The COMMIT TRANSACTION request has no corresponding BEGIN TRANSACTION.");
    co_return db::Status();
  }
  auto st = co_await session_->commit();
  sync_tx_descriptor(tds::env::kCommitTransaction);
  co_return st;
}

awaitable<db::Status> TdsClient::rollback_tx() {
  if (!session_->in_transaction()) {
    error_token(3903, 16,
                "The ROLLBACK TRANSACTION request has no corresponding BEGIN TRANSACTION.");
    co_return db::Status();
  }
  auto st = co_await session_->rollback();
  sync_tx_descriptor();
  co_return st;
}

void TdsClient::sync_tx_descriptor(uint8_t ended_by) {
  bool open = session_ && session_->in_transaction();
  tds::TokenEncoder enc(payload_);
  if (open && tx_descriptor_ == 0) {
    tx_descriptor_ = ++next_descriptor_;
    enc.env_begin_transaction(tx_descriptor_);
  } else if (!open && tx_descriptor_ != 0) {
    if (ended_by == tds::env::kCommitTransaction) {
      enc.env_commit_transaction(tx_descriptor_);
    } else {
      enc.env_rollback_transaction(tx_descriptor_);
    }
    tx_descriptor_ = 0;
  }
}

awaitable<void> TdsClient::transaction_request(const tds::TransactionRequest& req) {
  db::Status st;
  switch (req.request) {
    case tds::tm::kBeginXact:
      st = co_await begin_tx();
      break;
    case tds::tm::kCommitXact:
    case tds::tm::kRollbackXact: {
      bool commit = req.request == tds::tm::kCommitXact;
      // (if/else: GCC 12 runs both arms of a ?: whose arms co_await)
      if (commit) {
        st = co_await commit_tx();
      } else {
        st = co_await rollback_tx();
      }
      if (st.ok() && (req.flags & tds::tm::kFlagBeginXact)) st = co_await begin_tx();
      break;
    }
    default:
      spdlog::info("client {}: transaction manager request {} refused", peer_, req.request);
      error_token(8525, 16,
                  "wirepool does not support distributed transactions (transaction manager "
                  "request " +
                      std::to_string(req.request) + ")");
      done_token(tds::token::kDone, tds::done::kError, 0, 0);
      co_return;
  }
  if (!st.ok()) {
    backend_error(st.take_error());
    done_token(tds::token::kDone, tds::done::kError, 0, 0);
    co_return;
  }
  done_token(tds::token::kDone, tds::done::kFinal, 0, 0);
}

}  // namespace wirepool::server
