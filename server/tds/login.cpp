// TdsClient: TLS (TDS 8.0 strict, or 7.x inside PRELOGIN), PRELOGIN, LOGIN7
// and the admission of a login (session/login_policy.hpp).

#include "server/tds/client.hpp"

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
#include "server/tds/client_detail.hpp"
#include "sql/lexer.hpp"

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using namespace tds_detail;

namespace {

/// SQL Server's "Login failed for user" and its severity.
constexpr int32_t kLoginFailed = 18456;
/// A TLS record's header and its largest body (TLS 1.3: 2^14 plus 256 of expansion).
constexpr size_t kMaxTlsRecord = 5 + (1u << 14) + 256;

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

}  // namespace

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
      if (len > kMaxTlsRecord) {
        spdlog::warn(
            "client {}: refused: a TLS record of {} bytes in the TDS 7.x handshake "
            "exceeds the limit of {} bytes",
            peer_, len, kMaxTlsRecord);
        co_return false;
      }
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
      if (header && header->length > tds::kHeaderSize + tds::kMaxLoginMessage) {
        spdlog::warn(
            "client {}: refused: a PRELOGIN packet of {} bytes in the TDS 7.x "
            "handshake exceeds the limit of {} bytes",
            peer_, header->length, tds::kHeaderSize + tds::kMaxLoginMessage);
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

awaitable<void> TdsClient::refuse_login(const LoginDecision& d, const std::string& user,
                                        const std::string& database, TimePoint answer_at) {
  switch (d.refusal) {
    case LoginRefusal::none:
      break;
    case LoginRefusal::shutting_down:
      co_await login_error(6005, 14, "SHUTDOWN is in progress.");
      break;
    case LoginRefusal::too_many_clients:
      spdlog::warn("client {}: refused: max_clients ({}) reached", peer_,
                   server_.config().server.max_clients);
      co_await login_error(17809, 20,
                           "Could not connect because the maximum number of user connections "
                           "has already been reached.");
      break;
    case LoginRefusal::tls_required:  // not reached: TDS logins come over TLS only
    case LoginRefusal::login_failed: {
      co_await login_failure(server_, user, d.reason, answer_at);
      std::string m = "Login failed for user '" + user + "'.";
      co_await login_error(kLoginFailed, 14, m);
      break;
    }
    case LoginRefusal::unknown_database: {
      spdlog::info("client {}: user \"{}\" asked for unknown database \"{}\"", peer_, user,
                   database);
      std::string m =
          "Cannot open database \"" + database + "\" requested by the login. The login failed.";
      co_await login_error(4060, 11, m);
      break;
    }
  }
}

awaitable<bool> TdsClient::prelogin() {
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
  co_return true;
}

awaitable<bool> TdsClient::login() {
  const auto& scfg = server_.config().server;
  io_deadline_ = std::chrono::steady_clock::now() + scfg.login_timeout;
  if (!co_await prelogin()) co_return false;

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

  LoginFacts facts;
  facts.draining = server_.draining();
  facts.tls = true;  // TDS logins come over TLS only
  const auto& admission = server_.admission();
  if (auto d = decide_login(LoginStage::requested, facts, admission);
      d.refusal != LoginRefusal::none) {
    co_await refuse_login(d, user, "", {});
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
  facts.user = record;
  if (auto d = decide_login(LoginStage::credentials_due, facts, admission);
      d.refusal != LoginRefusal::none) {
    co_await refuse_login(d, user, "", {});
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
  facts.database = database;
  facts.database_known = server_.has_database(database);
  // The verifier the password is checked against: the user's, one found by
  // the database's auth_query, or a fake one (an unknown name takes as long).
  pg::scram::Verifier verifier = users_->verifier_for(user);
  // auth.mode passthrough: the client is the backend role of its own name,
  // whatever the users list says; a backend login checks LOGIN7's password.
  const auto current = server_.current_config();
  const config::Database* dbcfg = current->find_database(database);
  const bool passthrough = dbcfg && dbcfg->auth == config::AuthMode::passthrough;
  if (passthrough) {
    if (auto why = passthrough_user_refusal(user)) {
      spdlog::warn("client {}: refused: {} (database \"{}\", auth mode passthrough)", peer_, *why,
                   database);
      const std::string m = "Login failed: invalid user name: " + *why + ".";
      co_await login_error(kLoginFailed, 14, m);
      co_return false;
    }
    auto r = std::make_shared<UserRecord>();
    r->name = user;
    r->databases.insert(database);
    backend_user_ = std::move(r);
    record = backend_user_.get();
    facts.user = record;
  } else if (AuthLookupPtr lookup = record ? nullptr : server_.auth_lookup(database)) {
    AuthResult found = co_await lookup->find(user);
    if (found.answer == AuthAnswer::failed) {
      metrics().refused(RefusedReason::auth_lookup);
      spdlog::warn("client {}: cannot look up user \"{}\" in database \"{}\": {}", peer_, user,
                   database, found.reason);
      co_await login_error(kLoginFailed, 14,
                           "Login failed: wirepool cannot look up the user (the database's "
                           "auth_query failed or its connection is down).");
      co_return false;
    }
    if (found.answer == AuthAnswer::found) {
      // Only the database whose auth_query found it; never an admin.
      auto r = std::make_shared<UserRecord>();
      r->name = user;
      r->verifier = *found.verifier;
      r->databases.insert(database);
      verifier = r->verifier;
      backend_user_ = std::move(r);
      record = backend_user_.get();
      facts.user = record;
    } else {
      verifier.iterations = lookup->iterations();
    }
  }
  if (record) facts.certificate_refusal = certificate_refusal(*record, server_.config().tls);
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
  // The password is checked for every login (an unknown or refused user's
  // too, so that all take the same time) on the hashing threads, never on an
  // event loop. (By reference only: GCC 12 may destroy a lambda's owning
  // captures twice across a co_await; the users and lg.password live in this frame.)
  BackendCheck check;  // outlives facts.password_failure, which views its reason
  if (passthrough) {
    check = co_await check_on_backend(server_, user, database, lg.password);
    if (check.verdict == BackendCheck::Verdict::no_database) {
      const std::string m =
          "Cannot open database \"" + database + "\" requested by the login. The login failed.";
      co_await login_error(4060, 11, m);  // removed meanwhile
      co_return false;
    }
    if (check.verdict == BackendCheck::Verdict::unavailable) {
      spdlog::warn("client {}: cannot check user \"{}\"'s password on database \"{}\": {}", peer_,
                   user, database, check.reason);
      const std::string m = "Login failed: cannot check the password: the backend of database \"" +
                            database + "\" is unavailable.";
      co_await login_error(kLoginFailed, 14, m);
      co_return false;
    }
    facts.password_ok = check.verdict == BackendCheck::Verdict::ok;
    facts.password_failure = check.reason;
  } else {
    auto verify = [&verifier, &lg] {
      as_hashing_thread();
      return pg::scram::verify_password(verifier, lg.password);
    };
    facts.password_ok = co_await server_.hashing().run(verify);
  }
  if (timed_out_) co_return false;
  auto checked = decide_login(LoginStage::credentials_checked, facts, admission, ticket_.get());
  if (checked.refusal != LoginRefusal::none) {
    co_await refuse_login(checked, user, database, answer_at);
    co_return false;
  }
  co_return co_await finish_login(*record, database, lg, psize);
}

awaitable<bool> TdsClient::finish_login(const UserRecord& record, const std::string& database,
                                        const tds::Login7& lg, uint32_t psize) {
  const auto& scfg = server_.config().server;
  const std::string& user = record.name;
  // The user's own pool: its backend connections serve no other user.
  auto pool = server_.pool_for(database, user);
  if (!pool) {
    std::string m =
        "Cannot open database \"" + database + "\" requested by the login. The login failed.";
    co_await login_error(4060, 11, m);
    co_return false;
  }
  database_ = database;
  session_ = std::make_unique<Session>(pool, record, server_.blocking(), scfg.query_timeout);
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
  assembler_.set_wipe(false);
  login_done();
  io_deadline_.reset();
  spdlog::info("client {}: user \"{}\" connected to database \"{}\" over TDS ({})", peer_, user,
               database, lg.app_name.empty() ? lg.client_interface : lg.app_name);
  co_return co_await flush();
}

}  // namespace wirepool::server
