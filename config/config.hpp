#pragma once
// The configuration: YAML schema, defaults, loading and validation.
// docs/configuration.md is the reference; every key of DESIGN.md is here with
// its default, so a short file is complete. Errors name file:line:column.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace wirepool::config {

using Duration = std::chrono::milliseconds;

enum class LogFormat : uint8_t { text, json };
enum class Protocol : uint8_t { postgres, tds, http };
enum class TlsMode : uint8_t { off, optional, required };
enum class PoolMode : uint8_t { session, transaction, statement };
/// Whose role a database's backend sessions log in as: the connection string's
/// (fixed) or each client's own, with the password the client gave (passthrough).
enum class AuthMode : uint8_t { fixed, passthrough };

std::string_view to_string(Protocol p);
std::string_view to_string(TlsMode m);
std::string_view to_string(PoolMode m);
std::string_view to_string(LogFormat f);

/// An IPv4 or IPv6 network in CIDR form.
struct Cidr {
  std::string text;  ///< as written ("127.0.0.0/8")
  bool v6 = false;
  uint8_t addr[16] = {};  ///< network address (first 4 bytes for IPv4)
  int prefix = 0;
  /// True if `address` (4 or 16 bytes, network order) lies in this network.
  /// An IPv4-mapped IPv6 address matches IPv4 networks.
  bool contains(const uint8_t* address, bool address_v6) const;
};

struct Server {
  int threads = 0;                 ///< 0 = one event loop per two cores (rounded up)
  std::string state_dir = "var";   ///< resolved: absolute path
  std::string log_level = "info";  ///< trace debug info warn error critical off
  LogFormat log_format = LogFormat::text;
  /// Logged-in clients at once (admins may go beyond it by admin_reserved_clients).
  int64_t max_clients = 10000;
  /// Slots beyond max_clients that only admin users get (docs/security.md).
  int64_t admin_reserved_clients = 3;
  /// Connections not logged in yet (TLS, startup, authentication; HTTP
  /// requests too), counted from accept: at most this many at once, and at
  /// most max_pending_logins_per_address from one address (an IPv6 /64).
  int64_t max_pending_logins = 1024;
  int64_t max_pending_logins_per_address = 256;
  /// Failed logins per source address and per user allowed at full speed;
  /// beyond them one attempt per login_failure_interval (the table that
  /// counts them holds at most login_throttle_entries keys, oldest evicted).
  int64_t login_failure_burst = 10;
  Duration login_failure_interval = std::chrono::seconds(1);
  int64_t login_throttle_entries = 65536;
  uint64_t max_message_size = 64ull << 20;
  /// Largest single value (text or bytes) a backend may hand a client; a larger
  /// one fails its statement with 54000 instead of being materialised.
  uint64_t max_value_size = 64ull << 20;
  Duration login_timeout = std::chrono::seconds(30);
  Duration client_idle_timeout{0};          ///< 0 = none
  Duration idle_in_transaction_timeout{0};  ///< 0 = none
  Duration query_timeout{0};                ///< 0 = none
  Duration shutdown_grace = std::chrono::seconds(30);
  /// This process's id among its `peers` (1..255; 0 = none): its cancel keys
  /// carry it, so a peer that receives one of its CancelRequests can forward it.
  int peer_id = 0;
};

/// Another wirepool process that shares clients with this one (several
/// processes on one port, replicas behind a Service), as PgBouncer's [peers].
struct Peer {
  int id = 0;           ///< its server.peer_id
  std::string address;  ///< an IP address
  int port = 6432;      ///< its PostgreSQL listener
  int line = 0;
};

struct Listener {
  Protocol protocol = Protocol::postgres;
  std::string address = "127.0.0.1";
  int port = 0;
  TlsMode tls = TlsMode::off;  ///< resolved: off without a certificate, optional with one
  std::vector<Cidr> allow;     ///< empty = any address
  /// SO_REUSEPORT: a second process may listen on the same port (online
  /// restart: the new one starts beside the old one, which then drains).
  bool reuse_port = false;
  int line = 0;  ///< where it was declared (for messages)
};

