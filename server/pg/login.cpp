// PgClient: startup, TLS, SCRAM authentication and the admission of a login
// (session/login_policy.hpp), cancel requests, the admin console's login.

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

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using namespace pg_detail;

namespace {

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

awaitable<std::optional<std::string>> PgClient::read_password_message(size_t limit) {
  // Only used during authentication (messages there are small); the main loop
  // decodes in place.
  for (;;) {
    auto d = pg::decode_frontend(in_.view(), limit);
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
      co_await login_failure(server_, user, d.reason, answer_at);
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
  // auth.mode passthrough: the client is the backend role of its own name,
  // whatever the users list says; the backend checks its password.
  const auto current = server_.current_config();
  const config::Database* dbcfg = current->find_database(database);
  const bool passthrough = dbcfg && dbcfg->auth == config::AuthMode::passthrough;
  if (passthrough) {
    auto r = std::make_shared<UserRecord>();
    r->name = user;
    r->databases.insert(database);
    backend_user_ = std::move(r);
    record = backend_user_.get();
    facts.user = record;
  } else if (record) {
    facts.certificate_refusal = certificate_refusal(*record, server_.config().tls);
  }
  auto due = decide_login(LoginStage::credentials_due, facts, admission);
  uint32_t minor = protocol & 0xffff;
  if (due.refusal != LoginRefusal::tls_required && (minor > 0 || !unrecognized.empty())) {
    pg::Encoder(out_).negotiate_protocol_version(0, unrecognized);
  }
  if (due.refusal != LoginRefusal::none) {
    co_await refuse_login(due, user, database, {});
    co_return false;
  }
  pg::scram::Verifier verifier;
  if (!passthrough) {
    if (!co_await look_up_user(user, database, record, verifier)) co_return false;
    facts.user = record;
  }
  if (passthrough) {
    if (auto why = passthrough_user_refusal(user)) {
      // A name the backend would read as another role's, or one unfit for a log line.
      spdlog::warn("client {}: refused: {} (database \"{}\", auth mode passthrough)", peer_, *why,
                   database);
      const std::string message = "invalid user name: " + *why;
      co_await fatal("28000", message);
      co_return false;
    }
  }
  if (passthrough && !ssl_) {
    // The password would cross the network in clear: never asked for.
    spdlog::warn(
        "client {}: refused: database \"{}\" takes the client's own password (auth mode "
        "passthrough), asked for only over TLS (user \"{}\")",
        peer_, database, user);
    const std::string message = "database \"" + database +
                                "\" logs in with your own password, which wirepool asks for "
                                "only over TLS: connect with sslmode=require";
    co_await fatal("28000", message);
    co_return false;
  }
  // Whatever refuses this login besides the proof is decided after the
  // exchange and answered exactly as a wrong password: the proof is never
  // checked for it, so no answer tells a right password from a wrong one.
  // Not `c ? co_await a : co_await b`: GCC 12 destroys such a temporary twice.
  std::optional<Credentials> credentials;
  if (passthrough) {
    credentials = co_await authenticate_passthrough(user, database);
  } else {
    credentials = co_await authenticate(user, verifier);
  }
  if (!credentials) co_return false;
  facts.password_ok = credentials->ok;
  facts.password_failure = credentials->failure;
  auto checked = decide_login(LoginStage::credentials_checked, facts, admission, ticket_.get());
  if (!passthrough && checked.refusal != LoginRefusal::login_failed) {
    pg::Encoder(out_).auth_sasl_final(credentials->server_final);
  }
  if (checked.refusal != LoginRefusal::none) {
    co_await refuse_login(checked, user, database, credentials->answer_at);
    co_return false;
  }
  if (facts.admin_console) co_return co_await admin_login(*record);
  if (!co_await open_session(*record, user, database, params, options)) co_return false;
  if (!co_await finish_login(user, database)) co_return false;
  // After the login's own lease, whose parameters the client's database reports.
  const auto& ro = session_->pool().config().read_only;
  if ((ro.route_transactions || ro.route_statements) && !ro.name.empty() &&
      session_->pool().config().reads_of.empty()) {
    if (auto reads = server_.pool_for(ro.name, user)) session_->set_read_pool(std::move(reads));
    session_->set_routes(ro.route_transactions, ro.route_statements);
  }
  co_return true;
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
  // A PostgreSQL backend reports its own parameters. Settings a backend of this
  // pool accepted before are answered from what it reported then; others are
  // checked on a backend now, where the client expects errors about them. A
  // lease this brief waits for a connection given back rather than opening one
  // past pipeline_max.
  const auto& pool = session_->pool_ptr();
  const bool native = pool->pg_native();
  std::vector<std::pair<std::string, std::string>> reported;
  if (native) {
    const auto overrides = session_->settings().overrides();
    if (auto known = pool->startup_parameters(overrides)) {
      reported = std::move(*known);
    } else {
      auto err = co_await session_->ensure_backend(/*pipelined=*/true);
      if (err) {
        spdlog::warn("client {}: database \"{}\": {}", peer_, database, err->message);
        co_await fatal(err->sqlstate, err->message);
        co_return false;
      }
      reported = session_->backend()->conn.impl()->server_parameters();
      pool->learn_startup(overrides, reported);
      (void)session_->take_events();
      session_->release_if_idle(false);
    }
    for (const auto& [name, value] : reported) {
      // The server's default: the client's SQL is split the way the server splits it.
      if (name == "standard_conforming_strings" && value != "on") {
        session_->on_parameter({name, value});
      }
    }
    (void)session_->take_events();
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
  auto [pid, secret] = server_.cancels().add(*this);
  pid_ = pid;
  enc.backend_key_data(pid, secret);
  ready_for_query();
  io_deadline_.reset();
  login_done();
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
  admin_user_ = &record;
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
  auto [pid, secret] = server_.cancels().add(*this);
  pid_ = pid;
  enc.backend_key_data(pid, secret);
  enc.ready_for_query('I');
  io_deadline_.reset();
  login_done();
  spdlog::info("client {}: user \"{}\" connected to the admin console (pid {})", peer_, record.name,
               pid);
  co_return co_await flush();
}

awaitable<std::optional<PgClient::Credentials>> PgClient::authenticate_passthrough(
    const std::string& user, const std::string& database) {
  pg::Encoder(out_).auth_cleartext();
  if (!co_await flush()) co_return std::nullopt;
  // PostgreSQL's own bound for an authentication message (PG_MAX_AUTH_TOKEN_LENGTH).
  auto body = co_await read_password_message(65535);
  if (!body) co_return std::nullopt;
  std::string password = std::move(*body);
  struct Wipe {
    std::string& s;
    ~Wipe() { OPENSSL_cleanse(s.data(), s.size()); }
  } wipe{password};
  Credentials c;
  c.answer_at = std::chrono::steady_clock::now();
  // A PasswordMessage is the password and its terminating NUL.
  if (password.empty() || password.back() != '\0') {
    co_await fatal("08P01", "malformed password message: no terminating NUL");
    co_return std::nullopt;
  }
  password.pop_back();
  if (auto wait = server_.throttle().delay(address(), user); wait.count() > 0) {
    if (io_deadline_ && c.answer_at + wait >= *io_deadline_) {
      metrics().refused(RefusedReason::throttled);
      spdlog::warn(
          "client {}: authentication refused for user \"{}\" without checking it: too many "
          "failed logins from {}",
          peer_, user, to_string(address()));
      server_.login_failed();
      co_await wait_until(c.answer_at + kLoginFailureDelay);
      const std::string message = "password authentication failed for user \"" + user + "\"";
      co_await fatal("28P01", message);
      co_return std::nullopt;
    }
    co_await wait_until(c.answer_at + wait);
    if (timed_out_) co_return std::nullopt;
    c.answer_at = std::chrono::steady_clock::now();
  }
  BackendCheck check = co_await check_on_backend(server_, user, database, password);
  // if/else, not a switch: no co_await inside a case's block (GCC 12).
  if (check.verdict == BackendCheck::Verdict::ok) {
    c.ok = true;
  } else if (check.verdict == BackendCheck::Verdict::refused) {
    c.failure = std::move(check.reason);
  } else {
    std::string message = "database \"" + database + "\" does not exist";  // removed meanwhile
    std::string sqlstate = "3D000";
    if (check.verdict == BackendCheck::Verdict::unavailable) {
      spdlog::warn("client {}: cannot check user \"{}\"'s password on database \"{}\": {}", peer_,
                   user, database, check.reason);
      message =
          "cannot check the password: the backend of database \"" + database + "\" is unavailable";
      sqlstate = check.sqlstate;
    }
    co_await fatal(sqlstate, message);
    co_return std::nullopt;
  }
  co_return c;
}

awaitable<bool> PgClient::look_up_user(const std::string& user, const std::string& database,
                                       const UserRecord*& record, pg::scram::Verifier& verifier) {
  AuthLookupPtr lookup = record ? nullptr : server_.auth_lookup(database);
  if (!lookup) {
    verifier = users_->verifier_for(user);
    co_return true;
  }
  AuthResult found = co_await lookup->find(user);
  switch (found.answer) {
    case AuthAnswer::found: {
      // Only the database whose auth_query found it; never an admin.
      auto r = std::make_shared<UserRecord>();
      r->name = user;
      r->verifier = *found.verifier;
      r->databases.insert(database);
      verifier = r->verifier;
      backend_user_ = std::move(r);
      record = backend_user_.get();
      co_return true;
    }
    case AuthAnswer::unknown:
    case AuthAnswer::refused:
      // Answered as a wrong password, with the salt and count a real user shows.
      verifier = users_->verifier_for(user);
      verifier.iterations = lookup->iterations();
      co_return true;
    case AuthAnswer::failed:
      break;
  }
  metrics().refused(RefusedReason::auth_lookup);
  spdlog::warn("client {}: cannot look up user \"{}\" in database \"{}\": {}", peer_, user,
               database, found.reason);
  if (found.connection) {
    co_await fatal("08006", "wirepool cannot look up the user: the auth_user connection failed");
  } else {
    co_await fatal("28000", "wirepool cannot look up the user: the auth_query failed");
  }
  co_return false;
}

awaitable<std::optional<PgClient::Credentials>> PgClient::authenticate(
    const std::string& user, const pg::scram::Verifier& verifier) {
  // Over TLS, SCRAM-SHA-256-PLUS binds the exchange to this TLS session
  // (tls-server-end-point), so a man in the middle cannot relay it.
  std::string binding = ssl_ && tls_ctx_ ? tls_ctx_->channel_binding_data() : std::string();
  std::vector<std::string_view> mechs;
  if (!binding.empty()) mechs.push_back(pg::scram::kMechanismPlus);
  mechs.push_back(pg::scram::kMechanism);
  pg::Encoder(out_).auth_sasl(mechs);
  if (!co_await flush()) co_return std::nullopt;

  pg::scram::ServerExchange exchange(verifier, binding);
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

}  // namespace wirepool::server
