// The schema of DESIGN.md's "Configuration (YAML)" (docs/configuration.md is the
// reference). One pass reads the file into a Config, keeping defaults where a
// key is absent or bad; then the checks that need the whole file run: paths,
// TLS resolution, duplicates, cross references, the driver validator, and the
// refusal of what this version does not implement.

#include "config/loader.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <map>
#include <optional>

#include "config/reader.hpp"

namespace wirepool::config {

namespace {

namespace fs = std::filesystem;

constexpr int kDefaultPostgresPort = 6432;
constexpr int kDefaultTdsPort = 11433;
constexpr int kDefaultHttpPort = 9930;
constexpr int kMaxThreads = 1024;
/// Bound of the connection and table counts under `server` (beyond any file
/// descriptor limit, and small enough for their arithmetic).
constexpr int64_t kMaxCount = 1'000'000'000;
constexpr uint64_t kMaxValueSize = 1ull << 30;  // PostgreSQL's own field limit
/// Peer ids fill 8 bits of a cancel key's process id (server/server.cpp).
constexpr int kMaxPeerId = 255;
constexpr std::string_view kNeedsCertificate =
    "needs a certificate: set tls.certificate/tls.key or tls.generate: true";

const std::vector<std::string_view> kDrivers = {"sqlite", "postgresql", "mysql", "odbc", "tds"};
/// spdlog's level names (spdlog::level::from_str accepts each).
const std::vector<std::string_view> kLogLevels = {"trace", "debug",    "info", "warn",
                                                  "error", "critical", "off"};
/// The TLS 1.3 cipher suites (RFC 8446 appendix B.4); nothing older is accepted.
const std::vector<std::string_view> kTls13Suites = {
    "TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256"};

/// An address family byte and 16 address bytes, to compare listener addresses.
using AddressKey = std::array<uint8_t, 17>;

bool parse_address(const std::string& s, AddressKey& key) {
  key.fill(0);
  if (inet_pton(AF_INET, s.c_str(), key.data() + 1) == 1) return true;
  key[0] = 6;
  return inet_pton(AF_INET6, s.c_str(), key.data() + 1) == 1;
}

bool is_env_name(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

/// Decoded length of padded base64 (RFC 4648 section 4), or -1 if malformed.
long base64_length(std::string_view s) {
  if (s.empty() || s.size() % 4 != 0) return -1;
  size_t pad = 0;
  while (pad < 2 && s[s.size() - 1 - pad] == '=')
    ++pad;
  for (size_t i = 0; i < s.size() - pad; ++i) {
    char c = s[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/';
    if (!ok) return -1;
  }
  return static_cast<long>(s.size() / 4 * 3 - pad);
}

/// Checks the shape of a SCRAM verifier as PostgreSQL stores it in pg_authid:
/// "SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>", base64 salt and
/// 32-byte keys. Answers "" if well formed, else what is wrong.
std::string check_scram(std::string_view s) {
  constexpr std::string_view kPrefix = "SCRAM-SHA-256$";
  const std::string shape =
      "expected SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> with base64 salt and "
      "keys, as PostgreSQL stores it in pg_authid";
  if (s.substr(0, kPrefix.size()) != kPrefix) return "must start with \"SCRAM-SHA-256$\"";
  s.remove_prefix(kPrefix.size());
  const auto dollar = s.find('$');
  if (dollar == std::string_view::npos) return shape;
  const std::string_view head = s.substr(0, dollar), keys = s.substr(dollar + 1);
  const auto colon1 = head.find(':'), colon2 = keys.find(':');
  if (colon1 == std::string_view::npos || colon2 == std::string_view::npos) return shape;
  const std::string_view iterations = head.substr(0, colon1);
  int count = 0;
  auto [end, ec] = std::from_chars(iterations.data(), iterations.data() + iterations.size(), count);
  if (iterations.empty() || ec != std::errc() || end != iterations.data() + iterations.size() ||
      count < 1) {
    return "the iteration count must be a positive integer; " + shape;
  }
  if (base64_length(head.substr(colon1 + 1)) < 1) return "the salt is not base64; " + shape;
  if (base64_length(keys.substr(0, colon2)) != 32 || base64_length(keys.substr(colon2 + 1)) != 32) {
    return "StoredKey and ServerKey must each be base64 of 32 bytes; " + shape;
  }
  return "";
}

/// Makes `p` absolute against `base`, lexically normal, without a trailing slash.
/// Empty stays empty (= not set).
std::string resolve_path(const fs::path& base, const std::string& p) {
  if (p.empty()) return {};
  const fs::path full = fs::path(p).is_absolute() ? fs::path(p) : base / p;
  std::string s = full.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/')
    s.pop_back();
  return s;
}

std::string indexed(std::string_view list, size_t i) {
  return std::string(list) + "[" + std::to_string(i) + "]";
}

// Where things were written, for the checks that run once the whole file is read.
struct ListenerMarks {
  Location entry;
  std::optional<Location> protocol_key;
  std::optional<Location> tls_key;  ///< set when `tls` was written
  bool valid_address = false;
  AddressKey address{};
};

struct DatabaseMarks {
  Location entry;
  Location name, driver;
  bool name_ok = false, driver_ok = false, connection_ok = false;
  std::map<std::string, Location> option_keys;
  bool reset_query_written = false;
  std::optional<Location> tls_key;
  std::optional<Location> pin_key;    ///< tls.pin_sha256, when written
  std::optional<Location> auth_mode;  ///< auth.mode, when written
  std::optional<Location> auth_user;  ///< auth_user, when written
  std::optional<Location> hosts_key;
  std::optional<Location> replicas_key;
  std::optional<Location> read_only_key;
  std::optional<Location> route_key;             ///< read_only.route_transactions, when written
  std::optional<Location> route_statements_key;  ///< read_only.route_statements, when written
  /// An entry made from read_only: the path its messages name ("databases[0].read_only").
  std::string path;
};

struct UserMarks {
  Location name;
  bool name_ok = false;
  std::vector<std::pair<std::string, Location>> databases;
};

struct TlsMarks {
  std::optional<Location> certificate, key, generate, client_ca;  ///< set when written non-empty
};

class Loader : Reader {
 public:
  Loader(std::string file, fs::path config_dir)
      : Reader(std::move(file)), dir_(std::move(config_dir)) {}

  std::vector<Problem> run(Config& c, std::string_view yaml, DatabaseValidator validator);

 private:
  // The schema, one function per section.
  void read_root(const Entry& e, Config& c);
  void read_server(const Entry& e, Server& s);
  void read_log(const Entry& e, Server& s);
  void read_listener(const Entry& e, Listener& l, ListenerMarks& m);
  void read_tls(const Entry& e, Tls& t);
  void read_user(const Entry& e, User& u, UserMarks& m);
  void read_database(const Entry& e, Database& d, DatabaseMarks& m);
  void read_options(const Entry& e, Database& d, DatabaseMarks& m);
  void read_pool(const Entry& e, PoolSettings& p, DatabaseMarks& m);
  /// A `hosts:` or `replicas:` list of {host, port}.
  void read_hosts(const Entry& v, std::vector<Host>& out, std::string_view if_empty);
  /// A `*password_env` value: an environment variable name, or empty for none.
  std::optional<std::string> read_env_name(const Entry& e);

  // Checks over the whole file.
  void resolve_paths(Config& c);
  void check_tls(Config& c);
  void check_listeners(Config& c);
  void check_databases(Config& c, DatabaseValidator validator);
  /// Each read_only.name becomes an entry of its own (Database::reads_of), so
  /// that it has its own pools, permissions and checks like any other.
  void add_read_only_entries(Config& c);
  void check_users(const Config& c);
  void check_peers(const Config& c);
  void check_server(Config& c);

  fs::path dir_;
  Location root_;
  bool listeners_written_ = false;
  TlsMarks tls_;
  std::vector<ListenerMarks> listeners_;
  std::vector<DatabaseMarks> databases_;
  std::vector<UserMarks> users_;
  std::vector<Location> peers_;  ///< where each peer entry starts
  std::optional<Location> peer_id_;
  std::optional<Location> pending_per_address_;
};

/// Assigns an optional value read from the file, keeping the default on nullopt.
template <typename T, typename V>
void set(T& target, const std::optional<V>& value) {
  if (value) target = static_cast<T>(*value);
}

// ---- the schema --------------------------------------------------------------------

void Loader::read_root(const Entry& e, Config& c) {
  bool databases_written = false, users_written = false;
  const Fields fields = {
      {"server", [&](const Entry& v) { read_server(v, c.server); }},
      {"listeners",
       [&](const Entry& v) {
         listeners_written_ = true;
         const bool ok = read_list(v, [&](const Entry& item) {
           read_listener(item, c.listeners.emplace_back(), listeners_.emplace_back());
         });
         if (ok && c.listeners.empty()) {
           problem(location_of(v.value),
                   "listeners is an empty list; omit the key for the default listener "
                   "(postgres on 127.0.0.1:6432)");
         }
       }},
      {"tls", [&](const Entry& v) { read_tls(v, c.tls); }},
      {"users",
       [&](const Entry& v) {
         users_written = true;
         const bool ok = read_list(v, [&](const Entry& item) {
           read_user(item, c.users.emplace_back(), users_.emplace_back());
         });
         if (ok && c.users.empty()) {
           problem(location_of(v.value), "users is an empty list; add at least one user");
         }
       }},
      {"peers",
       [&](const Entry& v) {
         read_list(v, [&](const Entry& item) {
           Peer& p = c.peers.emplace_back();
           const Location at = location_of(item.value);
           p.line = at.line;
           peers_.push_back(at);
           bool id_written = false, address_written = false;
           const Fields peer_fields = {
               {"id",
                [&](const Entry& x) {
                  id_written = true;
                  set(p.id, read_int(x, 1, kMaxPeerId));
                }},
               {"address",
                [&](const Entry& x) {
                  address_written = true;
                  auto a = read_string(x);
                  AddressKey key;
                  if (a && !parse_address(*a, key)) {
                    problem(location_of(x.value),
                            x.path + " must be an IPv4 or IPv6 address, got " + in_quotes(*a));
                  } else if (a) {
                    p.address = *a;
                  }
                }},
               {"port", [&](const Entry& x) { set(p.port, read_int(x, 1, 65535)); }},
           };
           if (!read_map(item, peer_fields)) return;
           if (!id_written) problem(at, item.path + " is missing the required key \"id\"");
           if (!address_written) {
             problem(at, item.path + " is missing the required key \"address\"");
           }
         });
       }},
      {"databases",
       [&](const Entry& v) {
         databases_written = true;
         const bool ok = read_list(v, [&](const Entry& item) {
           read_database(item, c.databases.emplace_back(), databases_.emplace_back());
         });
         if (ok && c.databases.empty()) {
           problem(location_of(v.value), "databases is an empty list; add at least one database");
         }
       }},
  };
  if (!e.value.IsNull()) {
    if (!e.value.IsMap()) {
      problem(root_,
              "expected a map of sections (server, listeners, tls, users, databases) at "
              "the top level");
      return;
    }
    read_map(e, fields);
  }
  if (!databases_written) {
    problem(root_, "missing the required key \"databases\" (a list of {name, driver, connection})");
  }
  if (!users_written) {
    problem(root_, "missing the required key \"users\" (a list of {name, password or scram})");
  }
}

void Loader::read_server(const Entry& e, Server& s) {
  const Fields fields = {
      {"threads", [&](const Entry& v) { set(s.threads, read_int(v, 0, kMaxThreads)); }},
      {"state_dir", [&](const Entry& v) { set(s.state_dir, read_nonempty(v)); }},
      {"log", [&](const Entry& v) { read_log(v, s); }},
      {"max_clients",
       [&](const Entry& v) {
         set(s.max_clients, read_int(v, 1, std::numeric_limits<int64_t>::max()));
       }},
      {"admin_reserved_clients",
       [&](const Entry& v) { set(s.admin_reserved_clients, read_int(v, 0, kMaxCount)); }},
      {"max_pending_logins",
       [&](const Entry& v) { set(s.max_pending_logins, read_int(v, 1, kMaxCount)); }},
      {"max_pending_logins_per_address",
       [&](const Entry& v) {
         pending_per_address_ = location_of(v.value);
         set(s.max_pending_logins_per_address, read_int(v, 1, kMaxCount));
       }},
      {"login_failure_burst",
       [&](const Entry& v) { set(s.login_failure_burst, read_int(v, 1, kMaxCount)); }},
      {"login_failure_interval",
       [&](const Entry& v) {
         set(s.login_failure_interval,
             read_nonzero_duration(v, "failed logins are always throttled"));
       }},
      {"login_throttle_entries",
       [&](const Entry& v) { set(s.login_throttle_entries, read_int(v, 16, kMaxCount)); }},
      {"max_message_size",
       [&](const Entry& v) {
         auto n = read_size(v);
         if (n && *n == 0) {
           problem(location_of(v.value), v.path + " must be greater than 0");
         } else {
           set(s.max_message_size, n);
         }
       }},
      {"max_value_size",
       [&](const Entry& v) {
         auto n = read_size(v);
         if (n && (*n == 0 || *n > kMaxValueSize)) {
           problem(location_of(v.value), v.path + " must be between 1 and 1GiB");
         } else {
           set(s.max_value_size, n);
         }
       }},
      {"login_timeout",
       [&](const Entry& v) {
         set(s.login_timeout, read_nonzero_duration(v, "a login is always bounded"));
       }},
      {"client_idle_timeout",
       [&](const Entry& v) { set(s.client_idle_timeout, read_duration(v)); }},
      {"idle_in_transaction_timeout",
       [&](const Entry& v) { set(s.idle_in_transaction_timeout, read_duration(v)); }},
      {"query_timeout", [&](const Entry& v) { set(s.query_timeout, read_duration(v)); }},
      {"shutdown_grace", [&](const Entry& v) { set(s.shutdown_grace, read_duration(v)); }},
      {"peer_id",
       [&](const Entry& v) {
         peer_id_ = location_of(v.value);
         set(s.peer_id, read_int(v, 0, kMaxPeerId));
       }},
  };
  read_map(e, fields);
}

void Loader::read_log(const Entry& e, Server& s) {
  const Fields fields = {
      {"level", [&](const Entry& v) { set(s.log_level, read_one_of(v, kLogLevels)); }},
      {"format",
       [&](const Entry& v) {
         set(s.log_format,
             read_choice<LogFormat>(v, {{"text", LogFormat::text}, {"json", LogFormat::json}}));
       }},
  };
  read_map(e, fields);
}

void Loader::read_listener(const Entry& e, Listener& l, ListenerMarks& m) {
  m.entry = location_of(e.value);
  l.line = m.entry.line;
  bool address_written = false, port_written = false;
  const Fields fields = {
      {"protocol",
       [&](const Entry& v) {
         m.protocol_key = location_of(v.key);
         set(l.protocol, read_choice<Protocol>(v, {{"postgres", Protocol::postgres},
                                                   {"tds", Protocol::tds},
                                                   {"http", Protocol::http}}));
       }},
      {"address",
       [&](const Entry& v) {
         address_written = true;
         auto a = read_string(v);
         if (!a) return;
         if (!parse_address(*a, m.address)) {
           problem(location_of(v.value), v.path +
                                             " must be an IPv4 or IPv6 address (127.0.0.1, ::1, "
                                             "0.0.0.0, ::), got " +
                                             in_quotes(*a));
           return;
         }
         l.address = *a;
         m.valid_address = true;
       }},
      {"port",
       [&](const Entry& v) {
         port_written = true;
         set(l.port, read_int(v, 0, 65535));
       }},
      {"reuse_port", [&](const Entry& v) { set(l.reuse_port, read_bool(v)); }},
      {"tls",
       [&](const Entry& v) {
         m.tls_key = location_of(v.key);
         set(l.tls, read_choice<TlsMode>(v, {{"off", TlsMode::off},
                                             {"optional", TlsMode::optional},
                                             {"required", TlsMode::required}}));
       }},
      {"allow",
       [&](const Entry& v) {
         const bool ok = read_list(v, [&](const Entry& item) {
           auto s = read_string(item);
           if (!s) return;
           if (auto cidr = parse_cidr(*s)) {
             l.allow.push_back(*cidr);
           } else {
             problem(location_of(item.value),
                     item.path + ": malformed network " + in_quotes(*s) +
                         "; expected an IPv4 or IPv6 address with an optional /prefix "
                         "(127.0.0.0/8, 10.1.2.3, ::1/128)");
           }
         });
         if (ok && v.value.size() == 0) {
           problem(location_of(v.value), v.path +
                                             " is an empty list, which would admit nobody; omit "
                                             "the key to admit any address");
         }
       }},
  };
  read_map(e, fields);
  if (!address_written) m.valid_address = parse_address(l.address, m.address);
  if (!port_written) {
    l.port = l.protocol == Protocol::tds    ? kDefaultTdsPort
             : l.protocol == Protocol::http ? kDefaultHttpPort
                                            : kDefaultPostgresPort;
  }
}

void Loader::read_tls(const Entry& e, Tls& t) {
  // A path key written as "" is the same as an absent one.
  auto path_field = [this](std::string& target, std::optional<Location>& mark) {
    return [this, t = &target, at = &mark](const Entry& v) {
      set(*t, read_string(v));
      if (!t->empty()) *at = location_of(v.key);
    };
  };
  const Fields fields = {
      {"certificate", path_field(t.certificate, tls_.certificate)},
      {"key", path_field(t.key, tls_.key)},
      {"generate",
       [&](const Entry& v) {
         tls_.generate = location_of(v.key);
         set(t.generate, read_bool(v));
       }},
      {"ciphersuites",
       [&](const Entry& v) {
         auto s = read_nonempty(v);
         if (!s) return;
         std::string_view rest = *s;
         for (bool more = true; more;) {
           const auto colon = rest.find(':');
           const std::string_view suite = rest.substr(0, colon);
           if (std::find(kTls13Suites.begin(), kTls13Suites.end(), suite) == kTls13Suites.end()) {
             problem(location_of(v.value),
                     v.path + ": unknown TLS 1.3 cipher suite " + in_quotes(suite) +
                         "; expected a colon-separated list of " + one_of(kTls13Suites));
             return;
           }
           more = colon != std::string_view::npos;
           if (more) rest.remove_prefix(colon + 1);
         }
         t.ciphersuites = *s;
       }},
      {"client_ca", path_field(t.client_ca, tls_.client_ca)},
  };
  read_map(e, fields);
}

void Loader::read_user(const Entry& e, User& u, UserMarks& m) {
  std::optional<Location> password_key, scram_key;
  bool name_written = false;
  const Fields fields = {
      {"name",
       [&](const Entry& v) {
         name_written = true;
         m.name = location_of(v.value);
         set(u.name, read_nonempty(v));
         m.name_ok = !u.name.empty();
       }},
      {"password",
       [&](const Entry& v) {
         password_key = location_of(v.key);
         set(u.password, read_nonempty(v));
       }},
      {"scram",
       [&](const Entry& v) {
         scram_key = location_of(v.key);
         auto s = read_nonempty(v);
         if (!s) return;
         if (const std::string error = check_scram(*s); !error.empty()) {
           problem(location_of(v.value), v.path + ": malformed SCRAM verifier: " + error);
           return;
         }
         u.scram = *s;
       }},
      {"admin", [&](const Entry& v) { set(u.admin, read_bool(v)); }},
      {"databases",
       [&](const Entry& v) {
         const bool ok = read_list(v, [&](const Entry& item) {
           if (auto s = read_nonempty(item)) {
             u.databases.push_back(*s);
             m.databases.emplace_back(*s, location_of(item.value));
           }
         });
         if (ok && v.value.size() == 0) {
           problem(location_of(v.value), v.path +
                                             " is an empty list, which would allow no database; "
                                             "omit the key to allow all");
         }
       }},
      {"client_cert_pins", [&](const Entry& v) { u.client_cert_pins = read_pins(v); }},
  };
  if (!read_map(e, fields)) return;
  const Location entry = location_of(e.value);
  if (!name_written) problem(entry, e.path + " is missing the required key \"name\"");
  if (password_key && scram_key) {
    problem(*scram_key, e.path + " sets both password and scram; set exactly one");
  } else if (!password_key && !scram_key) {
    problem(entry, e.path +
                       " has no credential: set password (plaintext, for development) or "
                       "scram");
  }
}

void Loader::read_database(const Entry& e, Database& d, DatabaseMarks& m) {
  m.entry = location_of(e.value);
  d.line = m.entry.line;
  bool name_written = false, driver_written = false, connection_written = false;
  const Fields fields = {
      {"name",
       [&](const Entry& v) {
         name_written = true;
         m.name = location_of(v.value);
         set(d.name, read_nonempty(v));
         m.name_ok = !d.name.empty();
       }},
      {"driver",
       [&](const Entry& v) {
         driver_written = true;
         m.driver = location_of(v.value);
         set(d.driver, read_nonempty(v));
         m.driver_ok = !d.driver.empty();
       }},
      {"connection",
       [&](const Entry& v) {
         connection_written = true;
         set(d.connection, read_nonempty(v));
         m.connection_ok = !d.connection.empty();
       }},
      {"password_env", [&](const Entry& v) { set(d.password_env, read_env_name(v)); }},
      {"password_file", [&](const Entry& v) { set(d.password_file, read_string(v)); }},
      {"options", [&](const Entry& v) { read_options(v, d, m); }},
      {"auth_user",
       [&](const Entry& v) {
         m.auth_user = location_of(v.value);
         set(d.auth_query.user, read_nonempty(v));
       }},
      {"auth_password_env",
       [&](const Entry& v) { set(d.auth_query.password_env, read_env_name(v)); }},
      {"auth_password_file",
       [&](const Entry& v) { set(d.auth_query.password_file, read_string(v)); }},
      {"auth_query", [&](const Entry& v) { set(d.auth_query.query, read_nonempty(v)); }},
      {"auth_query_timeout",
       [&](const Entry& v) {
         auto t = read_duration(v);
         if (t && t->count() == 0) {
           problem(location_of(v.value), v.path + " must be above 0");
           return;
         }
         set(d.auth_query.timeout, t);
       }},
      {"auth_cache_ttl", [&](const Entry& v) { set(d.auth_query.ttl, read_duration(v)); }},
      {"auth_negative_ttl",
       [&](const Entry& v) { set(d.auth_query.negative_ttl, read_duration(v)); }},
      {"auth_cache_size",
       [&](const Entry& v) { set(d.auth_query.cache_size, read_int(v, 1, int64_t{1} << 24)); }},
      {"pool", [&](const Entry& v) { read_pool(v, d.pool, m); }},
      {"auth",
       [&](const Entry& v) {
         const Fields auth_fields = {
             {"mode",
              [&](const Entry& a) {
                m.auth_mode = location_of(a.value);
                set(d.auth, read_choice<AuthMode>(a, {{"fixed", AuthMode::fixed},
                                                      {"passthrough", AuthMode::passthrough}}));
              }},
         };
         read_map(v, auth_fields);
       }},
      {"hosts",
       [&](const Entry& v) {
         m.hosts_key = location_of(v.key);
         read_hosts(v, d.hosts, "omit the key to use the connection's host");
       }},
      {"replicas",
       [&](const Entry& v) {
         m.replicas_key = location_of(v.key);
         read_hosts(v, d.replicas, "omit the key");
       }},
      {"read_only",
       [&](const Entry& v) {
         m.read_only_key = location_of(v.key);
         ReadOnly& r = d.read_only;
         bool name_written = false;
         auto readmit_at = location_of(v.value);
         const Fields ro_fields = {
             {"name",
              [&](const Entry& x) {
                name_written = true;
                set(r.name, read_nonempty(x));
              }},
             {"max_replica_lag", [&](const Entry& x) { set(r.max_replica_lag, read_duration(x)); }},
             {"readmit_lag",
              [&](const Entry& x) {
                readmit_at = location_of(x.value);
                set(r.readmit_lag, read_duration(x));
              }},
             {"fallback",
              [&](const Entry& x) {
                set(r.fallback,
                    read_choice<ReadOnly::Fallback>(x, {{"primary", ReadOnly::Fallback::primary},
                                                        {"refuse", ReadOnly::Fallback::refuse}}));
              }},
             {"balance",
              [&](const Entry& x) {
                set(r.balance, read_choice<ReadOnly::Balance>(
                                   x, {{"least_connections", ReadOnly::Balance::least_connections},
                                       {"round_robin", ReadOnly::Balance::round_robin}}));
              }},
             {"route_transactions",
              [&](const Entry& x) {
                m.route_key = location_of(x.key);
                set(r.route_transactions, read_bool(x));
              }},
             {"route_statements",
              [&](const Entry& x) {
                m.route_statements_key = location_of(x.key);
                set(r.route_statements, read_bool(x));
              }},
         };
         if (!read_map(v, ro_fields)) return;
         if (r.readmit_lag > r.max_replica_lag) {
           problem(readmit_at, v.path + ".readmit_lag is above max_replica_lag");
         }
         if (!name_written) {
           problem(location_of(v.value),
                   v.path + " is missing the required key \"name\" (the read-only database)");
         }
       }},
      {"health_check",
       [&](const Entry& v) {
         HealthCheck& hc = d.health_check;
         auto positive = [&](Duration& target, const Entry& x) {
           auto dur = read_duration(x);
           if (dur && dur->count() < 10) {
             problem(location_of(x.value), x.path + " must be at least 10ms");
           } else {
             set(target, dur);
           }
         };
         const Fields hc_fields = {
             {"interval", [&](const Entry& x) { positive(hc.interval, x); }},
             {"failover_interval", [&](const Entry& x) { positive(hc.failover_interval, x); }},
             {"timeout", [&](const Entry& x) { positive(hc.timeout, x); }},
             {"ban_time", [&](const Entry& x) { positive(hc.ban_time, x); }},
             {"ban_time_max", [&](const Entry& x) { positive(hc.ban_time_max, x); }},
             {"failover_timeout", [&](const Entry& x) { positive(hc.failover_timeout, x); }},
             {"failures_to_ban",
              [&](const Entry& x) { set(hc.failures_to_ban, read_int(x, 1, 100)); }},
         };
         read_map(v, hc_fields);
         if (hc.ban_time_max < hc.ban_time) {
           problem(location_of(v.value), v.path + ": ban_time_max is less than ban_time");
         }
       }},
      {"tls",
       [&](const Entry& v) {
         m.tls_key = location_of(v.key);
         d.tls.present = true;
         const Fields tls_fields = {
             {"ca", [&](const Entry& c) { set(d.tls.ca, read_string(c)); }},
             {"pin_sha256",
              [&](const Entry& p) {
                m.pin_key = location_of(p.key);
                d.tls.pin_sha256 = read_pins(p);
              }},
         };
         read_map(v, tls_fields);
       }},
  };
  if (!read_map(e, fields)) return;
  const std::pair<bool, std::string_view> required[] = {
      {name_written, "name"}, {driver_written, "driver"}, {connection_written, "connection"}};
  for (const auto& [written, key] : required) {
    if (!written) problem(m.entry, e.path + " is missing the required key " + in_quotes(key));
  }
  if (!d.password_env.empty() && !d.password_file.empty()) {
    problem(m.entry, e.path + " sets both password_env and password_file; set at most one");
  }
  if (!d.auth_query.password_env.empty() && !d.auth_query.password_file.empty()) {
    problem(m.entry,
            e.path + " sets both auth_password_env and auth_password_file; set at most one");
  }
  if (!m.auth_user && (!d.auth_query.password_env.empty() || !d.auth_query.password_file.empty())) {
    problem(m.entry, e.path + " sets an auth_user password without auth_user");
  }
  if (m.auth_user && d.driver != "postgresql") {
    problem(*m.auth_user, e.path +
                              ".auth_user needs driver postgresql (users are looked up "
                              "with a PostgreSQL query), not " +
                              in_quotes(d.driver));
  }
}

void Loader::read_options(const Entry& e, Database& d, DatabaseMarks& m) {
  // Any names: the driver validator knows which it takes. Values are scalars,
  // kept as written ("5s", "100", "true").
  read_scalar_map(e, [&](const Entry& v) {
    const std::string& key = v.key.Scalar();
    m.option_keys.emplace(key, location_of(v.key));
    if (expect_scalar(v, "a scalar (text, a number, true or false)"))
      d.options[key] = v.value.Scalar();
  });
}

void Loader::read_hosts(const Entry& v, std::vector<Host>& out, std::string_view if_empty) {
  const bool ok = read_list(v, [&](const Entry& item) {
    Host& h = out.emplace_back();
    const Location at = location_of(item.value);
    h.line = at.line;
    bool host_written = false;
    const Fields host_fields = {
        {"host",
         [&](const Entry& x) {
           host_written = true;
           set(h.host, read_nonempty(x));
         }},
        {"port", [&](const Entry& x) { set(h.port, read_int(x, 1, 65535)); }},
    };
    if (!read_map(item, host_fields)) return;
    if (!host_written) problem(at, item.path + " is missing the required key \"host\"");
  });
  if (ok && out.empty())
    problem(location_of(v.value), v.path + " is an empty list; " + std::string(if_empty));
}

std::optional<std::string> Loader::read_env_name(const Entry& e) {
  auto s = read_string(e);
  if (s && !s->empty() && !is_env_name(*s)) {
    problem(location_of(e.value),
            e.path + " must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*), got " +
                in_quotes(*s));
    return std::nullopt;
  }
  return s;
}

void Loader::read_pool(const Entry& e, PoolSettings& p, DatabaseMarks& m) {
  std::optional<Location> min_at;
  const Fields fields = {
      {"mode",
       [&](const Entry& v) {
         set(p.mode, read_choice<PoolMode>(v, {{"session", PoolMode::session},
                                               {"transaction", PoolMode::transaction},
                                               {"statement", PoolMode::statement}}));
       }},
      {"min",
       [&](const Entry& v) {
         min_at = location_of(v.value);
         set(p.min, read_int(v, 0, std::numeric_limits<int>::max()));
       }},
      {"max", [&](const Entry& v) { set(p.max, read_int(v, 1, std::numeric_limits<int>::max())); }},
      {"acquire_timeout",
       [&](const Entry& v) {
         set(p.acquire_timeout,
             read_nonzero_duration(v, "waiting for a connection is always bounded"));
       }},
      {"idle_timeout", [&](const Entry& v) { set(p.idle_timeout, read_duration(v)); }},
      {"max_lifetime", [&](const Entry& v) { set(p.max_lifetime, read_duration(v)); }},
      {"pipeline", [&](const Entry& v) { set(p.pipeline, read_bool(v)); }},
      {"pipeline_max",
       [&](const Entry& v) {
         set(p.pipeline_max, read_int(v, 0, std::numeric_limits<int>::max()));
       }},
      {"max_db_connections",
       [&](const Entry& v) {
         set(p.max_db_connections, read_int(v, 0, std::numeric_limits<int>::max()));
       }},
      {"connect_backoff_max",
       [&](const Entry& v) {
         auto d = read_duration(v);
         if (d && *d < std::chrono::milliseconds(100)) {
           problem(
               location_of(v.value),
               v.path + " must be at least 100ms: the back-off after a failed open starts there");
         } else {
           set(p.connect_backoff_max, d);
         }
       }},
      {"reset_query",
       [&](const Entry& v) {
         m.reset_query_written = true;
         set(p.reset_query, read_string(v));
       }},
  };
  read_map(e, fields);
  if (p.min > p.max) {
    problem(min_at.value_or(location_of(e.value)), e.path + ": min (" + std::to_string(p.min) +
                                                       ") is greater than max (" +
                                                       std::to_string(p.max) + ")");
  }
}

// ---- checks over the whole file ------------------------------------------------------

void Loader::resolve_paths(Config& c) {
  // state_dir is relative to the file's directory; every other path to state_dir.
  c.server.state_dir = resolve_path(dir_, c.server.state_dir);
  const fs::path state(c.server.state_dir);
  c.tls.certificate = resolve_path(state, c.tls.certificate);
  c.tls.key = resolve_path(state, c.tls.key);
  c.tls.client_ca = resolve_path(state, c.tls.client_ca);
  for (auto& db : c.databases) {
    db.password_file = resolve_path(state, db.password_file);
    db.auth_query.password_file = resolve_path(state, db.auth_query.password_file);
    db.tls.ca = resolve_path(state, db.tls.ca);
  }
}

void Loader::check_tls(Config& c) {
  Tls& t = c.tls;
  if (t.certificate.empty() != t.key.empty()) {
    const Location where = tls_.certificate ? *tls_.certificate : *tls_.key;
    problem(where, "tls.certificate and tls.key go together: set both or neither");
  }
  if (t.generate && t.certificate.empty() && t.key.empty()) {
    // Where the self-signed pair is created on first start.
    t.certificate = (fs::path(c.server.state_dir) / "tls" / "server.crt").string();
    t.key = (fs::path(c.server.state_dir) / "tls" / "server.key").string();
  }
  t.present = !t.certificate.empty() || t.generate;
  t.client_pins = std::any_of(c.users.begin(), c.users.end(),
                              [](const User& u) { return !u.client_cert_pins.empty(); });
  if (!t.client_ca.empty() && !t.present) {
    problem(*tls_.client_ca,
            "tls.client_ca (client certificates) " + std::string(kNeedsCertificate));
  }
}

void Loader::check_listeners(Config& c) {
  if (!listeners_written_) {
    Listener l;
    l.port = kDefaultPostgresPort;
    c.listeners.push_back(l);
    ListenerMarks& m = listeners_.emplace_back();
    m.valid_address = parse_address(l.address, m.address);
  }
  std::map<std::pair<AddressKey, int>, int> bound;  // (address, port) -> line
  for (size_t i = 0; i < c.listeners.size(); ++i) {
    Listener& l = c.listeners[i];
    const ListenerMarks& m = listeners_[i];
    const std::string path = indexed("listeners", i);
    if (l.protocol == Protocol::tds) {
      // TDS 8.0 strict: TLS 1.3 before the first TDS byte, always.
      if (!c.tls.present) {
        problem(m.entry, path + ": the TDS listener " + std::string(kNeedsCertificate));
      }
      if (m.tls_key && l.tls != TlsMode::required) {
        problem(*m.tls_key, path +
                                ".tls: the TDS listener always uses TLS (TDS 8.0 strict); "
                                "write required or omit the key");
      }
      l.tls = TlsMode::required;
    } else if (!m.tls_key) {
      l.tls = c.tls.present ? TlsMode::optional : TlsMode::off;
    } else if (l.tls != TlsMode::off && !c.tls.present) {
      problem(*m.tls_key, path + ".tls: " + std::string(to_string(l.tls)) + " " +
                              std::string(kNeedsCertificate));
    }
    // Port 0 asks for an ephemeral port: any number of those can share an address.
    if (l.port != 0 && m.valid_address) {
      auto [first, fresh] = bound.emplace(std::make_pair(m.address, l.port), m.entry.line);
      if (!fresh) {
        problem(m.entry, path + ": " + l.address + " port " + std::to_string(l.port) +
                             " is already used by the listener at line " +
                             std::to_string(first->second));
      }
    }
  }
}

void Loader::add_read_only_entries(Config& c) {
  const size_t written = c.databases.size();
  for (size_t i = 0; i < written; ++i) {
    if (c.databases[i].read_only.name.empty()) continue;
    Database ro = c.databases[i];
    DatabaseMarks m = databases_[i];
    ro.name = ro.read_only.name;
    ro.reads_of = c.databases[i].name;
    m.name = m.read_only_key.value_or(m.name);
    m.replicas_key.reset();
    m.read_only_key.reset();
    m.route_key.reset();
    m.path = indexed("databases", i) + ".read_only";
    c.databases.push_back(std::move(ro));
    databases_.push_back(std::move(m));
  }
}

void Loader::check_databases(Config& c, DatabaseValidator validator) {
  std::map<std::string, int> names;  // -> line
  for (size_t i = 0; i < c.databases.size(); ++i) {
    Database& db = c.databases[i];
    const DatabaseMarks& m = databases_[i];
    const std::string path = m.path.empty() ? indexed("databases", i) : m.path;
    if (m.name_ok) {
      auto [first, fresh] = names.emplace(db.name, m.name.line);
      if (!fresh) {
        problem(m.name, path + ".name: duplicate database name " + in_quotes(db.name) +
                            " (first declared at line " + std::to_string(first->second) + ")");
      }
    }
    if (!m.reset_query_written && db.driver == "postgresql" && db.pool.mode == PoolMode::session) {
      db.pool.reset_query = "DISCARD ALL";
    }
    // MariaDB Connector/C takes no OpenSSL context and exposes no peer
    // certificate, so the mysql driver cannot check a SHA-256 pin: refused, never
    // silently ignored (tls.ca still verifies the chain and the host name).
    if (m.driver_ok && db.driver == "mysql" && m.pin_key && !db.tls.pin_sha256.empty()) {
      problem(*m.pin_key, path + ".tls.pin_sha256: the mysql driver cannot check a SHA-256 pin " +
                              "(MariaDB Connector/C exposes no peer certificate); " +
                              "verify the backend with tls.ca");
    }
    // Passthrough logs in as the client's role: SQLite has no roles.
    if (m.driver_ok && m.auth_mode && db.auth == AuthMode::passthrough && db.driver == "sqlite") {
      problem(*m.auth_mode, path + ".auth.mode: passthrough needs a driver with database roles; " +
                                "sqlite has none; use mode: fixed");
    }
    if (db.auth == AuthMode::passthrough && m.auth_user) {
      problem(*m.auth_user, path + ".auth_user has no use with auth.mode passthrough: the " +
                                "backend itself checks each client's password; remove one");
    }
    if (db.auth == AuthMode::passthrough && db.pool.min > 0) {
      problem(*m.auth_mode, path + ".auth.mode: passthrough cannot keep pool.min connections: " +
                                "it has a role's password only while that role has clients");
    }
    const bool multi = db.driver == "postgresql" || db.driver == "mysql";
    if (m.driver_ok && m.hosts_key && !multi) {
      problem(*m.hosts_key,
              path + ".hosts: only the postgresql and mysql drivers take several hosts");
    }
    if (m.driver_ok && m.replicas_key && !multi) {
      problem(*m.replicas_key,
              path + ".replicas: only the postgresql and mysql drivers take replicas");
    }
    if (m.driver_ok && m.read_only_key && !multi) {
      problem(*m.read_only_key,
              path + ".read_only: only the postgresql and mysql drivers have read replicas");
    }
    if (m.driver_ok && m.route_key && db.read_only.route_transactions &&
        (db.driver != "postgresql" || db.pool.mode != PoolMode::transaction)) {
      problem(*m.route_key, path +
                                ".read_only.route_transactions: only a postgresql database in "
                                "transaction pool mode routes its read-only transactions");
    }
    if (m.driver_ok && m.route_statements_key && db.read_only.route_statements &&
        (db.driver != "postgresql" || db.pool.mode != PoolMode::transaction)) {
      problem(*m.route_statements_key,
              path +
                  ".read_only.route_statements: only a postgresql database in "
                  "transaction pool mode routes its read-only statements");
    }
    if (m.replicas_key && !db.replicas.empty() && db.read_only.name.empty()) {
      problem(*m.replicas_key, path +
                                   ".replicas: nothing reads from them without read_only.name "
                                   "(the read-only database's name)");
    }
    // The driver checks need a complete entry; an incomplete one is reported already.
    if (!m.name_ok || !m.driver_ok || !m.connection_ok) continue;
    if (validator == nullptr) {
      if (std::find(kDrivers.begin(), kDrivers.end(), db.driver) == kDrivers.end()) {
        problem(m.driver, path + ".driver must be one of " + one_of(kDrivers) + ", got " +
                              in_quotes(db.driver));
      }
      continue;
    }
    // The server's validator knows the drivers of this build and their options.
    for (const auto& [key, message] : validator(db)) {
      if (key.empty()) {
        problem(m.entry, path + " (" + db.name + "): " + message);
        continue;
      }
      const auto found = m.option_keys.find(key);
      problem(found != m.option_keys.end() ? found->second : m.entry,
              path + ".options." + key + ": " + message);
    }
  }
}

void Loader::check_peers(const Config& c) {
  std::map<int, int> ids;  // id -> line
  for (size_t i = 0; i < c.peers.size(); ++i) {
    const Peer& p = c.peers[i];
    if (p.id == 0) continue;  // already reported
    const std::string path = indexed("peers", i);
    auto [first, fresh] = ids.emplace(p.id, p.line);
    if (!fresh) {
      problem(peers_[i], path + ": duplicate peer id " + std::to_string(p.id) +
                             " (first declared at line " + std::to_string(first->second) + ")");
    }
    if (p.id == c.server.peer_id) {
      problem(peers_[i],
              path + ": peer id " + std::to_string(p.id) + " is this process's own server.peer_id");
    }
  }
  if (!c.peers.empty() && c.server.peer_id == 0) {
    problem(peer_id_.value_or(peers_.front()),
            "peers needs server.peer_id (1-255): this process's own id, carried in its cancel "
            "keys");
  }
}

void Loader::check_server(Config& c) {
  Server& s = c.server;
  if (!pending_per_address_) {
    s.max_pending_logins_per_address =
        std::min(s.max_pending_logins_per_address, s.max_pending_logins);
  } else if (s.max_pending_logins_per_address > s.max_pending_logins) {
    problem(*pending_per_address_, "server.max_pending_logins_per_address (" +
                                       std::to_string(s.max_pending_logins_per_address) +
                                       ") is greater than server.max_pending_logins (" +
                                       std::to_string(s.max_pending_logins) + ")");
  }
}

void Loader::check_users(const Config& c) {
  std::map<std::string, int> names;  // -> line
  for (size_t i = 0; i < c.users.size(); ++i) {
    const User& u = c.users[i];
    const UserMarks& m = users_[i];
    const std::string path = indexed("users", i);
    if (m.name_ok) {
      auto [first, fresh] = names.emplace(u.name, m.name.line);
      if (!fresh) {
        problem(m.name, path + ".name: duplicate user name " + in_quotes(u.name) +
                            " (first declared at line " + std::to_string(first->second) + ")");
      }
    }
    for (size_t j = 0; j < m.databases.size(); ++j) {
      const auto& [name, where] = m.databases[j];
      if (c.find_database(name) == nullptr) {
        problem(where, indexed(path + ".databases", j) + ": no database named " + in_quotes(name) +
                           " in databases");
      }
    }
  }
}

std::vector<Problem> Loader::run(Config& c, std::string_view yaml, DatabaseValidator validator) {
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(std::string(yaml));
  } catch (const YAML::Exception& ex) {
    problem(location_of(ex.mark), "YAML syntax error: " + ex.msg);
    return std::move(problems());
  }
  const YAML::Node root = documents.empty() ? YAML::Node() : documents.front();
  root_ = documents.empty() ? Location{} : location_of(root);
  if (documents.size() > 1) {
    problem(location_of(documents[1]), "only one YAML document is allowed in a configuration file");
  }
  read_root(Entry{root, root, ""}, c);
  resolve_paths(c);
  check_tls(c);
  check_listeners(c);
  add_read_only_entries(c);
  check_databases(c, validator);
  check_users(c);
  check_server(c);
  check_peers(c);
  return std::move(problems());
}

}  // namespace

std::vector<Problem> load_into(Config& config, std::string_view yaml, const std::string& file,
                               const std::filesystem::path& config_dir,
                               DatabaseValidator validator) {
  return Loader(file, config_dir).run(config, yaml, validator);
}

}  // namespace wirepool::config
