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
#include "tls/tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;

namespace {

/// How long a failed login waits before it is answered.
constexpr auto kLoginFailureDelay = std::chrono::milliseconds(250);

/// Thrown when the client's socket fails while rows are being sent; caught by
/// serve(), which ends the connection.
struct ClientGone {};

db::Error make_error(std::string_view sqlstate, std::string message,
                     db::Errc code = db::Errc::invalid_query) {
  db::Error e;
  e.code = code;
  e.sqlstate = std::string(sqlstate);
  e.message = std::move(message);
  return e;
}

/// PostgreSQL's command tag for what a statement did.
std::string command_tag(const db::CommandInfo& ci, const std::string& fallback_verb, bool had_rows,
                        int64_t rows_sent) {
  if (!ci.tag.empty()) return ci.tag;
  const std::string& verb = ci.verb.empty() ? fallback_verb : ci.verb;
  int64_t n = ci.affected >= 0 ? ci.affected : rows_sent;
  if (verb == "INSERT") return "INSERT 0 " + std::to_string(n);
  if (verb == "UPDATE" || verb == "DELETE" || verb == "MERGE") {
    return verb + " " + std::to_string(n);
  }
  if (verb == "MOVE" || verb == "FETCH" || verb == "COPY") return verb + " " + std::to_string(n);
  if (verb == "SELECT" || verb.empty() || had_rows) return "SELECT " + std::to_string(rows_sent);
  return verb;
}

bool is_transaction_control(const Classified& c) {
  return c.kind == StatementKind::begin || c.kind == StatementKind::commit ||
         c.kind == StatementKind::rollback;
}

char rfq_status(db::TxState s) {
  switch (s) {
    case db::TxState::idle:
      return 'I';
    case db::TxState::in_transaction:
      return 'T';
    case db::TxState::failed:
      return 'E';
  }
  return 'I';
}

template <class... Ts>
struct overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;

/// Applies the startup packet's `options` ("-c name=value --name=value ...").
std::optional<SettingError> set_startup_options(Settings& settings, std::string_view o) {
  while (!o.empty()) {
    while (!o.empty() && o.front() == ' ')
      o.remove_prefix(1);
    size_t end = o.find(' ');
    std::string_view tok = o.substr(0, end);
    o = end == std::string_view::npos ? std::string_view() : o.substr(end);
    if (tok == "-c") continue;
    if (tok.rfind("--", 0) == 0)
      tok.remove_prefix(2);
    else if (tok.rfind("-c", 0) == 0)
      tok.remove_prefix(2);
    auto eq = tok.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(tok.substr(0, eq));
    std::replace(name.begin(), name.end(), '-', '_');
    if (auto err = settings.set(name, tok.substr(eq + 1))) return err;
  }
  return std::nullopt;
}

}  // namespace

// ---------------------------------------------------------------------------
// Extended-protocol state

/// A result being sent: the reader, what was announced to the client for it,
/// and where sending stands. Jobs on non-blocking backends are repeated after
/// a wait, so all progress lives here, never in the job.
struct PgClient::Streamer {
  enum class Phase : uint8_t { start, rows, next_result, closing, finished };
  Phase phase = Phase::start;
  db::Rows rows;
  /// Native PostgreSQL results: values are the backend's bytes, converted only
  /// where the format fetched (`actual`) differs from the one asked for.
  bool native = false;
  /// Several results (a simple query's statements): each gets RowDescription
  /// and CommandComplete here.
  bool multi = false;
  std::vector<int16_t> requested;  ///< the client's result format codes (Bind)
  std::vector<pg::WireType> types;
  std::vector<int16_t> formats;  ///< per column: the format the client gets
  std::vector<int16_t> actual;   ///< native: per column, the format fetched
  std::vector<db::ValueView> row;
  int64_t sent = 0;
  bool has_columns = false;
  db::CommandInfo info;
  std::vector<std::string> tags;     ///< multi: the tag of every finished result, in order
  std::optional<db::Error> failure;  ///< set while closing after an error
  std::string fallback_verb;
  /// Parked (park_portals): the rest of the result as DataRow messages, served
  /// from `parked_at`; `parking` while they are read.
  bool suspended = false;  ///< sent PortalSuspended before
  bool parking = false;
  bool is_parked = false;
  size_t park_mark = 0;  ///< while parking: the size at which fetch_rows pauses
  std::string parked;
  size_t parked_at = 0;
};

struct PgClient::Portal {
  std::shared_ptr<Prepared> stmt;
  std::vector<db::Param> params;
  std::vector<int16_t> result_formats;
  std::unique_ptr<Streamer> open;  ///< a suspended reader (Execute with a row limit)
  bool done = false;
};

namespace {

/// Fills `s.types` / `s.formats` for `columns` with the client's format codes.
void set_wire_types(std::span<const db::Column> columns, std::span<const int16_t> formats,
                    std::vector<pg::WireType>& types, std::vector<int16_t>& fmt) {
  types.clear();
  fmt.clear();
  for (size_t i = 0; i < columns.size(); ++i) {
    types.push_back(pg::wire_type_for(columns[i]));
    int16_t f = formats.empty() ? 0 : formats.size() == 1 ? formats[0] : formats[i];
    fmt.push_back(f);
  }
}

/// RowDescription for columns known before execution (Describe): PostgreSQL's
/// own descriptions for a native backend, else the wire types of their kinds.
void describe_columns(std::span<const db::Column> columns, std::span<const int16_t> formats,
                      bool native, std::string& out) {
  std::vector<pg::FieldDescription> fields(columns.size());
  std::vector<pg::WireType> types;
  std::vector<int16_t> fmt;
  set_wire_types(columns, formats, types, fmt);
  for (size_t i = 0; i < columns.size(); ++i) {
    const auto& n = columns[i].native;
    fields[i].name = columns[i].name;
    fields[i].format = fmt[i];
    if (native) {
      fields[i].type_oid = n.pg_oid;
      fields[i].type_size = n.pg_typlen;
      fields[i].type_modifier = n.pg_typmod;
      fields[i].table_oid = n.pg_table_oid;
      fields[i].column = n.pg_column;
    } else {
      fields[i].type_oid = types[i].oid;
      fields[i].type_size = types[i].size;
      fields[i].type_modifier = types[i].modifier;
    }
  }
  pg::Encoder(out).row_description(fields);
}

}  // namespace

bool PgClient::next_is_sync() const {
  auto rest = in_.view().subspan(std::min(unconsumed_, in_.size()));
  return !rest.empty() && rest[0] == 'S';
}

bool PgClient::sync_follows() {
  // Clients often send the Sync right behind the Execute in a second write:
  // one read that does not wait saves the implicit transaction's round trips.
  if (in_.size() <= unconsumed_ && !read_now()) return false;
  return next_is_sync();
}

bool PgClient::to_backend(const Classified& c) const {
  if (c.kind == StatementKind::backend) return true;
  // A PostgreSQL backend runs transaction control itself (and reports the
  // state, and COMMIT of a failed transaction answers ROLLBACK as it should);
  // statement mode refuses BEGIN in the session layer.
  return is_transaction_control(c) && session_->pool().pg_native() &&
         !(c.kind == StatementKind::begin && session_->mode() == config::PoolMode::statement);
}

PgClient::Extended& PgClient::ext() {
  if (!ext_) ext_ = std::make_unique<Extended>();
  return *ext_;
}

// ---------------------------------------------------------------------------

PgClient::PgClient(Server& server, Loop& loop, ClientSocket socket,
                   const config::Listener& listener, Admission::TicketPtr ticket)
    : ClientConnection(loop, std::move(socket), ProtocolIndex::postgres, std::move(ticket)),
      server_(server),
      listener_(listener) {}

PgClient::~PgClient() {
  if (pid_) server_.cancels().remove(pid_);
}

void PgClient::start(std::shared_ptr<PgClient> client) {
  client->watch_displacement(client);
  auto& io = client->loop_.io;
  asio::co_spawn(io, client->begin(), asio::detached);  // begin() keeps the client alive
}

void PgClient::cancel_request() {
  // Any thread (the registry keeps the client alive meanwhile): the session is
  // only touched on its own loop.
  asio::post(loop_.io, [self = shared_from_this()] {
    if (self->session_) self->session_->cancel(CancelReason::user);
  });
}

// ---------------------------------------------------------------------------
// I/O

awaitable<bool> PgClient::tls_handshake(bool direct) {
  tls::ServerContextPtr context = server_.pg_tls();
  if (!co_await tls_accept(context)) co_return false;
  // PostgreSQL 17's direct TLS must name the protocol (and a client that
  // offered another one was refused by the context already).
  if (direct && !tls::alpn_negotiated(ssl_.get())) {
    spdlog::warn("client {}: direct TLS without ALPN \"postgresql\": refused", peer_);
    co_return false;
  }
  co_return true;
}

awaitable<std::optional<std::string>> PgClient::read_password_message() {
  // Only used during authentication (messages there are small); the main loop
  // decodes in place.
  for (;;) {
    auto d = pg::decode_frontend(in_.view(), pg::kMaxStartupPacket);
    if (d.status == pg::DecodeStatus::error) {
      spdlog::warn("client {}: protocol error during authentication: {}", peer_, d.error);
      co_await fatal("08P01", d.error);
      co_return std::nullopt;
    }
    if (d.status == pg::DecodeStatus::ok) {
      auto* pw = std::get_if<pg::PasswordMessage>(&d.message);
      if (!pw) {
        spdlog::warn("client {}: expected a SASL response during authentication", peer_);
        co_await fatal("08P01", "expected SASL response, got another message");
        co_return std::nullopt;
      }
      std::string body(pw->data);
      in_.consume(d.consumed);
      co_return body;
    }
    auto len = pg::peek_length(in_.view());
    if (!co_await read_more(len ? *len + 1 : 5)) co_return std::nullopt;
  }
}

void PgClient::send_error(const db::Error& e, std::string_view severity) {
  metrics().sqlstate(e.sqlstate.size() == 5 ? e.sqlstate : "XX000");
  pg::ErrorFields f;
  f.severity = severity;
  f.sqlstate = e.sqlstate.size() == 5 ? std::string_view(e.sqlstate) : std::string_view("XX000");
  f.message = e.message;
  f.detail = e.detail;
  f.hint = e.hint;
  f.more = e.fields;
  pg::Encoder(out_).error_response(f);
}

void PgClient::send_error(std::string_view sqlstate, std::string_view message,
                          std::string_view severity) {
  metrics().sqlstate(sqlstate);
  // 08P01: the client broke the protocol (bad message, message out of place).
  if (sqlstate == "08P01") metrics().error(ErrorReason::protocol_error);
  pg::ErrorFields f;
  f.severity = severity;
  f.sqlstate = sqlstate;
  f.message = message;
  pg::Encoder(out_).error_response(f);
}

void PgClient::send_notice(std::string_view sqlstate, std::string_view message,
                           std::string_view severity) {
  pg::ErrorFields f;
  f.severity = severity;
  f.sqlstate = sqlstate;
  f.message = message;
  pg::Encoder(out_).notice_response(f);
}

