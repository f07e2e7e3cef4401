#include "session/login_policy.hpp"

namespace wirepool::server {

std::string_view to_string(LoginRefusal r) {
  switch (r) {
    case LoginRefusal::none:
      return "none";
    case LoginRefusal::shutting_down:
      return "shutting down";
    case LoginRefusal::tls_required:
      return "TLS required";
    case LoginRefusal::too_many_clients:
      return "too many clients";
    case LoginRefusal::login_failed:
      return "login failed";
    case LoginRefusal::unknown_database:
      return "unknown database";
  }
  return "?";
}

LoginDecision decide_login(LoginStage stage, const LoginFacts& f, const Admission& admission,
                           Admission::Ticket* ticket) {
  const bool admin = f.user && f.user->admin;
  if (stage == LoginStage::requested) {
    if (f.draining) return {LoginRefusal::shutting_down, "the server is shutting down"};
    return {};
  }
  if (stage == LoginStage::credentials_due) {
    if (f.tls_required && !f.tls) {
      return {LoginRefusal::tls_required, "TLS is required on this listener"};
    }
    if (!admission.has_room(admin)) return {LoginRefusal::too_many_clients, "max_clients reached"};
    return {};
  }
  if (!f.user) return {LoginRefusal::login_failed, "no such user"};
  if (f.certificate_refusal) {
    return {LoginRefusal::login_failed, "certificate refused: " + *f.certificate_refusal};
  }
  if (f.admin_console && !admin) {
    return {LoginRefusal::login_failed, "not an admin user, asked for the admin console"};
  }
  if (f.database_known && !f.user->may_use(f.database)) {
    return {LoginRefusal::login_failed, "may not use database \"" + std::string(f.database) + "\""};
  }
  if (!f.password_ok) return {LoginRefusal::login_failed, std::string(f.password_failure)};
  if (ticket && !ticket->promote(admin)) {
    return {LoginRefusal::too_many_clients, "max_clients reached"};
  }
  if (!f.admin_console && !f.database_known) {
    return {LoginRefusal::unknown_database,
            "asked for unknown database \"" + std::string(f.database) + "\""};
  }
  return {};
}

bool address_allowed(const config::Listener& listener, const boost::asio::ip::address& addr) {
  if (listener.allow.empty()) return true;
  bool ok = false;
  if (addr.is_v4()) {
    auto b = addr.to_v4().to_bytes();
    for (const auto& c : listener.allow)
      ok = ok || c.contains(b.data(), false);
  } else {
    auto b = addr.to_v6().to_bytes();
    for (const auto& c : listener.allow)
      ok = ok || c.contains(b.data(), true);
  }
  return ok;
}

std::optional<std::string> certificate_refusal(const UserRecord& user, const config::Tls& tls,
                                               const tls::PeerCertificate* peer) {
  if (user.client_cert_pins.empty()) return std::nullopt;
  const bool present = peer && peer->present;
  bool pinned =
      present && tls::ClientContext::pin_matches(peer->public_key_sha256, user.client_cert_pins);
  bool by_ca =
      present && !tls.client_ca.empty() && peer->chain_verified && peer->common_name == user.name;
  if (pinned || by_ca) return std::nullopt;
  if (!peer) return "no TLS";
  if (!peer->present) return "no client certificate";
  return "public key sha256 " + peer->public_key_sha256 + " is not pinned for the user";
}

}  // namespace wirepool::server