struct Tls {
  std::string certificate;  ///< resolved path (relative to state_dir), empty = none
  std::string key;
  bool generate = false;
  std::string ciphersuites =
      "TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256";
  std::string client_ca;  ///< resolved path, empty = none
  bool present = false;   ///< a certificate is configured (or will be generated)
  /// Resolved: some user has client_cert_pins. With client_ca, what makes the
  /// server request a client certificate (none is requested that nothing checks).
  bool client_pins = false;
};

struct User {
  std::string name;
  std::string password;  ///< dev plaintext; empty when `scram` is set
  std::string scram;     ///< "SCRAM-SHA-256$<iter>:<salt>$<StoredKey>:<ServerKey>"
  bool admin = false;
  std::vector<std::string> databases;         ///< empty = all
  std::vector<std::string> client_cert_pins;  ///< normalised: lower-case hex, no colons
};

struct PoolSettings {
  PoolMode mode = PoolMode::transaction;
  int min = 0;
  int max = 8;
  Duration acquire_timeout = std::chrono::seconds(5);
  Duration idle_timeout = std::chrono::minutes(10);
  Duration max_lifetime = std::chrono::hours(1);
  /// Resolved: "DISCARD ALL" for PostgreSQL in session mode unless set, else as written.
  std::string reset_query;
  /// PostgreSQL in transaction mode: a relayed batch may be sent behind another
  /// client's running one when no backend is idle (docs/protocol-postgres.md).
  bool pipeline = true;
  /// With pipeline: connections opened for batches a train could take (0 = auto:
  /// 2 x cores + 1 for a server on this host, else max). server::pipeline_max().
  int pipeline_max = 0;
  /// The backend connections of all users' pools of the database together
  /// (PgBouncer's max_db_connections); 0 = no cap beyond each pool's max.
  int max_db_connections = 0;
  /// After a failed backend open, the longest wait before the next attempt
  /// (the wait starts at 100 ms and doubles per failed attempt).
  Duration connect_backoff_max = std::chrono::seconds(5);
};

struct BackendTls {
  bool present = false;                 ///< a `tls` block = TLS to the backend, verified
  std::string ca;                       ///< resolved path
  std::vector<std::string> pin_sha256;  ///< normalised: lower-case hex, no colons
};

/// Users from the backend (`postgresql` only): a client name that is not in
/// `users:` is looked up with `query` as `user` (docs/security.md#users-from-the-backend).
struct AuthQuery {
  std::string user;  ///< auth_user: empty = no lookups
  /// auth_user's password, in the entry's forms; neither = the entry's password.
  std::string password_env;
  std::string password_file;  ///< resolved path
  std::string query = "SELECT usename, passwd FROM pg_shadow WHERE usename = $1";
  Duration timeout = std::chrono::seconds(5);       ///< one lookup, connecting included
  Duration ttl = std::chrono::seconds(60);          ///< a verifier found
  Duration negative_ttl = std::chrono::seconds(5);  ///< no such user / unusable password
  int64_t cache_size = 10000;                       ///< names cached at once
  bool enabled() const { return !user.empty(); }
};

/// One server of a database with several hosts (docs/high-availability.md).
struct Host {
  std::string host;
  int port = 0;  ///< 0 = the driver's default (5432)
  int line = 0;
  bool operator==(const Host& o) const { return host == o.host && port == o.port; }
};

/// How the hosts of a database with several are watched (docs/high-availability.md).
struct HealthCheck {
  /// Re-probe of the primary and the standbys while a primary is known.
  Duration interval = std::chrono::seconds(1);
  /// Re-probe of every host that is not banned while no primary is known.
  Duration failover_interval = std::chrono::milliseconds(200);
  /// One probe's bound (connect, authenticate, answer).
  Duration timeout = std::chrono::seconds(3);
  /// First ban of an unreachable host, doubled per failure in a row up to ban_time_max.
  Duration ban_time = std::chrono::seconds(1);
  Duration ban_time_max = std::chrono::seconds(30);
  /// Failed probes in a row that ban a host whose last probe answered (a
  /// refused connection or a failed session open bans at once).
  int failures_to_ban = 2;
  /// How long a backend open waits for a primary to be known before it fails.
  Duration failover_timeout = std::chrono::seconds(5);
  bool operator==(const HealthCheck&) const = default;
};