void PgClient::send_parameter_changes() {
  // A transaction that ended takes its SET LOCALs with it.
  if (!session_->in_transaction()) session_->settings().end_transaction();
  for (const auto& [name, value] : session_->settings().take_reported_changes()) {
    pg::Encoder(out_).parameter_status(name, value);
  }
}

void PgClient::ready_for_query() {
  if (backend_gone_) return;  // a FATAL went out: nothing follows it
  pg::Encoder(out_).ready_for_query(rfq_status(session_->tx_state()));
  answered_ = true;
}

awaitable<void> PgClient::fatal(std::string_view sqlstate, std::string_view message) {
  send_error(sqlstate, message, "FATAL");
  co_await flush();
}

// ---------------------------------------------------------------------------
// Startup and authentication

awaitable<bool> PgClient::read_startup(StartupParams& params, uint32_t& protocol) {
  const bool tls_on = listener_.tls != config::TlsMode::off && server_.pg_tls();
  if (tls_on) {
    // Direct TLS (PostgreSQL 17's sslnegotiation=direct): a ClientHello first.
    boost::system::error_code ec;
    co_await socket_.async_wait(ClientSocket::wait_read, asio::redirect_error(use_awaitable, ec));
    if (timed_out_) {
      spdlog::info("client {}: closed at login_timeout before sending anything", peer_);
      co_return false;
    }
    uint8_t first = 0;
    if (::recv(socket_.native_handle(), &first, 1, MSG_PEEK) == 1 && first == 0x16) {
      if (!co_await tls_handshake(true)) co_return false;
    }
  }
  int negotiations = 0;
  for (;;) {
    auto d = pg::decode_startup(in_.view());
    if (d.status == pg::DecodeStatus::need_more) {
      if (!co_await read_more(8)) {
        if (timed_out_) spdlog::info("client {}: closed at login_timeout during startup", peer_);
        co_return false;
      }
      continue;
    }
    if (d.status == pg::DecodeStatus::error) {
      spdlog::warn("client {}: bad startup packet: {}", peer_, d.error);
      // PostgreSQL closes without a word on a bad length (a client that
      // connected and sent Terminate first, say); other faults get a FATAL.
      if (d.error.starts_with("unsupported frontend protocol")) {
        co_await fatal("0A000", d.error);
      } else if (!d.error.starts_with("invalid length of startup packet")) {
        co_await fatal("08P01", d.error);
      }
      co_return false;
    }
    in_.consume(d.consumed);
    if (auto* cancel = std::get_if<pg::CancelRequest>(&d.message)) {
      co_await on_cancel_request(cancel->pid, cancel->secret);
      co_return false;
    }
    if (std::holds_alternative<pg::SslRequest>(d.message) ||
        std::holds_alternative<pg::GssEncRequest>(d.message)) {
      if (++negotiations > 2 || !in_.empty()) {
        // Bytes after the request would be read as plaintext (CVE-2021-23214).
        co_await fatal("08P01", "unexpected data after an encryption request");
        co_return false;
      }
      bool ssl = std::holds_alternative<pg::SslRequest>(d.message);
      if (ssl && tls_on && !ssl_) {
        pg::Encoder(out_).ssl_response('S');
        if (!co_await flush()) co_return false;
        if (!co_await tls_handshake(false)) co_return false;
      } else {
        pg::Encoder(out_).ssl_response('N');  // GSSAPI, or no TLS on this listener
        if (!co_await flush()) co_return false;
      }
      continue;
    }
    auto& sm = std::get<pg::StartupMessage>(d.message);
    protocol = sm.protocol;
    for (auto& [k, v] : sm.params)
      params.emplace_back(std::string(k), std::string(v));
    co_return true;
  }
}

awaitable<void> PgClient::on_cancel_request(int32_t pid, int32_t secret) {
  bool done = server_.cancels().cancel(pid, secret);
  const config::Peer* peer = done ? nullptr : server_.cancel_peer(pid);
  if (peer) {
    // Another process issued this key (several processes on one port,
    // replicas behind a Service): forward the request to it, once.
    bool sent = co_await forward_cancel(*peer, pid, secret);
    spdlog::info("client {}: cancel request for {} {} peer {} ({}:{})", peer_, pid,
                 sent ? "forwarded to" : "could not be forwarded to", peer->id, peer->address,
                 peer->port);
    co_return;
  }
  spdlog::info("client {}: cancel request for {} {}", peer_, pid,
               done ? "delivered" : "matched no session");
}

awaitable<void> PgClient::refuse_login(const LoginDecision& d, const std::string& user,
                                       const std::string& database, TimePoint answer_at) {
  switch (d.refusal) {
    case LoginRefusal::none:
      break;
    case LoginRefusal::shutting_down:
      co_await fatal("57P03", "the database system is shutting down");
      break;
    case LoginRefusal::tls_required:
      // Before any credential is exchanged.
      spdlog::warn("client {}: refused: TLS is required on this listener (user \"{}\")", peer_,
                   user);
      co_await fatal("28000", "this wirepool listener requires TLS: connect with sslmode=require");
      break;
    case LoginRefusal::too_many_clients:
      spdlog::warn("client {}: refused: max_clients ({}) reached", peer_,
                   server_.config().server.max_clients);
      co_await fatal("53300", "sorry, too many clients already");
      break;
    case LoginRefusal::login_failed: {
      // Logged with the real reason, without the password; answered with one
      // message for every reason, kLoginFailureDelay after the client's last
      // message (it slows guessing down and hides which check refused).
      server_.login_failed();
      server_.throttle().failed(address(), user);
      spdlog::warn("client {}: authentication failed for user \"{}\": {}", peer_, user, d.reason);
      co_await wait_until(answer_at + kLoginFailureDelay);
      std::string msg = "password authentication failed for user \"" + user + "\"";
      co_await fatal("28P01", msg);
      break;
    }
    case LoginRefusal::unknown_database: {
      spdlog::info("client {}: user \"{}\" asked for unknown database \"{}\"", peer_, user,
                   database);
      std::string msg = "database \"" + database + "\" does not exist";
      co_await fatal("3D000", msg);
      break;
    }
  }
}

awaitable<bool> PgClient::login() {
  const auto& scfg = server_.config().server;
  io_deadline_ = std::chrono::steady_clock::now() + scfg.login_timeout;
  StartupParams params;  // copied: the buffer is reused
  uint32_t protocol = 0;
  if (!co_await read_startup(params, protocol)) co_return false;

  LoginFacts facts;
  facts.draining = server_.draining();
  const auto& admission = server_.admission();
  std::string user, database, options;
  if (auto d = decide_login(LoginStage::requested, facts, admission);
      d.refusal != LoginRefusal::none) {
    co_await refuse_login(d, user, database, {});
    co_return false;
  }
  std::vector<std::string_view> unrecognized;
  for (auto& [k, v] : params) {
    if (k == "user")
      user = v;
    else if (k == "database")
      database = v;
    else if (k == "options")
      options = v;
    else if (k == "replication") {
      co_await fatal("08P01", "wirepool does not support replication connections");
      co_return false;
    } else if (k.rfind("_pq_.", 0) == 0) {
      unrecognized.push_back(k);
    }
  }
  if (user.empty()) {
    co_await fatal("28000", "no PostgreSQL user name specified in startup packet");
    co_return false;
  }
  if (database.empty()) database = user;

  users_ = server_.users();  // kept: the session refers to its UserRecord
  const UserRecord* record = users_->find(user);
  facts.tls = ssl_ != nullptr;
  facts.tls_required = listener_.tls == config::TlsMode::required;
  facts.user = record;
  facts.database = database;
  facts.database_known = server_.has_database(database);
  facts.admin_console = !facts.database_known && database == kAdminDatabase;
  if (record) facts.certificate_refusal = certificate_refusal(*record, server_.config().tls);
  auto due = decide_login(LoginStage::credentials_due, facts, admission);
  uint32_t minor = protocol & 0xffff;
  if (due.refusal != LoginRefusal::tls_required && (minor > 0 || !unrecognized.empty())) {
    pg::Encoder(out_).negotiate_protocol_version(0, unrecognized);
  }
  if (due.refusal != LoginRefusal::none) {
    co_await refuse_login(due, user, database, {});
    co_return false;
  }
  // Whatever refuses this login besides the proof is decided after the
  // exchange and answered exactly as a wrong password: the proof is never
  // checked for it, so no answer tells a right password from a wrong one.
  auto credentials = co_await authenticate(user);
  if (!credentials) co_return false;
  facts.password_ok = credentials->ok;
  facts.password_failure = credentials->failure;
  auto checked = decide_login(LoginStage::credentials_checked, facts, admission, ticket_.get());
  if (checked.refusal != LoginRefusal::login_failed) {
    pg::Encoder(out_).auth_sasl_final(credentials->server_final);
  }
  if (checked.refusal != LoginRefusal::none) {
    co_await refuse_login(checked, user, database, credentials->answer_at);
    co_return false;
  }
  if (facts.admin_console) co_return co_await admin_login(*record);
  if (!co_await open_session(*record, user, database, params, options)) co_return false;
  co_return co_await finish_login(user, database);
}

awaitable<bool> PgClient::open_session(const UserRecord& record, const std::string& user,
                                       const std::string& database, const StartupParams& params,
                                       const std::string& options) {
  // The user's own pool: its backend connections serve no other user.
  auto pool = server_.pool_for(database, user);
  if (!pool) {
    std::string msg = "database \"" + database + "\" does not exist";  // removed meanwhile
    co_await fatal("3D000", msg);
    co_return false;
  }
  auto session = std::make_unique<Session>(pool, record, server_.blocking(),
                                           server_.config().server.query_timeout);
  session->set_client_metrics(&counters_);
  db_counters_ = &pool->metrics();
  auto& settings = session->settings();
  if (pool->pg_native()) {
    settings.mirror_only();  // the backend's settings are the truth
  } else {
    (void)settings.set("session_authorization", user);
    if (record.admin) (void)settings.set("is_superuser", "on");
  }
  for (auto& [k, v] : params) {
    if (k == "user" || k == "database" || k == "options" || k.rfind("_pq_.", 0) == 0) continue;
    if (auto err = settings.set(k, v)) {
      co_await fatal(err->sqlstate, err->message);
      co_return false;
    }
  }
  if (auto err = set_startup_options(settings, options)) {
    co_await fatal(err->sqlstate, err->message);
    co_return false;
  }
  settings.commit_startup();
  session_ = std::move(session);
  co_return true;
}

awaitable<bool> PgClient::finish_login(const std::string& user, const std::string& database) {
  // A PostgreSQL backend reports its own parameters: take them from a backend
  // that has the client's settings (which also checks those settings now,
  // where the client expects errors about them). A lease this brief waits for
  // a connection given back rather than opening one past pipeline_max.
  const bool native = session_->pool_ptr()->pg_native();
  std::vector<std::pair<std::string, std::string>> reported;
  if (native) {
    auto err = co_await session_->ensure_backend(/*pipelined=*/true);
    if (err) {
      spdlog::warn("client {}: database \"{}\": {}", peer_, database, err->message);
      co_await fatal(err->sqlstate, err->message);
      co_return false;
    }
    reported = session_->backend()->conn.impl()->server_parameters();
    for (const auto& [name, value] : reported) {
      // The server's default: the client's SQL is split the way the server splits it.
      if (name == "standard_conforming_strings" && value != "on") {
        session_->on_parameter({name, value});
      }
    }
    (void)session_->take_events();
    session_->release_if_idle(false);
  }

  pg::Encoder enc(out_);
  enc.auth_ok();
  if (native) {
    for (const auto& [name, value] : reported)
      enc.parameter_status(name, value);
  } else {
    for (auto name : Settings::reported()) {
      enc.parameter_status(name, session_->settings().get(name).value_or(""));
    }
  }
  auto [pid, secret] = server_.cancels().add(weak_from_this());
  pid_ = pid;
  enc.backend_key_data(pid, secret);
  ready_for_query();
  io_deadline_.reset();
  spdlog::info("client {}: user \"{}\" connected to database \"{}\" (pid {})", peer_, user,
               database, pid);
  co_return co_await flush();
}

