#include "backends/postgresql/postgresql_options.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace wirepool::postgresql {

namespace {

/// Conninfo keys that would set TLS outside the entry's tls block.
constexpr std::string_view kTlsKeys[] = {
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "sslcrl",
    "sslcrldir",
    "requiressl",
    "sslpassword",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
};

bool is_tls_key(std::string_view key) {
  return std::find(std::begin(kTlsKeys), std::end(kTlsKeys), key) != std::end(kTlsKeys);
}

bool is_secret_key(std::string_view key) {
  return key == "password" || key == "sslpassword";
}

/// The keys `conninfo` sets (PQconninfoParse), or the parse error.
struct Parsed {
  std::set<std::string> keys;
  std::string channel_binding;  ///< its value when the conninfo sets it
  std::string error;
  bool ok = false;
};

Parsed parse_conninfo(const std::string& conninfo) {
  Parsed out;
  const bool uri = conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0;
  if (!uri && conninfo.find('=') == std::string::npos) {
    // A bare database name, as PQconnectdbParams(expand_dbname = 1) reads it.
    if (!conninfo.empty()) out.keys.insert("dbname");
    out.ok = true;
    return out;
  }
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (opts == nullptr) {
    out.error = err ? err : "out of memory";
    while (!out.error.empty() && (out.error.back() == '\n' || out.error.back() == ' ')) {
      out.error.pop_back();
    }
    if (err) PQfreemem(err);
    return out;
  }
  for (PQconninfoOption* o = opts; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    out.keys.insert(o->keyword);
    if (std::string_view(o->keyword) == "channel_binding") out.channel_binding = o->val;
  }
  PQconninfoFree(opts);
  out.ok = true;
  return out;
}

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; });
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/// Redacts a postgres:// URI: userinfo password and `password` query parameters.
std::string redact_uri(std::string_view s, size_t after_scheme) {
  std::string out(s.substr(0, after_scheme));
  std::string_view rest = s.substr(after_scheme);
  const size_t auth_end = std::min(rest.find_first_of("/?"), rest.size());
  const size_t at = rest.substr(0, auth_end).rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    const size_t colon = userinfo.find(':');
    if (colon != std::string_view::npos) {
      out.append(userinfo.substr(0, colon + 1)).append("***");
    } else {
      out.append(userinfo);
    }
    rest = rest.substr(at);
  }
  const size_t q = rest.find('?');
  if (q == std::string_view::npos) return out.append(rest);
  out.append(rest.substr(0, q + 1));
  std::string_view query = rest.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = std::min(query.find('&'), query.size());
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (eq != std::string_view::npos && is_secret_key(pair.substr(0, eq))) {
      out.append(pair.substr(0, eq + 1)).append("***");
    } else {
      out.append(pair);
    }
    if (amp < query.size()) out.push_back('&');
    query = amp < query.size() ? query.substr(amp + 1) : std::string_view();
  }
  return out;
}

}  // namespace

