#pragma once
// Whether a client may log in, decided once for every protocol in one order
// (PostgreSQL's: the connection, then the credentials, then the database) and
// answered as a neutral refusal that each front end maps to its own codes.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "session/admission.hpp"
#include "session/auth.hpp"
#include "tls/tls.hpp"

namespace wirepool::server {

/// Why a login is refused. Each front end maps it to its own code (SQLSTATE,
/// SQL Server error number); the reason for the log goes with it.
enum class LoginRefusal : uint8_t {
  none,
  shutting_down,     ///< the server is draining
  tls_required,      ///< a plaintext login on a listener that requires TLS
  too_many_clients,  ///< max_clients reached (admin users have a reserve beyond it)
  /// Unknown user, refused client certificate, the admin console for a
  /// non-admin, a database the user may not use, or a wrong password: one
  /// answer for all, so that none tells a right password from a wrong one.
  login_failed,
  unknown_database,  ///< checked after the credentials, as PostgreSQL does
};
std::string_view to_string(LoginRefusal r);

/// Where a login stands when the front end asks; it asks at each in turn and
/// runs its own protocol's checks (a malformed startup, an unsupported
/// authentication method) between them.
enum class LoginStage : uint8_t {
  /// The login request has been read: is the server taking logins at all?
  requested,
  /// Before the credentials are exchanged: TLS and room.
  credentials_due,
  /// After the exchange: who may log in where, then room and the database.
  credentials_checked,
};

/// What a front end knows of a login when it asks.
struct LoginFacts {
  bool draining = false;
  bool tls = false;                  ///< the client speaks TLS
  bool tls_required = false;         ///< the listener requires it
  const UserRecord* user = nullptr;  ///< nullptr: no such user
  /// Why the user's certificate requirement refuses this client (nullopt: it does not).
  std::optional<std::string> certificate_refusal;
  std::string_view database;
  bool database_known = false;
  bool admin_console = false;  ///< the client asked for the admin console (PostgreSQL)
  bool password_ok = false;    ///< credentials_checked: they were right
  /// Why the credentials were wrong, for the log ("wrong password", SCRAM's message).
  std::string_view password_failure = "wrong password";
};

struct LoginDecision {
  LoginRefusal refusal = LoginRefusal::none;
  std::string reason;  ///< for the log only: never sent to the client
};

/// The one admission order, for both protocols. The listener's allow-list
/// comes first, at accept (address_allowed); then `requested`: draining;
/// `credentials_due`: TLS, room (admin users may use the reserve);
/// `credentials_checked`: user, certificate, admin console, database
/// permission, password (all login_failed, decided after the exchange so it
/// runs the same for each), then the ticket's promotion (room again) and
/// the database's existence.
LoginDecision decide_login(LoginStage stage, const LoginFacts& f, const Admission& admission,
                           Admission::Ticket* ticket = nullptr);

/// Whether `addr` is in the listener's allow-list (an empty list allows all).
bool address_allowed(const config::Listener& listener, const boost::asio::ip::address& addr);

/// Why `user`'s certificate requirement refuses a client presenting `peer`
/// (nullptr: no TLS); nullopt when it does not, or the user needs none. A
/// certificate whose public key is pinned for the user passes, and so does one
/// signed by tls.client_ca whose common name is the user.
std::optional<std::string> certificate_refusal(const UserRecord& user, const config::Tls& tls,
                                               const tls::PeerCertificate* peer);

}  // namespace wirepool::server