awaitable<bool> PgClient::forward_cancel(const config::Peer& peer, int32_t pid, int32_t secret) {
  auto executor = co_await asio::this_coro::executor;
  auto sock = std::make_shared<asio::ip::tcp::socket>(executor);
  // Bounded: the peer may be down. The timer closes the socket, which ends the
  // pending connect or write.
  asio::steady_timer deadline(executor, kPeerCancelTimeout);
  deadline.async_wait([sock](boost::system::error_code ec) {
    if (ec) return;
    boost::system::error_code ignored;
    sock->close(ignored);
  });
  boost::system::error_code ec;
  auto address = asio::ip::make_address(peer.address, ec);
  if (!ec) {
    asio::ip::tcp::endpoint to(address, static_cast<uint16_t>(peer.port));
    co_await sock->async_connect(to, asio::redirect_error(use_awaitable, ec));
  }
  if (!ec) {
    // CancelRequest: length 16, code 80877102, process id, secret (big-endian).
    uint8_t msg[16];
    auto put = [&msg](size_t at, uint32_t v) {
      msg[at] = static_cast<uint8_t>(v >> 24);
      msg[at + 1] = static_cast<uint8_t>(v >> 16);
      msg[at + 2] = static_cast<uint8_t>(v >> 8);
      msg[at + 3] = static_cast<uint8_t>(v);
    };
    put(0, 16);
    put(4, pg::kCancelRequestCode);
    put(8, static_cast<uint32_t>(pid));
    put(12, static_cast<uint32_t>(secret));
    co_await asio::async_write(*sock, asio::buffer(msg), asio::redirect_error(use_awaitable, ec));
  }
  deadline.cancel();
  boost::system::error_code ignored;
  sock->close(ignored);
  co_return !ec;
}

awaitable<bool> PgClient::admin_login(const UserRecord& record) {
  admin_user_ = record.name;
  pg::Encoder enc(out_);
  enc.auth_ok();
  // What psql and drivers expect to hear at startup.
  enc.parameter_status("server_version", "15.0 (wirepool admin console)");
  enc.parameter_status("server_encoding", "UTF8");
  enc.parameter_status("client_encoding", "UTF8");
  enc.parameter_status("DateStyle", "ISO, MDY");
  enc.parameter_status("integer_datetimes", "on");
  enc.parameter_status("standard_conforming_strings", "on");
  enc.parameter_status("is_superuser", "on");
  auto [pid, secret] = server_.cancels().add(weak_from_this());
  pid_ = pid;
  enc.backend_key_data(pid, secret);
  enc.ready_for_query('I');
  io_deadline_.reset();
  spdlog::info("client {}: user \"{}\" connected to the admin console (pid {})", peer_, record.name,
               pid);
  co_return co_await flush();
}

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

bool PgClient::describe(ClientInfo& out) const {
  if (!session_ && admin_user_.empty()) return false;
  describe_connection(out, session_.get());
  out.protocol = "postgres";
  out.key = pid_;
  if (session_) {
    out.application_name = session_->settings().get("application_name").value_or("");
  } else {
    out.user = admin_user_;
    out.database = std::string(kAdminDatabase);
    out.state = "active";
  }
  return true;
}

std::string_view PgClient::database() const {
  if (session_) return session_->pool_ptr()->config().name;
  return admin_user_.empty() ? std::string_view() : kAdminDatabase;
}

awaitable<std::optional<PgClient::Credentials>> PgClient::authenticate(const std::string& user) {
  // Over TLS, SCRAM-SHA-256-PLUS binds the exchange to this TLS session
  // (tls-server-end-point), so a man in the middle cannot relay it.
  std::string binding = ssl_ && tls_ctx_ ? tls_ctx_->channel_binding_data() : std::string();
  std::vector<std::string_view> mechs;
  if (!binding.empty()) mechs.push_back(pg::scram::kMechanismPlus);
  mechs.push_back(pg::scram::kMechanism);
  pg::Encoder(out_).auth_sasl(mechs);
  if (!co_await flush()) co_return std::nullopt;

  pg::scram::ServerExchange exchange(users_->verifier_for(user), binding);
  Credentials c;
  // SASLInitialResponse
  {
    auto body = co_await read_password_message();
    if (!body) co_return std::nullopt;
    c.answer_at = std::chrono::steady_clock::now();
    auto init = pg::parse_sasl_initial(*body);
    std::string mechanism = init ? std::string(init->mechanism) : "";
    std::string data = init && init->data ? std::string(*init->data) : "";
    if (!init) {
      co_await fatal("08P01", "malformed SASLInitialResponse");
      co_return std::nullopt;
    }
    auto answer = exchange.client_first(mechanism, data);
    if (answer.outcome != pg::scram::ServerExchange::Outcome::next) {
      c.failure = std::move(answer.message);
      co_return c;
    }
    pg::Encoder(out_).auth_sasl_continue(answer.message);
    if (!co_await flush()) co_return std::nullopt;
  }
  // SASLResponse
  auto body = co_await read_password_message();
  if (!body) co_return std::nullopt;
  c.answer_at = std::chrono::steady_clock::now();
  // Failed logins from this address (and for this user) wait their turn
  // before the proof is looked at, up to the login deadline.
  if (auto wait = server_.throttle().delay(address(), user); wait.count() > 0) {
    if (io_deadline_ && c.answer_at + wait >= *io_deadline_) {
      metrics().refused(RefusedReason::throttled);
      spdlog::warn(
          "client {}: authentication refused for user \"{}\" without checking it: too many "
          "failed logins from {} (the next check in {} ms, after login_timeout)",
          peer_, user, to_string(address()),
          std::chrono::duration_cast<std::chrono::milliseconds>(wait).count());
      server_.login_failed();
      co_await wait_until(c.answer_at + kLoginFailureDelay);
      std::string msg = "password authentication failed for user \"" + user + "\"";
      co_await fatal("28P01", msg);
      co_return std::nullopt;
    }
    co_await wait_until(c.answer_at + wait);
    if (timed_out_) co_return std::nullopt;
    c.answer_at = std::chrono::steady_clock::now();
  }
  auto answer = exchange.client_final(*body);
  c.ok = answer.outcome == pg::scram::ServerExchange::Outcome::success;
  (c.ok ? c.server_final : c.failure) = std::move(answer.message);
  co_return c;
}

// ---------------------------------------------------------------------------
// The main loop

awaitable<void> PgClient::begin() {
  auto self = shared_from_this();
  bool ok = false;
  try {
    ok = co_await login();
  } catch (const std::exception& e) {
    spdlog::error("client {}: login failed: {}", peer_, e.what());
  }
  if (ok && !admin_user_.empty()) {
    co_await serve_admin();
  } else if (ok) {
    co_await serve(false);
  } else {
    co_await end();
  }
}

awaitable<void> PgClient::resume(boost::system::error_code ec) {
  auto self = shared_from_this();
  bool close = false;
  try {
    if (timed_out_) {
      timed_out_ = false;
      if (session_->in_transaction()) {
        spdlog::info("client {}: closed by idle_in_transaction_timeout", peer_);
        co_await fatal("25P03", "terminating connection due to idle-in-transaction timeout");
      } else {
        spdlog::info("client {}: closed by client_idle_timeout", peer_);
        co_await fatal("57P05", "terminating connection due to idle-session timeout");
      }
      close = true;
    } else if (terminating_ || (draining_ && !session_->in_transaction())) {
      co_await fatal("57P01", "terminating connection due to administrator command");
      close = true;
    } else if (ec && ec != asio::error::operation_aborted) {
      close = true;
    }
  } catch (const std::exception& e) {
    spdlog::error("client {}: {}", peer_, e.what());
    close = true;
  }
  if (close) {
    co_await end();
  } else {
    co_await serve(true);  // the socket said it has something
  }
}

void PgClient::go_idle(bool hot) {
  hot = hot && !ssl_;  // a TLS client waits cold (wait_idle): its buffers go now
  // A hot client keeps both buffers (no free and malloc per transaction)
  // unless a large message or answer grew them; the cold wait frees them.
  if (!hot || in_.capacity() > kReadChunk) in_.release();
  if (!hot || out_.capacity() > kReadChunk) {
    std::string().swap(out_);  // move-assigning an empty string keeps the capacity
  }
  if (ext_ && ext_->statements.empty() && ext_->portals.empty()) ext_.reset();
  if (relay_) give_relay_state(std::move(relay_));
  arm_idle_deadline();
  // Readability: everything was written, so TLS wants nothing else.
  wait_idle(shared_from_this(), hot);
  if (listening_) watch_notifications();
}

void PgClient::watch_notifications() {
  Backend* b = session_ ? session_->backend() : nullptr;
  if (!b || watching_backend_) return;
  const int fd = b->conn.impl()->socket_fd();
  if (fd < 0) return;
  watching_backend_ = true;
  b->watch(fd, loop_.io.get_executor())
      .async_wait(asio::socket_base::wait_read,
                  [self = shared_from_this()](boost::system::error_code ec) {
                    self->on_backend_readable(ec);
                  });
}

void PgClient::on_backend_readable(boost::system::error_code ec) {
  watching_backend_ = false;
  // Not idle: the client's own statement reads the backend now.
  if (ec || !idle_wait_ || !session_ || !session_->backend()) return;
  // A backend gone while idle is told to the client at its next statement.
  if (!session_->backend()->conn.alive()) return;
  forward_events();
  if (!out_.empty() && try_flush() == Flushed::gone) return;  // the idle wait sees the end
  watch_notifications();
}

bool PgClient::resume_now(boost::system::error_code ec) {
  // What resume() and serve() do for a wake-up, for the case that dominates
  // transaction pooling: relayed batches, each waiting (if at all) for a
  // backend and finding the server's answer in when it looks. Each step that
  // would wait otherwise hands the rest to a coroutine (serve_on), which picks
  // it up where this left it.
  if (ec || timed_out_ || terminating_ || draining_ || !session_ || skip_until_sync_ ||
      !session_->pool().pg_native() || session_->mode() != config::PoolMode::transaction) {
    return false;
  }
  if (!take_hot_read()) {
    auto n = read_now(kFirstRead);
    if (!n || *n == 0) return false;  // EOF, an error, or nothing after all: resume() sees to it
  }
  relay_loop(LoopEntry::fresh);
  return true;
}