std::string normalize_pin(std::string_view pin) {
  std::string out;
  out.reserve(pin.size());
  for (char c : pin) {
    if (c == ':') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> validate_options(const db::OpenOptions& o) {
  std::vector<std::pair<std::string, std::string>> problems;
  for (const auto& [key, value] : o.options) {
    problems.emplace_back(key,
                          "unknown option \"" + key + "\": the postgresql driver takes no options");
  }
  const Parsed parsed = parse_conninfo(o.connection);
  if (!parsed.ok) {
    problems.emplace_back("connection", "invalid libpq connection string: " + parsed.error);
  } else {
    for (const auto& key : parsed.keys) {
      if (is_tls_key(key)) {
        problems.emplace_back("connection",
                              "connection sets " + key +
                                  ": TLS to the backend comes from the database entry's tls block");
      }
    }
  }
  if (parsed.ok && parsed.keys.count("channel_binding") != 0 && !o.tls_ca.empty() &&
      parsed.channel_binding != "require" && parsed.channel_binding != "prefer") {
    problems.emplace_back("connection",
                          "channel_binding=" + parsed.channel_binding +
                              ": with TLS to the backend it is require (the default) or prefer");
  }
  for (const auto& pin : o.tls_pins) {
    const std::string p = normalize_pin(pin);
    if (p.size() != 64 || !is_hex(p)) {
      problems.emplace_back("tls.pin_sha256",
                            "pin \"" + pin + "\" is not a SHA-256 (64 hex digits, colons allowed)");
    }
  }
  if (!o.tls_pins.empty() && o.tls_ca.empty()) {
    problems.emplace_back("tls.pin_sha256", "pins need tls.ca: there is no TLS without a CA");
  }
  return problems;
}

ConnectParams connect_params(const db::OpenOptions& o) {
  const Parsed parsed = parse_conninfo(o.connection);
  auto set = [&](std::string_view key) { return parsed.keys.count(std::string(key)) != 0; };
  ConnectParams p;
  auto add = [&](std::string key, std::string value) {
    p.pairs.emplace_back(std::move(key), std::move(value));
  };
  // The conninfo first: later keywords override what it sets.
  add("dbname", o.connection);
  if (!o.password.empty()) add("password", o.password);
  // A vanished server is noticed in about a minute: 30 s idle, then 3 probes 10 s apart.
  if (!set("keepalives")) add("keepalives", "1");
  if (!set("keepalives_idle")) add("keepalives_idle", "30");
  if (!set("keepalives_interval")) add("keepalives_interval", "10");
  if (!set("keepalives_count")) add("keepalives_count", "3");
  if (!set("connect_timeout")) add("connect_timeout", "10");
  // The contract's Text is UTF-8.
  if (!set("client_encoding")) add("client_encoding", "UTF8");
  if (o.tls_ca.empty()) {
    add("sslmode", "disable");
  } else {
    add("sslmode", "verify-full");
    add("sslrootcert", o.tls_ca);
    add("ssl_min_protocol_version", "TLSv1.3");
    // GSSAPI encryption would be tried before TLS when a Kerberos ticket exists.
    add("gssencmode", "disable");
    // SCRAM-SHA-256-PLUS only (libpq refuses any other method before it sends
    // a thing), unless the conninfo says channel_binding=prefer.
    if (!set("channel_binding")) add("channel_binding", "require");
  }
  for (const auto& [k, v] : p.pairs) {
    p.keywords.push_back(k.c_str());
    p.values.push_back(v.c_str());
  }
  p.keywords.push_back(nullptr);
  p.values.push_back(nullptr);
  return p;
}

std::string redact_conninfo(std::string_view s) {
  for (std::string_view scheme : {"postgresql://", "postgres://"}) {
    if (s.substr(0, scheme.size()) == scheme) return redact_uri(s, scheme.size());
  }
  // key = value pairs (libpq's grammar): values are 'quoted' with \ escapes, or
  // run to the next whitespace with \ escapes.
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const size_t key_start = i;
    while (i < s.size() && is_space(s[i]))
      ++i;
    const size_t k0 = i;
    while (i < s.size() && s[i] != '=' && !is_space(s[i]))
      ++i;
    const std::string_view key = s.substr(k0, i - k0);
    while (i < s.size() && is_space(s[i]))
      ++i;
    if (i >= s.size() || s[i] != '=') {
      out.append(s.substr(key_start));  // malformed: libpq refuses it anyway
      break;
    }
    ++i;
    while (i < s.size() && is_space(s[i]))
      ++i;
    out.append(s.substr(key_start, i - key_start));
    const size_t v0 = i;
    if (i < s.size() && s[i] == '\'') {
      ++i;
      while (i < s.size() && s[i] != '\'') {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        ++i;
      }
      if (i < s.size()) ++i;
    } else {
      while (i < s.size() && !is_space(s[i])) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        ++i;
      }
    }
    if (is_secret_key(key)) {
      out.append("***");
    } else {
      out.append(s.substr(v0, i - v0));
    }
  }
  return out;
}

}  // namespace wirepool::postgresql