/// Read replicas (docs/high-availability.md#read-replicas): a second,
/// client-visible database name whose pools open sessions on standbys.
struct ReadOnly {
  std::string name;  ///< the read-only database's name; empty = none
  /// A standby whose replay is further behind takes no reads; 0 = no bound.
  Duration max_replica_lag{};
  /// A standby out of reads for its lag takes them again only within this
  /// (<= max_replica_lag); 0 = 4/5 of max_replica_lag.
  Duration readmit_lag{};
  enum class Fallback : uint8_t { primary, refuse };
  /// When no standby qualifies: open on the primary, or refuse the open.
  Fallback fallback = Fallback::primary;
  enum class Balance : uint8_t { least_connections, round_robin };
  Balance balance = Balance::least_connections;
  /// postgresql in transaction mode: the read-write database's transactions
  /// begun READ ONLY (or under default_transaction_read_only) lease from this
  /// database's pool of the same user.
  bool route_transactions = false;
  /// postgresql in transaction mode: an autocommit query of reads only
  /// (session/statement.hpp reads_only) runs on this database's pool, and
  /// again on the primary when the standby refuses it as a write (25006).
  bool route_statements = false;
  bool operator==(const ReadOnly&) const = default;
};

struct Database {
  std::string name;
  std::string driver;
  std::string connection;
  std::string password_env;
  std::string password_file;                   ///< resolved path
  std::map<std::string, std::string> options;  ///< scalar values as written
  PoolSettings pool;
  BackendTls tls;
  AuthQuery auth_query;
  /// Several servers (postgresql): they replace the host and port of `connection`.
  std::vector<Host> hosts;
  /// Servers that only serve reads (never the primary): read_only's pools open on them.
  std::vector<Host> replicas;
  ReadOnly read_only;
  /// The entry the loader made from another's read_only.name: that entry's
  /// name (its pools open on standbys). Empty for an entry as written.
  std::string reads_of;
  HealthCheck health_check;
  AuthMode auth = AuthMode::fixed;  ///< `auth.mode`
  int line = 0;
};

struct Config {
  std::string path;  ///< the file it was loaded from (absolute)
  Server server;
  std::vector<Listener> listeners;
  Tls tls;
  std::vector<User> users;
  std::vector<Database> databases;
  std::vector<Peer> peers;

  const Database* find_database(std::string_view name) const;
  const User* find_user(std::string_view name) const;
};

/// One problem in a configuration file.
struct Problem {
  std::string file;
  int line = 0;    ///< 1-based
  int column = 0;  ///< 1-based
  std::string message;
  std::string to_string() const;  ///< "file:line:column: message"
};

/// Thrown by load(): every problem found, not only the first.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<Problem> problems);
  const std::vector<Problem>& problems() const { return problems_; }

 private:
  std::vector<Problem> problems_;
};

/// Hook for checks that belong to other components (a driver's options): given a
/// database entry, answers (option key or "", message) pairs. Set by the server.
using DatabaseValidator = std::vector<std::pair<std::string, std::string>> (*)(const Database& db);

/// Loads and validates a file. Relative `state_dir` is relative to the file's
/// directory; other relative paths are relative to state_dir.
Config load(const std::string& path, DatabaseValidator validator = nullptr);
/// Same, from text (for tests); `name` is used in messages and for relative paths.
Config load_string(std::string_view yaml, const std::string& name,
                   DatabaseValidator validator = nullptr);

/// "250ms", "5s", "10m", "1h", "1d", "0" -> duration. nullopt if malformed.
std::optional<Duration> parse_duration(std::string_view s);
/// "512", "64KiB", "64MiB", "1GiB", "10kB", "1MB" -> bytes. nullopt if malformed.
std::optional<uint64_t> parse_size(std::string_view s);
/// "AB:cd:..." or "abcd..." (64 hex digits) -> lower-case hex without colons.
std::optional<std::string> normalize_pin(std::string_view s);
std::optional<Cidr> parse_cidr(std::string_view s);

}  // namespace wirepool::config