void PgClient::relay_loop(LoopEntry entry) {
  auto self = shared_from_this();
  auto spawn = [&](bool mid_relay, bool flush_first) {
    asio::co_spawn(loop_.io, serve_on(self, mid_relay, flush_first), asio::detached);
  };
  // The completion handler keeps the client alive while end() runs.
  auto spawn_end = [&] { asio::co_spawn(loop_.io, end(), [self](std::exception_ptr) {}); };
  // out_ written without a wait; false when the rest went to a coroutine
  // (serve writes what is left) or the client is gone.
  auto flushed = [&] {
    switch (try_flush()) {
      case Flushed::all:
        return true;
      case Flushed::blocked:
        spawn(false, false);
        return false;
      case Flushed::gone:
        spawn_end();
        return false;
    }
    return false;
  };
  try {
    for (;; entry = LoopEntry::fresh) {
      if (entry == LoopEntry::fresh) {
        if (in_.empty()) break;
        switch (relay_check()) {
          case RelayCheck::answered:
            continue;
          case RelayCheck::no:  // the ordinary path, or the rest of a message
            spawn(false, false);
            return;
          case RelayCheck::go:
            break;
        }
        if (!session_->try_backend_now()) {
          if (!session_->can_wait_now()) {  // PAUSE, a cancel, settings: ensure_backend's
            spawn(false, false);
            return;
          }
          // What is answered goes out before the wait (a pipelining client
          // gets each answer as PostgreSQL would send it).
          if (!flushed()) return;
          if (relay_join()) return;  // queued behind another client's batch
          const bool pipelined = train_wait_begin();
          session_->wait_backend(
              loop_.io.get_executor(),
              [self](std::variant<Backend*, AcquireError> got) {
                self->on_granted(std::move(got));
              },
              pipelined);
          return;
        }
      }
      if (entry != LoopEntry::reading && !relay_start()) {
        spawn(false, false);
        return;
      }
      for (;;) {
        const RelayWait wait = relay_pump();
        if (wait == RelayWait::none) break;
        if (wait == RelayWait::flush) {
          const Flushed f = try_flush();
          if (f == Flushed::all) continue;
          if (f == Flushed::gone) {
            relay_client_left();
            if (relay_->discard) continue;
            break;
          }
          spawn(true, true);
          return;
        }
        if (wait == RelayWait::read) {
          // The server is still at it: its answer completes a read on the
          // backend's socket (relay_pump made room for it), and the loop goes
          // on from there.
          InBuffer& in = relay_->from_server;
          const size_t space = in.space();
          session_->relay_socket(relay_->fd, loop_.io.get_executor())
              .async_receive(asio::buffer(in.tail(), space),
                             [self, space](boost::system::error_code ec, size_t n) {
                               self->relay_took(n, space, ec);
                               self->relay_loop(LoopEntry::reading);
                             });
          return;
        }
        spawn(true, false);  // a write that would block: rare, and the coroutine's
        return;
      }
      if (relay_finish() == Relayed::closed) {
        spawn_end();
        return;
      }
      if (backend_gone_) {
        spawn(false, false);  // serve writes the FATAL, then ends the client
        return;
      }
    }
    if (!flushed()) return;
    if (draining_ || tls_pending()) {
      spawn(false, false);
      return;
    }
    go_idle(true);
  } catch (const std::exception& e) {
    spdlog::error("client {}: closed after an internal error: {}", peer_, e.what());
    spawn_end();
  }
}

void PgClient::on_granted(std::variant<Backend*, AcquireError> got) {
  train_wait_end();
  db::Error err;
  switch (session_->take_granted(std::move(got), err)) {
    case Session::Granted::ready:
      relay_loop(LoopEntry::granted);
      return;
    case Session::Granted::error:
      send_error(err);
      in_.consume(relay_->total);
      ready_for_query();
      relay_loop(LoopEntry::fresh);
      return;
    case Session::Granted::later:
      asio::co_spawn(loop_.io, serve_on(shared_from_this(), false, false), asio::detached);
      return;
  }
}

awaitable<void> PgClient::serve_on([[maybe_unused]] std::shared_ptr<PgClient> self, bool mid_relay,
                                   bool flush_first) {
  if (mid_relay) {
    bool closed = false;
    try {
      closed = co_await relay_rest(flush_first) == Relayed::closed;
    } catch (const std::exception& e) {
      spdlog::error("client {}: closed after an internal error: {}", peer_, e.what());
      closed = true;
    }
    if (closed) {
      co_await end();
      co_return;
    }
  }
  co_await serve(false);
}

awaitable<void> PgClient::serve(bool readable) {
  const size_t max_msg = server_.config().server.max_message_size;
  bool served = false;  // a message was handled: the idle wait starts hot
  try {
    for (;;) {
      if (backend_gone_) {  // the relay's loop saw the loss: its FATAL is in out_
        spdlog::info("client {}: disconnected: its backend session was lost", peer_);
        (void)co_await flush();
        break;
      }
      if (readable) {
        readable = false;
        // Nothing read (the bytes were gone) leaves the client idle, under its
        // idle deadline; read_more would wait under the 60 s timeout of a
        // message half read, and a client idle past client_idle_timeout
        // stayed open.
        if (!take_hot_read() && !read_now(kFirstRead)) break;  // EOF or an error: the client left
      }
      // Handle every complete message in the buffer.
      bool open = true;
      for (;;) {
        if (session_ && !skip_until_sync_ && !in_.empty() && session_->pool().pg_native() &&
            session_->mode() == config::PoolMode::transaction) {
          // PostgreSQL backends in transaction mode: batches the relay takes
          // go to the server as bytes (pg_relay.cpp).
          served = true;
          auto r = co_await relay();
          if (r == Relayed::closed) {
            open = false;
            break;
          }
          if (backend_gone_) break;  // flushed below, then the client ends
          if (r == Relayed::yes) continue;
        }
        auto d = pg::decode_frontend(in_.view(), max_msg);
        if (d.status == pg::DecodeStatus::need_more) break;
        if (d.status == pg::DecodeStatus::error) {
          spdlog::warn("client {}: protocol error: {}", peer_, d.error);
          co_await fatal("08P01", d.error);
          open = false;
          break;
        }
        unconsumed_ = d.consumed;
        served = true;
        open = co_await handle(d.message);
        in_.consume(unconsumed_);  // zero if the handler consumed it (COPY)
        unconsumed_ = 0;
        if (!open || backend_gone_) break;
        // An answer is complete and more messages wait: it goes out before
        // they run, so a slow one after it does not hold it back.
        if (answered_ && !in_.empty() && !out_.empty() && !co_await flush()) {
          open = false;
          break;
        }
      }
      if (!open) break;
      if (!out_.empty() && !co_await flush()) break;
      if (backend_gone_) {
        spdlog::info("client {}: disconnected: its backend session was lost", peer_);
        break;
      }
      if (draining_ && in_.empty() && !session_->in_transaction()) {
        co_await fatal("57P01", "terminating connection due to administrator command");
        break;
      }
      if (in_.empty()) {
        // Between messages. Wait for readability outside any coroutine: an
        // idle client holds no frame, no buffer and no timer, only this small
        // wait operation. (No read first: a client that waits for its answer
        // has sent nothing yet, and the wait sees data that is already there.)
        if (tls_pending()) {
          // decrypted bytes buffered in TLS: the socket would not say so
          auto n = read_now();
          if (!n) break;
          if (*n > 0) continue;  // else a partial record: wait for the rest
        }
        go_idle(served);
        co_return;
      }
      // Part of a message is here: wait for the rest (bounded by the I/O timeout).
      auto len = pg::peek_length(in_.view());
      size_t want = len ? std::min<size_t>(*len + 1, max_msg + 1) : 5;
      if (!co_await read_more(want > in_.size() ? want - in_.size() : 1)) {
        if (timed_out_) spdlog::warn("client {}: closed: stalled mid-message", peer_);
        break;
      }
    }
  } catch (const ClientGone&) {
    spdlog::info("client {}: connection lost in the middle of a result", peer_);
  } catch (const std::exception& e) {
    spdlog::error("client {}: closed after an internal error: {}", peer_, e.what());
  }
  co_await end();
}

void PgClient::arm_idle_deadline() {
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

awaitable<void> PgClient::end() {
  // Orderly teardown: close readers and give the backend back.
  if (session_) {
    try {
      co_await close_portals();
      co_await session_->finish();
    } catch (const std::exception& e) {
      spdlog::error("client {}: teardown: {}", peer_, e.what());
    }
    spdlog::debug("client {}: disconnected", peer_);
  }
  if (pid_) {
    server_.cancels().remove(pid_);
    pid_ = 0;
  }
  close_transport();
}

awaitable<bool> PgClient::handle(const pg::FrontendMessage& msg) {
  bool keep = true;
  // After an extended-query error PostgreSQL ignores every message until Sync.
  if (skip_until_sync_ &&
      (std::holds_alternative<pg::Query>(msg) || std::holds_alternative<pg::FunctionCall>(msg))) {
    co_return true;
  }
  co_await std::visit(
      overloaded{
          [&](const pg::Query& m) -> awaitable<void> { co_await simple_query(m.sql); },
          [&](const pg::Parse& m) -> awaitable<void> { co_await on_parse(m); },
          [&](const pg::Bind& m) -> awaitable<void> { co_await on_bind(m); },
          [&](const pg::Describe& m) -> awaitable<void> { co_await on_describe(m); },
          [&](const pg::Execute& m) -> awaitable<void> { co_await on_execute(m); },
          [&](const pg::Close& m) -> awaitable<void> { co_await on_close(m); },
          [&](const pg::Sync&) -> awaitable<void> { co_await on_sync(); },
          [&](const pg::Flush&) -> awaitable<void> {
            if (!co_await flush()) keep = false;
          },
          [&](const pg::Terminate&) -> awaitable<void> {
            keep = false;
            co_return;
          },
          [&](const pg::PasswordMessage&) -> awaitable<void> {
            spdlog::warn("client {}: password message after authentication", peer_);
            co_await fatal("08P01", "unexpected password message");
            keep = false;
          },
          // COPY messages outside COPY are ignored, as PostgreSQL does.
          [&](const pg::CopyData&) -> awaitable<void> { co_return; },
          [&](const pg::CopyDone&) -> awaitable<void> { co_return; },
          [&](const pg::CopyFail&) -> awaitable<void> { co_return; },
          [&](const pg::FunctionCall&) -> awaitable<void> {
            send_error("0A000", "the function call protocol is not supported by wirepool");
            ready_for_query();
            co_return;
          },
      },
      msg);
  co_return keep;
}

// ---------------------------------------------------------------------------
// Simple query

awaitable<void> PgClient::simple_query(std::string_view text) {
  // As in PostgreSQL, a simple query drops the unnamed portal; named ones
  // stay (their transaction may go on).
  if (ext_) {
    if (auto it = ext_->portals.find(""); it != ext_->portals.end()) {
      if (it->second->open && it->second->open->rows.is_open()) {
        auto* streamer = it->second->open.get();
        co_await session_->run([streamer](Backend&) { return streamer->rows.close(); });
      }
      ext_->portals.erase(it);
    }
  }
  co_await park_portals();
  if (session_->pool().pg_native()) {
    co_await native_simple_query(text);
    co_return;
  }
  auto dialect = session_->pool().dialect();
  auto stmts = sql::split_statements(text, dialect);
  session_->statement_begin();
  bool failed = false;
  if (stmts.empty()) {
    pg::Encoder(out_).empty_query_response();
  } else if (stmts.size() == 1) {
    failed = !co_await simple_statement(
        stmts[0], classify(stmts[0], dialect, session_->pool().backend_keeps_settings()));
  } else {
    // Several statements outside a transaction run as one implicit transaction,
    // as in PostgreSQL: an error rolls back the ones before it. Statements that
    // control transactions themselves opt out.
    std::vector<Classified> cls;
    bool controls_tx = false;
    for (auto s : stmts) {
      cls.push_back(classify(s, dialect, session_->pool().backend_keeps_settings()));
      controls_tx = controls_tx || is_transaction_control(cls.back());
    }
    if (!controls_tx && !session_->in_transaction() &&
        session_->mode() != config::PoolMode::statement) {
      auto st = co_await session_->begin_implicit();
      if (!st.ok()) {
        co_await backend_error(st.take_error());
        stmts.clear();
      }
    }
    for (size_t i = 0; i < stmts.size(); ++i) {
      if (!co_await simple_statement(stmts[i], cls[i])) {
        failed = true;
        break;
      }
    }
  }
  // A simple query ends the implicit transaction it ran in, its own or that
  // of extended-query messages before it, as a Sync would.
  auto ended = co_await session_->end_implicit(failed);
  if (!ended.ok() && !failed) co_await backend_error(ended.take_error());
  session_->statement_end();
  session_->sync_tx_state();
  session_->release_if_idle(portals_open());
  send_parameter_changes();
  ready_for_query();
}

awaitable<void> PgClient::native_simple_query(std::string_view text) {
  // PostgreSQL to PostgreSQL: the text goes through whole (one round trip; the
  // backend keeps its own implicit transaction, SET, SHOW and the rest); the
  // session layer only looks at the statements to keep what follows the client.
  auto stmts =
      sql::split_statements(text, sql::Dialect::postgres, session_->settings().backslash_quotes());
  session_->statement_begin();
  std::vector<Classified> cls;
  for (auto st : stmts)
    cls.push_back(classify(st, sql::Dialect::postgres, true));
  bool session_level = false;  // DEALLOCATE, DISCARD ALL
  bool listens = false;
  for (size_t i = 0; i < stmts.size(); ++i) {
    auto k = cls[i].kind;
    session_level = session_level || k == StatementKind::deallocate || k == StatementKind::discard;
    auto w = sql::leading_words(stmts[i], sql::Dialect::postgres, 1);
    listens = listens || (!w.empty() && w[0] == "LISTEN");
  }
  bool begins = false;
  for (const auto& c : cls)
    begins = begins || c.kind == StatementKind::begin;
  listening_ = listening_ || (listens && session_->mode() == config::PoolMode::session);
  if (begins && session_->implicit()) session_->make_explicit();
  bool resync = false;  // a RESET put a startup value back in the client's settings
  bool failed = false;
  if (stmts.empty()) {
    pg::Encoder(out_).empty_query_response();
  } else if (begins && session_->mode() == config::PoolMode::statement) {
    send_error("0A000", "transaction blocks are not allowed in statement pool mode (database \"" +
                            session_->pool().config().name + "\")");
  } else if (listens && session_->mode() != config::PoolMode::session) {
    // A notification would reach whichever client holds the backend later.
    send_error("0A000", "LISTEN needs a backend of its own: database \"" +
                            session_->pool().config().name + "\" is pooled in " +
                            std::string(config::to_string(session_->mode())) +
                            " mode; use a database entry in session mode");
  } else if (session_level && stmts.size() > 1) {
    send_error("0A000",
               "DEALLOCATE and DISCARD ALL must be sent on their own through wirepool, not "
               "with other statements in one query");
  } else if (session_level) {
    (void)co_await session_statement(stmts[0], cls[0], true);
  } else if (stmts.size() == 1 && is_copy_with_client(stmts[0])) {
    if (auto refused = co_await session_->ensure_backend()) {
      send_error(*refused);
    } else {
      std::string sql(stmts[0]);  // the message bytes are released before COPY data arrives
      co_await copy(sql);
    }
  } else if (auto refused = co_await session_->ensure_backend()) {
    send_error(*refused);
  } else {
    Streamer s;
    s.native = true;
    s.multi = true;
    db::Error err;
    std::string* out = &out_;
    db::QueryOptions options;
    options.native = true;
    auto first = co_await session_->run([&](Backend& b) -> Fetch {
      if (s.phase == Streamer::Phase::start) {
        auto r = b.conn.query(text, {}, options);
        if (db::is_would_block(r)) return Fetch::wait;
        if (!r.ok()) {
          err = r.take_error();
          return Fetch::error;
        }
        s.rows = std::move(r.value());
        begin_result(s, {}, *out, true);
        s.phase = Streamer::Phase::rows;
      }
      return fetch_rows(s, *out, 0, err);
    });
    Fetch f = co_await stream(s, 0, err, first);
    // SET / RESET that ran: read back what the backend holds once its
    // transaction is over.
    std::vector<std::string> touched;
    for (size_t i = 0; i < s.tags.size() && i < stmts.size(); ++i) {
      if (s.tags[i] != "SET" && s.tags[i] != "RESET") continue;
      if (auto parsed = parse_setting_command(stmts[i])) {
        if (auto* cmd = std::get_if<SettingCommand>(&*parsed)) {
          if (auto* set = std::get_if<SetCommand>(cmd); set && !set->local) {
            touched.push_back(set->name);
          } else if (auto* reset = std::get_if<ResetCommand>(cmd)) {
            if (reset->name == "all") {
              session_->settings().reset_all();
              // The backend reset to its own defaults: the client's startup
              // settings must go back on it.
              session_->backend()->settings_unknown = true;
            } else if (session_->tx_state() == db::TxState::idle) {
              // RESET returns to the client's startup value, as PostgreSQL
              // keeps it; the backend got that value as a SET and now holds
              // its own default: the value goes back on it below.
              (void)session_->settings().reset(reset->name);
              std::erase_if(session_->backend()->applied_settings,
                            [&](const auto& kv) { return kv.first == reset->name; });
              resync = true;
            } else {
              touched.push_back(reset->name);
            }
          }
        }
      }
    }
    if (session_->mode() != config::PoolMode::session) {
      // What the statements did beyond SET: settings to follow, or state only
      // a reset undoes.
      auto effects = sql::session_effects(text, session_->settings().backslash_quotes());
      touched.insert(touched.end(), effects.settings.begin(), effects.settings.end());
      if (effects.opaque) session_->mark_dirty();
    }
    if (!touched.empty()) session_->note_set(std::move(touched));
    failed = f == Fetch::error;
    if (failed) co_await backend_error(std::move(err));
    forward_events();
  }
  // Extended-query messages before this query opened an implicit transaction:
  // the query ends it, as a Sync would.
  auto ended = co_await session_->end_implicit(failed);
  if (!ended.ok() && !failed) co_await backend_error(ended.take_error());
  if (session_->backend()) co_await session_->settle_settings();
  session_->statement_end();
  session_->sync_tx_state();
  if (session_->backend() && (session_->backend()->settings_unknown || resync) &&
      !session_->in_transaction()) {
    (void)co_await session_->sync_settings();
  }
  session_->release_if_idle(portals_open());
  forward_events();
  ready_for_query();
}

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

void PgClient::forward_events() {
  auto ev = session_->take_events();
  if (!ev) return;
  pg::Encoder enc(out_);
  for (const auto& n : ev->notices) {
    pg::ErrorFields f;
    f.severity = n.severity.empty() ? "NOTICE" : std::string_view(n.severity);
    f.sqlstate = n.sqlstate.size() == 5 ? std::string_view(n.sqlstate) : "00000";
    f.message = n.message;
    f.detail = n.detail;
    f.hint = n.hint;
    f.more = n.fields;
    enc.notice_response(f);
  }
  for (const auto& p : ev->parameters)
    enc.parameter_status(p.name, p.value);
  for (const auto& n : ev->notifications) {
    enc.notification_response(n.pid, n.channel, n.payload);
  }
}

awaitable<bool> PgClient::simple_statement(std::string_view stmt, const Classified& cls) {
  if (cls.kind != StatementKind::backend) {
    co_return co_await session_statement(stmt, cls, true);
  }
  if (auto err = co_await session_->ensure_backend()) {
    send_error(*err);
    co_return false;
  }
  Streamer s;
  db::Error err;
  std::string* out = &out_;
  const db::QueryOptions text_results;
  auto first = co_await session_->run([&](Backend& b) -> Fetch {
    if (s.phase == Streamer::Phase::start) {
      auto r = b.conn.query(stmt, {}, text_results);
      if (db::is_would_block(r)) return Fetch::wait;
      if (!r.ok()) {
        err = r.take_error();
        return Fetch::error;
      }
      s.rows = std::move(r.value());
      begin_result(s, {}, *out, true);
      s.phase = Streamer::Phase::rows;
    }
    // One hop to the executor for a small result: query and rows together.
    return fetch_rows(s, *out, 0, err);
  });
  Fetch f = co_await stream(s, 0, err, first);
  if (f == Fetch::error) {
    co_await backend_error(std::move(err));
    co_return false;
  }
  pg::Encoder(out_).command_complete(command_tag(s.info, cls.verb, s.has_columns, s.sent));
  co_return true;
}

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

awaitable<bool> PgClient::session_statement(std::string_view stmt, const Classified& cls,
                                            bool describe_rows) {
  pg::Encoder enc(out_);
  switch (cls.kind) {
    case StatementKind::begin: {
      if (session_->implicit()) {
        session_->make_explicit();  // as PostgreSQL: silently, with what ran before it
      } else if (session_->in_transaction()) {
        send_notice("25001", "there is already a transaction in progress");
      } else {
        auto st = co_await session_->begin(stmt);
        if (!st.ok()) {
          co_await backend_error(st.take_error());
          co_return false;
        }
      }
      enc.command_complete(cls.verb == "START TRANSACTION" ? "START TRANSACTION" : "BEGIN");
      co_return true;
    }
    case StatementKind::commit:
    case StatementKind::rollback: {
      bool commit = cls.kind == StatementKind::commit;
      if (session_->implicit()) {
        // PostgreSQL warns, then ends the block's transaction all the same.
        send_notice("25P01", "there is no transaction in progress");
        session_->make_explicit();
      }
      if (!session_->in_transaction()) {
        send_notice("25P01", "there is no transaction in progress");
      } else {
        co_await close_portals();
        bool failed_tx = session_->tx_state() == db::TxState::failed;
        db::Status st;  // if/else: see above (GCC 12 and co_await in ?:)
        if (commit) {
          st = co_await session_->commit();
        } else {
          st = co_await session_->rollback();
        }
        session_->sync_tx_state();
        if (!st.ok()) {
          co_await backend_error(st.take_error());
          co_return false;
        }
        if (commit && failed_tx) {
          enc.command_complete("ROLLBACK");
          co_return true;
        }
      }
      enc.command_complete(commit ? "COMMIT" : "ROLLBACK");
      co_return true;
    }
    case StatementKind::setting: {
      auto parsed = parse_setting_command(stmt);
      if (!parsed) {
        send_error("42601", "syntax error");
        co_return false;
      }
      if (auto* e = std::get_if<SettingError>(&*parsed)) {
        send_error(e->sqlstate, e->message);
        co_return false;
      }
      auto& cmd = std::get<SettingCommand>(*parsed);
      if (auto* set = std::get_if<SetCommand>(&cmd);
          set && (set->name == "role" || set->name == "session_authorization")) {
        // This backend has no roles to switch to.
        send_error("0A000", set->name == "role"
                                ? "SET ROLE is not supported by wirepool"
                                : "SET SESSION AUTHORIZATION is not supported by wirepool");
        co_return false;
      }
      auto& settings = session_->settings();
      std::optional<SettingError> err;
      std::string tag;
      std::visit(overloaded{
                     [&](const SetCommand& c) {
                       tag = "SET";
                       if (c.local && !session_->in_transaction()) {
                         // PostgreSQL: a warning, and no effect.
                         send_notice("25P01", "SET LOCAL can only be used in transaction blocks");
                       } else if (c.local) {
                         err = settings.set_local(c.name, c.value.value_or(""));
                         if (!c.value) err = settings.reset(c.name);
                       } else {
                         err = c.value ? settings.set(c.name, *c.value) : settings.reset(c.name);
                       }
                     },
                     [&](const ResetCommand& c) {
                       if (c.name == "all")
                         settings.reset_all();
                       else
                         err = settings.reset(c.name);
                       tag = "RESET";
                     },
                     [&](const ShowCommand& c) {
                       tag = "SHOW";
                       std::vector<std::pair<std::string, std::string>> rows;
                       if (c.name == "all") {
                         rows = settings.all();
                       } else if (auto v = settings.get(c.name)) {
                         rows.emplace_back(c.name, *v);
                       } else {
                         err = SettingError{
                             "42704", "unrecognized configuration parameter \"" + c.name + "\""};
                         return;
                       }
                       std::vector<pg::FieldDescription> fields;
                       if (c.name == "all") {
                         fields.resize(3);
                         fields[0].name = "name";
                         fields[1].name = "setting";
                         fields[2].name = "description";
                       } else {
                         fields.resize(1);
                         fields[0].name = c.name;
                       }
                       if (describe_rows) enc.row_description(fields);
                       for (auto& [name, value] : rows) {
                         enc.begin_data_row(static_cast<int16_t>(fields.size()));
                         if (c.name == "all") {
                           enc.field(name);
                           enc.field(value);
                           enc.field("");
                         } else {
                           enc.field(value);
                         }
                         enc.end_data_row();
                       }
                     },
                     [&](const IgnoredSet&) { tag = "SET"; },
                 },
                 cmd);
      if (err) {
        send_error(err->sqlstate, err->message);
        co_return false;
      }
      enc.command_complete(tag);
      co_return true;
    }
    case StatementKind::discard: {
      auto words = sql::leading_words(stmt, session_->pool().dialect(), 2);
      std::string what = words.size() > 1 ? words[1] : "";
      if (what == "ALL") {
        if (session_->in_transaction()) {
          send_error("25001", "DISCARD ALL cannot run inside a transaction block");
          co_return false;
        }
        session_->settings().reset_all();
        co_await close_portals();
        ext().portals.clear();
        ext().statements.clear();
        if (session_->pool().pg_native() && session_->mode() == config::PoolMode::session &&
            session_->backend()) {
          // The backend is this client's alone: it gets the DISCARD ALL too
          // (temporary tables, advisory locks, LISTEN), then the client's
          // startup settings back.
          Backend* b = session_->backend();
          auto st = co_await session_->execute_text("DISCARD ALL");
          b->statements.forget();
          b->applied_settings.clear();
          b->applied_session = 0;
          if (st.ok()) st = co_await session_->sync_settings();
          if (!st.ok()) {
            co_await backend_error(st.take_error());
            co_return false;
          }
        }
      } else if (what != "PLANS" && what != "SEQUENCES" && what != "TEMP" && what != "TEMPORARY") {
        send_error("42601", "syntax error at or near \"" + what + "\"");
        co_return false;
      }
      enc.command_complete(what == "TEMPORARY" ? "DISCARD TEMP" : "DISCARD " + what);
      co_return true;
    }
    case StatementKind::deallocate: {
      // DEALLOCATE [PREPARE] { name | ALL }; the name keeps its case and quotes.
      std::string_view rest = stmt;
      auto next_word = [&rest]() {
        while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front()))) {
          rest.remove_prefix(1);
        }
        size_t n = 0;
        while (n < rest.size() && !std::isspace(static_cast<unsigned char>(rest[n])) &&
               rest[n] != ';') {
          ++n;
        }
        std::string_view w = rest.substr(0, n);
        rest.remove_prefix(n);
        return w;
      };
      auto iequals = [](std::string_view a, std::string_view b) {
        return a.size() == b.size() &&
               std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
                 return std::toupper(static_cast<unsigned char>(x)) == y;
               });
      };
      next_word();  // DEALLOCATE
      std::string_view name = next_word();
      if (iequals(name, "PREPARE")) name = next_word();
      if (iequals(name, "ALL")) {
        ext().statements.clear();
      } else {
        std::string n(name);
        if (n.size() >= 2 && n.front() == '"' && n.back() == '"') {
          n = n.substr(1, n.size() - 2);
        } else {
          std::transform(n.begin(), n.end(), n.begin(),
                         [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        }
        if (ext().statements.erase(n) == 0) {
          send_error("26000", "prepared statement \"" + n + "\" does not exist");
          co_return false;
        }
      }
      enc.command_complete(iequals(name, "ALL") ? "DEALLOCATE ALL" : "DEALLOCATE");
      co_return true;
    }
    case StatementKind::listen: {
      send_error("0A000", "LISTEN/NOTIFY is not supported by the " +
                              session_->pool().config().driver + " backend of database \"" +
                              session_->pool().config().name + "\"");
      co_return false;
    }
    case StatementKind::backend:
      break;
  }
  co_return false;
}

// ---------------------------------------------------------------------------
// Extended query

std::string PgClient::cache_key(const std::string& sql, const std::vector<uint32_t>& oids) const {
  std::string key = sql;
  key += '\0';
  for (auto o : oids) {
    key += std::to_string(o);
    key += ',';
  }
  return key;
}

awaitable<void> PgClient::on_parse(const pg::Parse& m) {
  if (skip_until_sync_) co_return;
  std::string name(m.name);
  if (!name.empty() && ext().statements.count(name)) {
    send_error("42P05", "prepared statement \"" + name + "\" already exists");
    skip_until_sync_ = true;
    co_return;
  }
  auto dialect = session_->pool().dialect();
  auto pieces = sql::split_statements(
      m.sql, dialect, dialect == sql::Dialect::postgres && session_->settings().backslash_quotes());
  if (pieces.size() > 1) {
    send_error("42601", "cannot insert multiple commands into a prepared statement");
    skip_until_sync_ = true;
    co_return;
  }
  auto p = std::make_shared<Prepared>();
  p->sql = pieces.empty() ? std::string() : std::string(pieces[0]);
  p->param_oids = m.param_types;
  p->blank = pieces.empty();
  p->cls = classify(p->sql, dialect, session_->pool().backend_keeps_settings());
  p->key = cache_key(p->sql, p->param_oids);
  p->nparams = p->param_oids.size();
  if (session_->pool().pg_native() && session_->mode() != config::PoolMode::session) {
    p->effects = sql::session_effects(p->sql, session_->settings().backslash_quotes());
  } else if (session_->pool().pg_native()) {
    auto w = sql::leading_words(p->sql, sql::Dialect::postgres, 1);
    listening_ = listening_ || (!w.empty() && w[0] == "LISTEN");
  }
  if (p->cls.kind == StatementKind::setting) {
    if (auto parsed = parse_setting_command(p->sql)) {
      if (auto* cmd = std::get_if<SettingCommand>(&*parsed)) {
        if (auto* show = std::get_if<ShowCommand>(cmd)) p->show_name = show->name;
      }
    }
  }
  // Prepared now, so errors come back at Parse as in PostgreSQL, except for a
  // Parse followed only by Sync while the session holds no backend: that is a
  // client waiting for ParseComplete synchronously (libpq's PQprepare, as
  // pgbench -M prepared does). If its other connections hold every backend in
  // open transactions, waiting for one would deadlock with them until
  // acquire_timeout; so it is answered at once and prepared on first use.
  p->described = !to_backend(p->cls) || p->blank;
  bool defer = false;
  if (!p->described && !session_->backend() && next_is_sync()) {
    (void)session_->try_backend_now();  // an idle backend: prepared now, errors at Parse
    defer = !session_->backend();
  }
  if (!p->described && !defer && !co_await describe(*p)) co_return;
  ext().statements[name] = std::move(p);
  pg::Encoder(out_).parse_complete();
}

awaitable<bool> PgClient::describe(Prepared& p) {
  if (p.described) co_return true;
  co_await park_portals();
  if (auto err = co_await session_->ensure_backend()) {
    send_error(*err);
    skip_until_sync_ = true;
    co_return false;
  }
  // A PostgreSQL backend takes the client's parameter types as they are;
  // other backends type parameters themselves.
  std::vector<db::ParamInfo> hints;
  if (session_->pool().pg_native()) {
    for (uint32_t oid : p.param_oids) {
      db::ParamInfo h;
      h.native.pg_oid = oid;
      hints.push_back(h);
    }
  }
  auto stmt = co_await session_->backend_statement(p.key, p.sql, hints);
  if (!stmt.ok()) {
    if (stmt.error().code != db::Errc::connection) {
      // A statement whose Parse was answered before it was prepared: the
      // server refused it, so, as in PostgreSQL, it does not exist.
      std::erase_if(ext().statements, [&p](const auto& e) { return e.second.get() == &p; });
    }
    co_await backend_error(stmt.take_error());
    skip_until_sync_ = true;
    co_return false;
  }
  auto params = stmt.value()->params();
  p.backend_params.assign(params.begin(), params.end());
  p.nparams = std::max(p.nparams, params.size());
  auto cols = stmt.value()->columns();
  p.columns.assign(cols.begin(), cols.end());
  p.described = true;
  co_return true;
}

awaitable<void> PgClient::on_bind(const pg::Bind& m) {
  if (skip_until_sync_) co_return;
  auto fail = [this](std::string_view state, std::string msg) {
    send_error(state, msg);
    skip_until_sync_ = true;
  };
  auto it = ext().statements.find(std::string(m.statement));
  if (it == ext().statements.end()) {
    fail("26000", "prepared statement \"" + std::string(m.statement) + "\" does not exist");
    co_return;
  }
  auto p = it->second;  // shared: kept even if the client closes it meanwhile
  if (!co_await describe(*p)) co_return;
  std::string portal_name(m.portal);
  if (auto existing = ext().portals.find(portal_name); existing != ext().portals.end()) {
    if (!portal_name.empty()) {
      fail("42P03", "portal \"" + portal_name + "\" already exists");
      co_return;
    }
    if (existing->second->open && existing->second->open->rows.is_open()) {
      auto* streamer = existing->second->open.get();
      co_await session_->run([streamer](Backend&) { return streamer->rows.close(); });
    }
    ext().portals.erase(existing);
  }
  auto portal = std::make_unique<Portal>();
  portal->stmt = p;
  portal->result_formats = m.result_formats;
  if (auto e = bind_params(m, *p, portal->params)) {
    fail(e->sqlstate, e->message);
    co_return;
  }
  if (portal_name.empty() && !batch_refused_ && session_->pool().param_arrays() &&
      !session_->pool().pg_native()) {
    // `m` may point at bytes a read for the batch moves: nothing below uses it.
    const std::string statement_name(m.statement);
    const bool batched = co_await try_batch(p, statement_name, *portal);
    if (batched) co_return;
  }
  ext().portals[portal_name] = std::move(portal);
  pg::Encoder(out_).bind_complete();
}

std::optional<db::Error> PgClient::bind_params(const pg::Bind& m, const Prepared& p,
                                               std::vector<db::Param>& out) const {
  auto error = [](std::string state, std::string msg) {
    db::Error e;
    e.sqlstate = std::move(state);
    e.message = std::move(msg);
    return e;
  };
  if (m.params.size() != p.nparams) {
    return error("08P01", "bind message supplies " + std::to_string(m.params.size()) +
                              " parameters, but prepared statement \"" + std::string(m.statement) +
                              "\" requires " + std::to_string(p.nparams));
  }
  if (m.param_formats.size() > 1 && m.param_formats.size() != m.params.size()) {
    return error("08P01", "bind message has " + std::to_string(m.param_formats.size()) +
                              " parameter formats but " + std::to_string(m.params.size()) +
                              " parameters");
  }
  out.clear();
  out.reserve(m.params.size());
  const bool native = session_->pool().pg_native();
  for (size_t i = 0; i < m.params.size(); ++i) {
    uint32_t oid = i < p.param_oids.size() ? p.param_oids[i] : 0;
    int16_t fmt = m.param_formats.empty()       ? 0
                  : m.param_formats.size() == 1 ? m.param_formats[0]
                                                : m.param_formats[i];
    if (native) {
      // PostgreSQL to PostgreSQL: the client's bytes, typed as the server chose.
      db::Param param;
      if (oid == 0 && i < p.backend_params.size()) oid = p.backend_params[i].native.pg_oid;
      param.pg_oid = oid;
      param.pg_format = fmt;
      if (m.params[i]) param.value = db::Value::bytes(std::string(*m.params[i]));
      out.push_back(std::move(param));
      continue;
    }
    auto decoded = pg::decode_param(m.params[i], oid, fmt);
    if (!decoded.ok()) {
      const auto& e = decoded.error();
      return error(e.sqlstate, e.message + " (parameter $" + std::to_string(i + 1) + ")");
    }
    db::Param param;
    param.value = std::move(decoded.value().value);
    param.untyped = decoded.value().untyped;
    out.push_back(std::move(param));
  }
  return std::nullopt;
}

namespace {

/// At most this many executions go in one batch; more make several batches.
constexpr size_t kMaxBatchRows = 1000;
/// Reading ahead for a batch stops when this much input is buffered.
constexpr size_t kMaxBatchBytes = 8 * 1024 * 1024;

bool is_cancel(const db::Error& e) {
  return e.sqlstate == "57014";
}

}  // namespace

awaitable<bool> PgClient::try_batch(const std::shared_ptr<Prepared>& p,
                                    const std::string& statement, Portal& first) {
  const Prepared& st = *p;
  const std::string& verb = st.cls.verb;
  if (st.blank || !to_backend(st.cls) || !st.columns.empty() || !st.show_name.empty() ||
      (verb != "INSERT" && verb != "UPDATE" && verb != "DELETE") ||
      session_->mode() == config::PoolMode::statement ||
      session_->tx_state() == db::TxState::failed) {
    co_return false;
  }
  // A batch reports each execution's count: from the driver, or, for a
  // statement that inserts one row each time, from the total.
  const bool counts = session_->pool().batch_row_counts();
  if (!counts && !sql::inserts_one_row(st.sql, session_->pool().dialect())) co_return false;

  // The groups already received: [Bind] [Describe portal] Execute, the first
  // Bind being the one in hand. Reads what the socket has when a group is cut.
  const size_t max_msg = server_.config().server.max_message_size;
  std::vector<std::vector<db::Param>> rows;
  std::vector<bool> described;
  size_t end = unconsumed_;  // past the last complete group
  enum class Group : uint8_t { complete, other, cut };
  auto parse = [&](size_t pos, std::vector<db::Param>& params, bool& desc, size_t& after) {
    auto view = in_.view();
    auto next = [&](size_t at) { return pg::decode_frontend(view.subspan(at), max_msg); };
    size_t q = pos;
    if (!rows.empty()) {
      auto d = next(q);
      if (d.status == pg::DecodeStatus::need_more) return Group::cut;
      auto* b = d.status == pg::DecodeStatus::ok ? std::get_if<pg::Bind>(&d.message) : nullptr;
      if (b == nullptr || !b->portal.empty()) return Group::other;
      if (b->statement != statement) {
        // Another name for the same text and types (pgbench -M prepared
        // prepares each line of a pipeline under its own name).
        auto it = ext().statements.find(std::string(b->statement));
        if (it == ext().statements.end() || it->second->key != st.key || !it->second->described) {
          return Group::other;
        }
      }
      // A Bind that fails goes the normal way, which reports it.
      if (bind_params(*b, st, params)) return Group::other;
      q += d.consumed;
    }
    auto d = next(q);
    if (d.status == pg::DecodeStatus::need_more) return Group::cut;
    if (d.status != pg::DecodeStatus::ok) return Group::other;
    desc = false;
    if (auto* ds = std::get_if<pg::Describe>(&d.message);
        ds && ds->kind == 'P' && ds->name.empty()) {
      desc = true;
      q += d.consumed;
      d = next(q);
      if (d.status == pg::DecodeStatus::need_more) return Group::cut;
      if (d.status != pg::DecodeStatus::ok) return Group::other;
    }
    auto* ex = std::get_if<pg::Execute>(&d.message);
    if (ex == nullptr || !ex->portal.empty()) return Group::other;
    after = q + d.consumed;
    return Group::complete;
  };
  while (rows.size() < kMaxBatchRows) {
    std::vector<db::Param> params;
    bool desc = false;
    size_t after = 0;
    Group g = parse(end, params, desc, after);
    if (g == Group::cut && in_.size() < kMaxBatchBytes) {
      auto n = read_now(64 * 1024);  // what the client has sent meanwhile, without waiting
      if (n && *n > 0) continue;
    }
    if (g != Group::complete) break;
    rows.push_back(std::move(params));  // the first stays empty until a second comes
    described.push_back(desc);
    end = after;
  }
  if (rows.size() < 2) co_return false;
  rows[0] = first.params;

  session_->statement_begin();
  // Going the normal way after statement_begin: it counts the statement again.
  auto give_up = [this] {
    session_->statement_end();
    session_->pool().metrics().statements.fetch_sub(1, std::memory_order_relaxed);
  };
  if (auto e = co_await session_->ensure_backend()) {
    give_up();
    co_return false;  // the normal way reports it
  }
  auto stmt = co_await session_->backend_statement(st.key, st.sql, {});
  if (!stmt.ok() || !session_->backend()->caps.param_arrays) {
    give_up();
    co_return false;  // the normal way reports the error
  }
  // The executions before Sync are one transaction (enter_block): outside a
  // transaction the batch opens the block's implicit one, which Sync ends.
  // A failed batch leaves nothing behind in a transaction (the driver's
  // promise, db.hpp); its executions then run again one at a time, which
  // reports the failing one as an unbatched pipeline would.
  if (!session_->in_transaction()) {
    db::Status opened = co_await session_->begin_implicit();
    if (!opened.ok()) {
      session_->sync_tx_state();
      give_up();
      co_return false;
    }
  }
  db::Statement* statement_handle = stmt.value();
  std::vector<db::Params> spans(rows.begin(), rows.end());
  auto job = [&](Backend&) { return statement_handle->execute_batch(spans); };
  auto result = co_await session_->run(job);
  std::vector<int64_t> affected;
  if (result.ok()) {
    affected = std::move(result.value().affected);
    if (affected.size() != rows.size()) {
      affected.clear();
      // One row each (inserts_one_row): the total must say so.
      if (result.value().total == static_cast<int64_t>(rows.size())) {
        affected.assign(rows.size(), 1);
      }
    }
  }
  const bool kept = !affected.empty();
  if (!kept) batch_refused_ = true;  // until Sync: the rest goes one at a time
  session_->sync_tx_state();
  // Cancelled (CancelRequest, statement_timeout), the backend gone, or a
  // transaction the failure aborted (psqlODBC set to roll back the
  // transaction on an error): not run again; the error goes to the first
  // execution.
  const bool answer_now =
      !kept && !result.ok() &&
      (is_cancel(result.error()) || result.error().code == db::Errc::connection ||
       session_->tx_state() == db::TxState::failed);
  if (!kept && !answer_now) {
    spdlog::debug("client {}: batch of {} run again one by one: {}", peer_, rows.size(),
                  result.ok() ? "counts do not add up" : result.error().message);
    give_up();
    co_return false;
  }
  session_->statement_end();
  pg::Encoder enc(out_);
  if (answer_now) {
    enc.bind_complete();
    if (described[0]) enc.no_data();
    co_await backend_error(result.take_error());
    skip_until_sync_ = true;
    co_return true;
  }
  for (size_t k = 0; k < rows.size(); ++k) {
    enc.bind_complete();
    if (described[k]) enc.no_data();
    db::CommandInfo ci;
    ci.affected = affected[k];
    enc.command_complete(command_tag(ci, verb, false, 0));
  }
  auto& metrics = session_->pool().metrics();
  metrics.batches.fetch_add(1, std::memory_order_relaxed);
  metrics.batched.fetch_add(rows.size(), std::memory_order_relaxed);
  // One statement each, as unbatched (statement_begin counted the first).
  metrics.statements.fetch_add(rows.size() - 1, std::memory_order_relaxed);
  in_.consume(end);  // the Bind in hand and every group after it
  unconsumed_ = 0;
  auto last = std::make_unique<Portal>();
  last->stmt = p;
  last->done = true;
  ext().portals[""] = std::move(last);
  co_return true;
}

awaitable<void> PgClient::on_describe(const pg::Describe& m) {
  if (skip_until_sync_) co_return;
  pg::Encoder enc(out_);
  std::shared_ptr<Prepared> p;
  std::span<const int16_t> formats;
  if (m.kind == 'S') {
    auto it = ext().statements.find(std::string(m.name));
    if (it == ext().statements.end()) {
      send_error("26000", "prepared statement \"" + std::string(m.name) + "\" does not exist");
      skip_until_sync_ = true;
      co_return;
    }
    p = it->second;
    if (!co_await describe(*p)) co_return;
    std::vector<uint32_t> oids;
    const bool native = session_->pool().pg_native();
    for (size_t i = 0; i < p->nparams; ++i) {
      uint32_t oid = i < p->param_oids.size() ? p->param_oids[i] : 0;
      if (native && i < p->backend_params.size()) {
        oid = p->backend_params[i].native.pg_oid;  // the server's resolution
      } else if (oid == 0) {
        oid = i < p->backend_params.size() ? pg::wire_type_for(p->backend_params[i]).oid
                                           : pg::oid::kText;
      }
      oids.push_back(oid);
    }
    enc.parameter_description(oids);
  } else {
    auto it = ext().portals.find(std::string(m.name));
    if (it == ext().portals.end() && session_->pool().pg_native() && session_->backend()) {
      // Not bound through wirepool: a portal the client opened with SQL
      // (DECLARE … CURSOR) lives on its backend, which describes it.
      const std::string name(m.name);
      auto described = co_await session_->run(
          [&name](Backend& b) { return b.conn.impl()->describe_portal(name); });
      if (!described.ok()) {
        co_await backend_error(described.take_error());
        skip_until_sync_ = true;
        co_return;
      }
      std::vector<int16_t> cursor_formats;
      for (const auto& c : described.value())
        cursor_formats.push_back(c.native.pg_format);
      if (described->empty()) {
        enc.no_data();
      } else {
        describe_columns(described.value(), cursor_formats, true, out_);
      }
      co_return;
    }
    if (it == ext().portals.end()) {
      send_error("34000", "portal \"" + std::string(m.name) + "\" does not exist");
      skip_until_sync_ = true;
      co_return;
    }
    p = it->second->stmt;
    formats = it->second->result_formats;
  }
  if (!p->show_name.empty()) {
    std::vector<pg::FieldDescription> f(1);
    f[0].name = p->show_name;
    enc.row_description(f);
  } else if (p->columns.empty()) {
    enc.no_data();
  } else {
    describe_columns(p->columns, formats, session_->pool().pg_native(), out_);
  }
}

awaitable<void> PgClient::on_execute(const pg::Execute& m) {
  if (skip_until_sync_) co_return;
  auto it = ext().portals.find(std::string(m.portal));
  if (it == ext().portals.end()) {
    send_error("34000", "portal \"" + std::string(m.portal) + "\" does not exist");
    skip_until_sync_ = true;
    co_return;
  }
  Portal& portal = *it->second;
  const auto& p = *portal.stmt;
  if (p.blank) {
    pg::Encoder(out_).empty_query_response();
    co_return;
  }
  if (!to_backend(p.cls) || (session_->implicit() && is_transaction_control(p.cls))) {
    co_await park_portals(&portal);
    session_->statement_begin();
    bool ok = co_await session_statement(p.sql, p.cls, false);
    session_->statement_end();
    send_parameter_changes();
    if (!ok) skip_until_sync_ = true;
    co_return;
  }
  if (portal.done) {
    pg::Encoder(out_).command_complete(command_tag({}, p.cls.verb, true, 0));
    co_return;
  }
  db::Error err;
  if (!portal.open) {
    co_await park_portals(&portal);
    session_->statement_begin();
    if (!co_await enter_block(p.cls)) {
      session_->statement_end();
      skip_until_sync_ = true;
      co_return;
    }
    if (auto e = co_await session_->ensure_backend()) {
      send_error(*e);
      skip_until_sync_ = true;
      co_return;
    }
    // Prepared on demand: the backend serving this Execute may not be the one
    // that saw the Parse (transaction pooling).
    std::vector<db::ParamInfo> hints;
    if (session_->pool().pg_native()) {
      for (uint32_t oid : p.param_oids) {
        db::ParamInfo h;
        h.native.pg_oid = oid;
        hints.push_back(h);
      }
    }
    auto stmt = co_await session_->backend_statement(p.key, p.sql, hints);
    if (!stmt.ok()) {
      co_await backend_error(stmt.take_error());
      skip_until_sync_ = true;
      co_return;
    }
    auto s = std::make_unique<Streamer>();
    db::Statement* statement = stmt.value();
    auto* streamer = s.get();
    streamer->native = session_->pool().pg_native();
    streamer->requested = portal.result_formats;
    const auto& params = portal.params;
    const auto& described = p.columns;
    db::QueryOptions options;
    options.native = streamer->native;
    options.formats = portal.result_formats;
    const int64_t limit = m.max_rows > 0 ? m.max_rows : 0;
    std::string* out = &out_;
    auto first = co_await session_->run([&](Backend&) -> Fetch {
      if (streamer->phase == Streamer::Phase::start) {
        auto r = statement->query(params, options);
        if (db::is_would_block(r)) return Fetch::wait;
        if (!r.ok()) {
          err = r.take_error();
          return Fetch::error;
        }
        streamer->rows = std::move(r.value());
        begin_result(*streamer, described, *out, false);
        streamer->phase = Streamer::Phase::rows;
      }
      // One hop to the executor for a small result: execution and rows together.
      return fetch_rows(*streamer, *out, limit, err);
    });
    portal.open = std::move(s);
    co_await finish_execute(portal, p, limit, err, first);
    co_return;
  }
  portal.open->sent = 0;
  co_await finish_execute(portal, p, m.max_rows > 0 ? m.max_rows : 0, err, Fetch::more);
}

awaitable<bool> PgClient::enter_block(const Classified& cls) {
  // PostgreSQL runs the messages up to a Sync in one transaction: an error
  // rolls back what ran before it, and nothing commits before the Sync (nor
  // without one). Driver calls commit one by one, so the session opens a
  // transaction unless this statement is known to be the block's last.
  if (session_->implicit()) {
    if (cls.block == BlockRule::require) {
      send_error("25P01", std::string(cls.block_name) + " can only be used in transaction blocks");
      co_return false;
    }
    if (cls.block == BlockRule::warn) {
      send_notice("25P01", std::string(cls.block_name) + " can only be used in transaction blocks");
    }
    co_return true;
  }
  if (session_->in_transaction() || session_->mode() == config::PoolMode::statement ||
      is_transaction_control(cls) || cls.block == BlockRule::prevent ||
      cls.block == BlockRule::require || sync_follows()) {
    co_return true;
  }
  auto st = co_await session_->begin_implicit();
  if (!st.ok()) {
    co_await backend_error(st.take_error());
    co_return false;
  }
  if (cls.block == BlockRule::warn) {
    send_notice("25P01", std::string(cls.block_name) + " can only be used in transaction blocks");
  }
  co_return true;
}

awaitable<void> PgClient::finish_execute(Portal& portal, const Prepared& p, int64_t limit,
                                         db::Error& err, Fetch first) {
  Streamer& s = *portal.open;
  Fetch f = co_await stream(s, limit, err, first);
  if (f == Fetch::error) {
    portal.open.reset();
    portal.done = true;
    session_->statement_end();
    co_await backend_error(std::move(err));
    skip_until_sync_ = true;
    co_return;
  }
  if (f == Fetch::limit) {
    s.suspended = true;
    pg::Encoder(out_).portal_suspended();
    co_return;
  }
  std::string tag = command_tag(s.info, p.cls.verb, s.has_columns, s.sent);
  // A query read in steps: PostgreSQL counts the rows of the last step only.
  if (s.suspended && tag.starts_with("SELECT ")) tag = "SELECT " + std::to_string(s.sent);
  pg::Encoder(out_).command_complete(tag);
  const bool native = s.native;
  portal.open.reset();  // `s` is gone from here on
  portal.done = true;
  session_->statement_end();
  session_->sync_tx_state();
  if (!p.effects.settings.empty()) session_->note_set(p.effects.settings);
  if (p.effects.opaque) session_->mark_dirty();
  if (native && (p.cls.verb == "SET" || p.cls.verb == "RESET")) {
    if (auto parsed = parse_setting_command(p.sql)) {
      if (auto* cmd = std::get_if<SettingCommand>(&*parsed)) {
        if (auto* set = std::get_if<SetCommand>(cmd); set && !set->local) {
          session_->note_set({set->name});
        } else if (auto* reset = std::get_if<ResetCommand>(cmd); reset && reset->name != "all") {
          session_->note_set({reset->name});
        }
      }
    }
  }
  forward_events();
}

awaitable<void> PgClient::on_close(const pg::Close& m) {
  if (skip_until_sync_) co_return;
  std::string name(m.name);
  if (m.kind == 'S') {
    ext().statements.erase(name);
  } else if (auto it = ext().portals.find(name); it != ext().portals.end()) {
    if (it->second->open && it->second->open->rows.is_open()) {
      auto* s = it->second->open.get();
      co_await session_->run([s](Backend&) { return s->rows.close(); });
    }
    ext().portals.erase(it);
  }
  pg::Encoder(out_).close_complete();
}

awaitable<void> PgClient::on_sync() {
  const bool failed = skip_until_sync_;
  skip_until_sync_ = false;
  batch_refused_ = false;
  session_->sync_tx_state();
  if (session_->implicit()) {
    // The block's implicit transaction ends here, and its portals with it.
    co_await close_portals();
    auto st = co_await session_->end_implicit(failed);
    if (!st.ok()) co_await backend_error(st.take_error());
  }
  co_await session_->settle_settings();
  forward_events();
  // Outside a transaction block, Sync ends the implicit transaction and with it
  // every portal.
  if (!session_->in_transaction()) co_await close_portals();
  if (!portals_open()) session_->statement_end();
  session_->release_if_idle(portals_open());
  ready_for_query();
}

bool PgClient::portals_open() const {
  if (!ext_) return false;
  for (const auto& [name, p] : ext_->portals) {
    if (p->open) return true;
  }
  return false;
}

awaitable<void> PgClient::park_portals(const Portal* keep) {
  if (!ext_ || !session_->backend()) co_return;
  const size_t cap = server_.config().server.max_message_size;
  for (auto& [name, p] : ext_->portals) {
    if (p.get() == keep || !p->open || !p->open->rows.is_open() || p->open->is_parked) continue;
    Streamer& s = *p->open;
    const int64_t sent = s.sent;
    s.parking = true;
    s.park_mark = kFlushBytes;
    db::Error err;
    Fetch f = Fetch::more;
    while (f != Fetch::done && f != Fetch::error) {
      if (f == Fetch::flush) {
        s.park_mark = s.parked.size() + kFlushBytes;
        if (s.parked.size() > cap) {
          s.failure =
              make_error("54000", "the rest of portal \"" + name +
                                      "\" exceeds server.max_message_size, which "
                                      "wirepool buffers to run another statement meanwhile");
          s.phase = Streamer::Phase::closing;
        }
      }
      f = co_await session_->run([&](Backend&) { return fetch_rows(s, s.parked, 0, err); });
    }
    // Served by later Executes, its end (or error) after the last row.
    s.parking = false;
    s.is_parked = true;
    s.sent = sent;
    s.phase = Streamer::Phase::rows;
  }
}

awaitable<void> PgClient::close_portals() {
  if (!ext_) co_return;
  if (portals_open() && session_->backend()) {
    co_await session_->run([this](Backend&) -> db::Status {
      for (auto& [name, p] : ext_->portals) {
        if (!p->open || !p->open->rows.is_open()) continue;
        auto st = p->open->rows.close();
        if (db::is_would_block(st)) return st;  // repeated: closed ones are skipped
      }
      return {};
    });
  }
  ext_->portals.clear();
}

}  // namespace wirepool::server
