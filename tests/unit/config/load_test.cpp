// Loading configurations that are valid. Cases:
//  - a minimal file (one database, one user) gets every default of config.hpp,
//    including one postgres listener on 127.0.0.1:6432 with TLS off;
//  - DESIGN.md's example, without what this version does not implement, loads
//    with every value as written;
//  - listener ports default per protocol; listener TLS defaults to off without
//    a certificate and optional with one, the TDS listener to required
//    (checked with the not-implemented refusals switched off);
//  - paths: state_dir relative to the file's directory (load_string: to the
//    current directory unless the name has one), every other path relative to
//    state_dir, all absolute and normalised; `connection` left as written;
//    tls.generate without paths places the pair in state_dir/tls;
//  - reset_query: DISCARD ALL for PostgreSQL in session mode unless written;
//  - options kept as text; pins normalised; admin and databases of users;
//  - the driver validator is called once per complete database, not for an
//    incomplete one;
//  - load() reads a file: absolute path, messages name the path as given, a
//    missing file or a directory is a problem without a line;
//  - find_database/find_user, to_string of the enums, Problem::to_string.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/config.hpp"
#include "config/loader.hpp"
#include "tests/unit/config/helpers.hpp"

namespace wirepool::config {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::kFile;
using testing::kTail;

constexpr const char* kScram =
    "SCRAM-SHA-256$4096:d2lyZXBvb2wtdGVzdC1zYWx0$ta4wbddqkyx7kYAAeopzDjKGf9CJkGnXFaO+7O6nxFk=:"
    "KHPk7iMcv/aMZxMQuDVaQ2YUuYfce13CzkJjTJcP7Dk=";
constexpr const char* kPin = "64f46a7526a186d2346552453ae478ca51244674f5b21ba150bd483b39f7c812";

/// Loads with /etc/wirepool as the configuration's directory, expecting no problem.
Config load_everything(const std::string& yaml) {
  Config c;
  auto problems = load_into(c, yaml, kFile, "/etc/wirepool", nullptr);
  EXPECT_TRUE(problems.empty()) << testing::list(problems);
  return c;
}

TEST(ConfigLoad, MinimalFileGetsEveryDefault) {
  const Config c = load_string(kTail, kFile);
  EXPECT_EQ(c.path, kFile);

  EXPECT_EQ(c.server.threads, 0);
  EXPECT_EQ(c.server.state_dir, "/etc/wirepool/var");
  EXPECT_EQ(c.server.log_level, "info");
  EXPECT_EQ(c.server.log_format, LogFormat::text);
  EXPECT_EQ(c.server.max_clients, 10000);
  EXPECT_EQ(c.server.admin_reserved_clients, 3);
  EXPECT_EQ(c.server.max_pending_logins, 1024);
  EXPECT_EQ(c.server.max_pending_logins_per_address, 256);
  EXPECT_EQ(c.server.login_failure_burst, 10);
  EXPECT_EQ(c.server.login_failure_interval, seconds(1));
  EXPECT_EQ(c.server.login_throttle_entries, 65536);
  EXPECT_EQ(c.server.max_message_size, 64ull << 20);
  EXPECT_EQ(c.server.max_value_size, 64ull << 20);
  EXPECT_EQ(c.server.login_timeout, seconds(30));
  EXPECT_EQ(c.server.client_idle_timeout, milliseconds(0));
  EXPECT_EQ(c.server.idle_in_transaction_timeout, milliseconds(0));
  EXPECT_EQ(c.server.query_timeout, milliseconds(0));
  EXPECT_EQ(c.server.shutdown_grace, seconds(30));

  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0].protocol, Protocol::postgres);
  EXPECT_EQ(c.listeners[0].address, "127.0.0.1");
  EXPECT_EQ(c.listeners[0].port, 6432);
  EXPECT_EQ(c.listeners[0].tls, TlsMode::off);
  EXPECT_TRUE(c.listeners[0].allow.empty());

  EXPECT_FALSE(c.tls.present);
  EXPECT_FALSE(c.tls.generate);
  EXPECT_EQ(c.tls.certificate, "");
  EXPECT_EQ(c.tls.key, "");
  EXPECT_EQ(c.tls.client_ca, "");
  EXPECT_EQ(c.tls.ciphersuites,
            "TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256");

  ASSERT_EQ(c.users.size(), 1u);
  EXPECT_EQ(c.users[0].name, "demo");
  EXPECT_EQ(c.users[0].password, "demo");
  EXPECT_EQ(c.users[0].scram, "");
  EXPECT_FALSE(c.users[0].admin);
  EXPECT_TRUE(c.users[0].databases.empty());
  EXPECT_TRUE(c.users[0].client_cert_pins.empty());

  ASSERT_EQ(c.databases.size(), 1u);
  const Database& db = c.databases[0];
  EXPECT_EQ(db.name, "demo");
  EXPECT_EQ(db.driver, "sqlite");
  EXPECT_EQ(db.connection, "demo.db");
  EXPECT_EQ(db.password_env, "");
  EXPECT_EQ(db.password_file, "");
  EXPECT_TRUE(db.options.empty());
  EXPECT_EQ(db.pool.mode, PoolMode::transaction);
  EXPECT_EQ(db.pool.min, 0);
  EXPECT_EQ(db.pool.max, 8);
  EXPECT_EQ(db.pool.acquire_timeout, seconds(5));
  EXPECT_EQ(db.pool.idle_timeout, minutes(10));
  EXPECT_EQ(db.pool.max_lifetime, hours(1));
  EXPECT_EQ(db.pool.reset_query, "");
  EXPECT_TRUE(db.pool.pipeline);             // on by default
  EXPECT_EQ(db.pool.pipeline_max, 0);        // auto
  EXPECT_EQ(db.pool.max_db_connections, 0);  // no cap
  EXPECT_EQ(db.pool.connect_backoff_max, std::chrono::seconds(5));
  EXPECT_FALSE(db.tls.present);
  EXPECT_EQ(db.line, 1);
}

TEST(ConfigLoad, DesignExampleLoadsWithoutTheUnimplementedParts) {
  // DESIGN.md's example minus the TDS and HTTP listeners, listener TLS, the tls
  // section's certificate and generate, and the database tls block.
  const std::string yaml = std::string(R"(server:
  threads: 0                 # 0 = one event loop per two cores
  state_dir: var             # relative to this file; other relative paths are relative to state_dir
  log: { level: info, format: text }      # format: text | json
  max_clients: 10000
  max_message_size: 64MiB
  max_value_size: 16MiB      # largest value a backend may hand a client
  login_timeout: 30s         # startup, TLS handshake and authentication
  client_idle_timeout: 0s    # 0 = none
  idle_in_transaction_timeout: 0s
  query_timeout: 0s
  shutdown_grace: 30s
listeners:
  - { protocol: postgres, address: 127.0.0.1, port: 6432, tls: off, allow: [127.0.0.0/8] }
tls:
  ciphersuites: TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256
  client_ca: ""              # optional, for client certificates
users:
  - { name: demo, password: demo }
  - { name: ops, scram: ")") +
                           kScram +
                           R"(", admin: true, databases: [demo], client_cert_pins: [] }
databases:
  - name: demo
    driver: sqlite           # sqlite | postgresql | mysql | odbc | tds
    connection: demo.db      # driver-specific: file path, libpq conninfo, ODBC string, ...
    password_env: ""         # backend secret from the environment (or password_file)
    options: { busy_timeout: 5s }          # driver-specific knobs
    pool: { mode: transaction, min: 0, max: 8, acquire_timeout: 5s, idle_timeout: 10m, max_lifetime: 1h, reset_query: "" }
)";
  const Config c = load_string(yaml, kFile);
  EXPECT_EQ(c.server.state_dir, "/etc/wirepool/var");
  EXPECT_EQ(c.server.max_message_size, 64ull << 20);
  EXPECT_EQ(c.server.max_value_size, 16ull << 20);
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0].line, 14);
  ASSERT_EQ(c.listeners[0].allow.size(), 1u);
  EXPECT_EQ(c.listeners[0].allow[0].text, "127.0.0.0/8");
  EXPECT_FALSE(c.tls.present);
  EXPECT_EQ(c.tls.client_ca, "");
  ASSERT_EQ(c.users.size(), 2u);
  const User* ops = c.find_user("ops");
  ASSERT_NE(ops, nullptr);
  EXPECT_EQ(ops->scram, kScram);
  EXPECT_EQ(ops->password, "");
  EXPECT_TRUE(ops->admin);
  EXPECT_EQ(ops->databases, std::vector<std::string>{"demo"});
  const Database* demo = c.find_database("demo");
  ASSERT_NE(demo, nullptr);
  EXPECT_EQ(demo->line, 22);
  EXPECT_EQ(demo->options.at("busy_timeout"), "5s");
  EXPECT_EQ(demo->pool.max, 8);
  EXPECT_EQ(demo->pool.idle_timeout, minutes(10));
}

TEST(ConfigLoad, PerAddressPendingCapFollowsALowerGlobalOne) {
  const Config c = load_string("server: {max_pending_logins: 100}\n" + kTail, kFile);
  EXPECT_EQ(c.server.max_pending_logins, 100);
  EXPECT_EQ(c.server.max_pending_logins_per_address, 100);
}

TEST(ConfigLoad, EveryValueIsReadAsWritten) {
  const Config c = load_string(R"(server:
  threads: 3
  state_dir: /srv/wirepool
  log: { level: debug, format: json }
  max_clients: 500
  admin_reserved_clients: 0
  max_pending_logins: 100
  max_pending_logins_per_address: 7
  login_failure_burst: 3
  login_failure_interval: 500ms
  login_throttle_entries: 1000
  max_message_size: 1048576
  login_timeout: 250ms
  client_idle_timeout: 10m
  idle_in_transaction_timeout: 1h
  query_timeout: 1d
  shutdown_grace: 0
listeners:
  - { address: "::", port: 0, allow: ["::1", 10.0.0.0/8] }
users:
  - { name: app, password: pw, databases: [pg] }
databases:
  - name: pg
    driver: postgresql
    connection: host=10.0.0.5 user=app dbname=app
    password_env: PG_PASSWORD
    options: { statement_cache: 100, keepalives: true, application_name: "wirepool" }
    pool: { mode: statement, min: 2, max: 2, acquire_timeout: 1s, idle_timeout: 0, max_lifetime: 0s, reset_query: "SELECT 1", pipeline: false, pipeline_max: 3, max_db_connections: 5, connect_backoff_max: 30s }
)",
                               kFile);
  EXPECT_EQ(c.server.threads, 3);
  EXPECT_EQ(c.server.state_dir, "/srv/wirepool");
  EXPECT_EQ(c.server.log_level, "debug");
  EXPECT_EQ(c.server.log_format, LogFormat::json);
  EXPECT_EQ(c.server.max_clients, 500);
  EXPECT_EQ(c.server.admin_reserved_clients, 0);
  EXPECT_EQ(c.server.max_pending_logins, 100);
  EXPECT_EQ(c.server.max_pending_logins_per_address, 7);
  EXPECT_EQ(c.server.login_failure_burst, 3);
  EXPECT_EQ(c.server.login_failure_interval, milliseconds(500));
  EXPECT_EQ(c.server.login_throttle_entries, 1000);
  EXPECT_EQ(c.server.max_message_size, 1048576u);
  EXPECT_EQ(c.server.login_timeout, milliseconds(250));
  EXPECT_EQ(c.server.client_idle_timeout, minutes(10));
  EXPECT_EQ(c.server.idle_in_transaction_timeout, hours(1));
  EXPECT_EQ(c.server.query_timeout, hours(24));
  EXPECT_EQ(c.server.shutdown_grace, milliseconds(0));
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0].address, "::");
  EXPECT_EQ(c.listeners[0].port, 0);
  ASSERT_EQ(c.listeners[0].allow.size(), 2u);
  EXPECT_TRUE(c.listeners[0].allow[0].v6);
  EXPECT_EQ(c.listeners[0].allow[1].prefix, 8);
  const Database& db = c.databases.at(0);
  EXPECT_EQ(db.connection, "host=10.0.0.5 user=app dbname=app");
  EXPECT_EQ(db.password_env, "PG_PASSWORD");
  EXPECT_EQ(db.options, (std::map<std::string, std::string>{{"statement_cache", "100"},
                                                            {"keepalives", "true"},
                                                            {"application_name", "wirepool"}}));
  EXPECT_EQ(db.pool.mode, PoolMode::statement);
  EXPECT_EQ(db.pool.min, 2);
  EXPECT_EQ(db.pool.max, 2);
  EXPECT_EQ(db.pool.acquire_timeout, seconds(1));
  EXPECT_EQ(db.pool.idle_timeout, milliseconds(0));
  EXPECT_EQ(db.pool.max_lifetime, milliseconds(0));
  EXPECT_EQ(db.pool.reset_query, "SELECT 1");
  EXPECT_FALSE(db.pool.pipeline);
  EXPECT_EQ(db.pool.pipeline_max, 3);
  EXPECT_EQ(db.pool.max_db_connections, 5);
  EXPECT_EQ(db.pool.connect_backoff_max, std::chrono::seconds(30));
}

TEST(ConfigLoad, ShortPoolIsComplete) {
  const Config c = load_string(
      "users: [{name: demo, password: demo}]\n"
      "databases: [{name: demo, driver: sqlite, connection: demo.db, pool: { max: 4 }}]\n",
      kFile);
  EXPECT_EQ(c.databases[0].pool.max, 4);
  EXPECT_EQ(c.databases[0].pool.mode, PoolMode::transaction);
}

TEST(ConfigLoad, AuthQueryKeysHaveDefaultsAndAreReadAsWritten) {
  const Config c = load_string(
      "users: [{name: demo, password: demo}]\n"
      "databases:\n"
      "  - {name: a, driver: postgresql, connection: \"dbname=a\"}\n"
      "  - {name: b, driver: postgresql, connection: \"dbname=b\", auth_user: lookup}\n"
      "  - {name: c, driver: postgresql, connection: \"dbname=c\", auth_user: lookup,\n"
      "     auth_query: \"SELECT * FROM auth.lookup($1)\", auth_password_file: secrets/lookup,\n"
      "     auth_query_timeout: 2s, auth_cache_ttl: 5m, auth_negative_ttl: 0,\n"
      "     auth_cache_size: 500}\n",
      kFile);
  EXPECT_FALSE(c.databases[0].auth_query.enabled());
  const AuthQuery& b = c.databases[1].auth_query;
  EXPECT_TRUE(b.enabled());
  EXPECT_EQ(b.query, "SELECT usename, passwd FROM pg_shadow WHERE usename = $1");
  EXPECT_EQ(b.timeout, seconds(5));
  EXPECT_EQ(b.ttl, seconds(60));
  EXPECT_EQ(b.negative_ttl, seconds(5));
  EXPECT_EQ(b.cache_size, 10000);
  EXPECT_TRUE(b.password_env.empty() && b.password_file.empty());
  const AuthQuery& q = c.databases[2].auth_query;
  EXPECT_EQ(q.query, "SELECT * FROM auth.lookup($1)");
  EXPECT_EQ(q.password_file, "/etc/wirepool/var/secrets/lookup");
  EXPECT_EQ(q.timeout, seconds(2));
  EXPECT_EQ(q.ttl, minutes(5));
  EXPECT_EQ(q.negative_ttl, seconds(0));
  EXPECT_EQ(q.cache_size, 500);
}

TEST(ConfigLoad, AuthUserNeedsPostgresqlAndOnePasswordForm) {
  using testing::has_problem;
  using testing::problems_of;
  EXPECT_TRUE(has_problem(
      problems_of("users: [{name: demo, password: demo}]\n"
                  "databases: [{name: a, driver: sqlite, connection: a.db, auth_user: x}]\n"),
      2, 68, "needs driver postgresql"));
  EXPECT_TRUE(has_problem(
      problems_of("users: [{name: demo, password: demo}]\n"
                  "databases: [{name: a, driver: postgresql, connection: a, auth_user: x,\n"
                  "  auth_password_env: A, auth_password_file: f}]\n"),
      2, 13, "both auth_password_env and auth_password_file"));
  EXPECT_TRUE(has_problem(
      problems_of(
          "users: [{name: demo, password: demo}]\n"
          "databases: [{name: a, driver: postgresql, connection: a, auth_password_env: A}]\n"),
      2, 13, "without auth_user"));
  EXPECT_TRUE(has_problem(
      problems_of("users: [{name: demo, password: demo}]\n"
                  "databases: [{name: a, driver: postgresql, connection: a, auth_user: x,\n"
                  "  auth_query_timeout: 0}]\n"),
      3, 23, "must be above 0"));
}

TEST(ConfigLoad, ListenerPortDefaultsPerProtocol) {
  const Config c = load_everything(
      "tls: {generate: true}\n"
      "listeners: [{protocol: postgres}, {protocol: tds}, {protocol: http}]\n" +
      kTail);
  ASSERT_EQ(c.listeners.size(), 3u);
  EXPECT_EQ(c.listeners[0].port, 6432);
  EXPECT_EQ(c.listeners[1].port, 11433);
  EXPECT_EQ(c.listeners[2].port, 9930);
}

TEST(ConfigLoad, PeersAndPeerIdAreRead) {
  const Config c = load_everything(
      "server: {peer_id: 1}\n"
      "peers: [{id: 2, address: 10.0.0.2, port: 6433}, {id: 3, address: '::1'}]\n" +
      kTail);
  EXPECT_EQ(c.server.peer_id, 1);
  ASSERT_EQ(c.peers.size(), 2u);
  EXPECT_EQ(c.peers[0].id, 2);
  EXPECT_EQ(c.peers[0].address, "10.0.0.2");
  EXPECT_EQ(c.peers[0].port, 6433);
  EXPECT_EQ(c.peers[1].port, 6432);  // the default
  EXPECT_TRUE(load_everything(kTail).peers.empty());
}

TEST(ConfigLoad, ListenerReusePortIsOffUnlessAskedFor) {
  const Config c = load_everything("listeners: [{port: 1}, {port: 2, reuse_port: true}]\n" + kTail);
  ASSERT_EQ(c.listeners.size(), 2u);
  EXPECT_FALSE(c.listeners[0].reuse_port);
  EXPECT_TRUE(c.listeners[1].reuse_port);
}

TEST(ConfigLoad, ListenerTlsDefaultsToOffWithoutACertificateAndOptionalWithOne) {
  Config c = load_everything("listeners: [{port: 1}, {port: 2, tls: off}]\n" + kTail);
  EXPECT_FALSE(c.tls.present);
  EXPECT_EQ(c.listeners[0].tls, TlsMode::off);

  c = load_everything(
      "tls: {certificate: a.crt, key: a.key}\n"
      "listeners: [{port: 1}, {port: 2, tls: off}, {port: 3, tls: required}, {protocol: tds}]\n" +
      kTail);
  EXPECT_TRUE(c.tls.present);
  EXPECT_EQ(c.listeners[0].tls, TlsMode::optional);
  EXPECT_EQ(c.listeners[1].tls, TlsMode::off);
  EXPECT_EQ(c.listeners[2].tls, TlsMode::required);
  EXPECT_EQ(c.listeners[3].tls, TlsMode::required);  // TDS 8.0 strict is always TLS

  c = load_everything("tls: {generate: true}\nlisteners: [{port: 1}]\n" + kTail);
  EXPECT_TRUE(c.tls.present);
  EXPECT_EQ(c.listeners[0].tls, TlsMode::optional);
}

TEST(ConfigLoad, StateDirIsRelativeToTheConfigFileAndOtherPathsToStateDir) {
  const Config c = load_everything(R"(server: { state_dir: ../wirepool/./state/ }
tls: { certificate: tls/../certs/server.crt, key: /keys/server.key, client_ca: clients.pem }
users: [{name: demo, password: demo}]
databases:
  - { name: a, driver: sqlite, connection: data/a.db, password_file: secrets/a, tls: { ca: ca/a.pem } }
  - { name: b, driver: sqlite, connection: /abs/b.db, password_file: /run/secrets/b }
)");
  EXPECT_EQ(c.server.state_dir, "/etc/wirepool/state");
  EXPECT_EQ(c.tls.certificate, "/etc/wirepool/state/certs/server.crt");
  EXPECT_EQ(c.tls.key, "/keys/server.key");
  EXPECT_EQ(c.tls.client_ca, "/etc/wirepool/state/clients.pem");
  EXPECT_EQ(c.databases[0].password_file, "/etc/wirepool/state/secrets/a");
  EXPECT_EQ(c.databases[0].tls.ca, "/etc/wirepool/state/ca/a.pem");
  EXPECT_TRUE(c.databases[0].tls.present);
  EXPECT_EQ(c.databases[1].password_file, "/run/secrets/b");
  // The driver resolves file paths in `connection` itself.
  EXPECT_EQ(c.databases[0].connection, "data/a.db");
  EXPECT_EQ(c.databases[1].connection, "/abs/b.db");
}

TEST(ConfigLoad, AbsoluteStateDirIsNormalised) {
  const Config c = load_string("server: { state_dir: /srv//wp/../wirepool/. }\n" + kTail, kFile);
  EXPECT_EQ(c.server.state_dir, "/srv/wirepool");
}

TEST(ConfigLoad, GenerateWithoutPathsPlacesThePairInStateDir) {
  const Config c = load_everything("tls: { generate: true }\n" + kTail);
  EXPECT_TRUE(c.tls.present);
  EXPECT_EQ(c.tls.certificate, "/etc/wirepool/var/tls/server.crt");
  EXPECT_EQ(c.tls.key, "/etc/wirepool/var/tls/server.key");
}

TEST(ConfigLoad, LoadStringNameWithoutDirectoryIsRelativeToTheCurrentDirectory) {
  const fs::path cwd = fs::current_path();
  Config c = load_string(kTail, "inline");
  EXPECT_EQ(c.server.state_dir, (cwd / "var").string());
  EXPECT_EQ(c.path, (cwd / "inline").string());
  c = load_string(kTail, "conf/wirepool.yaml");
  EXPECT_EQ(c.server.state_dir, (cwd / "conf" / "var").string());
}

TEST(ConfigLoad, ResetQueryDefaultsToDiscardAllForPostgresqlInSessionMode) {
  const Config c = load_string(R"(users: [{name: demo, password: demo}]
databases:
  - { name: a, driver: postgresql, connection: "host=x", pool: { mode: session } }
  - { name: b, driver: postgresql, connection: "host=x" }
  - { name: c, driver: sqlite, connection: c.db, pool: { mode: session } }
  - { name: d, driver: postgresql, connection: "host=x", pool: { mode: session, reset_query: "" } }
  - { name: e, driver: mysql, connection: "host=x", pool: { mode: session, reset_query: "SET @a = NULL" } }
)",
                               kFile);
  EXPECT_EQ(c.find_database("a")->pool.reset_query, "DISCARD ALL");
  EXPECT_EQ(c.find_database("b")->pool.reset_query, "");  // transaction mode
  EXPECT_EQ(c.find_database("c")->pool.reset_query, "");  // not PostgreSQL
  EXPECT_EQ(c.find_database("d")->pool.reset_query, "");  // written: kept
  EXPECT_EQ(c.find_database("e")->pool.reset_query, "SET @a = NULL");
}

TEST(ConfigLoad, PinsAreNormalised) {
  const Config c = load_string(R"(databases: [{name: demo, driver: sqlite, connection: demo.db}]
users:
  - name: ops
    password: x
    client_cert_pins:
      - 64:F4:6A:75:26:A1:86:D2:34:65:52:45:3A:E4:78:CA:51:24:46:74:F5:B2:1B:A1:50:BD:48:3B:39:F7:C8:12
      - 64F46A7526A186D2346552453AE478CA51244674F5B21BA150BD483B39F7C812
)",
                               kFile);
  EXPECT_EQ(c.users[0].client_cert_pins, (std::vector<std::string>{kPin, kPin}));
}

int validator_calls = 0;
std::vector<std::pair<std::string, std::string>> count_calls(const Database&) {
  ++validator_calls;
  return {};
}

TEST(ConfigLoad, ValidatorRunsOncePerCompleteDatabaseAndOwnsTheDriverName) {
  validator_calls = 0;
  const Config c = load_string(R"(users: [{name: demo, password: demo}]
databases:
  - { name: a, driver: sqlite, connection: a.db }
  - { name: b, driver: duckdb, connection: b.db }
)",
                               kFile, count_calls);
  EXPECT_EQ(validator_calls, 2);
  EXPECT_EQ(c.databases[1].driver, "duckdb");

  validator_calls = 0;
  testing::problems_of(R"(users: [{name: demo, password: demo}]
databases:
  - { name: a, driver: sqlite, connection: a.db }
  - { name: b, connection: b.db }
)",
                       count_calls);
  EXPECT_EQ(validator_calls, 1);  // not for the entry without a driver
}

class ConfigFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("wirepool-config-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  fs::path dir_;
};

TEST_F(ConfigFile, LoadReadsTheFileAndResolvesStateDirFromItsDirectory) {
  const std::string path = write("wirepool.yaml", "server: { state_dir: run }\n" + kTail);
  const Config c = load(path);
  EXPECT_EQ(c.path, path);
  EXPECT_EQ(c.server.state_dir, (dir_ / "run").string());
}

TEST_F(ConfigFile, ProblemsNameThePathAsGiven) {
  const std::string path = write("bad.yaml", "server: { threads: -1 }\n" + kTail);
  try {
    load(path);
    FAIL() << "loaded";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.problems().size(), 1u);
    EXPECT_EQ(e.problems()[0].to_string(),
              path + ":1:20: server.threads must be between 0 and 1024, got -1");
  }
}

TEST_F(ConfigFile, MissingFileOrDirectoryIsAProblemWithoutALine) {
  const std::string missing = (dir_ / "missing.yaml").string();
  try {
    load(missing);
    FAIL() << "loaded";
  } catch (const ConfigError& e) {
    ASSERT_EQ(e.problems().size(), 1u);
    EXPECT_EQ(e.problems()[0].line, 0);
    EXPECT_EQ(std::string(e.what()),
              missing + ": cannot read the configuration: No such file or directory");
  }
  EXPECT_THROW(load(dir_.string()), ConfigError);
}

TEST(ConfigApi, FindDatabaseAndFindUserAnswerNullWhenAbsent) {
  const Config c = load_string(kTail, kFile);
  EXPECT_EQ(c.find_database("demo"), &c.databases[0]);
  EXPECT_EQ(c.find_database("Demo"), nullptr);
  EXPECT_EQ(c.find_user("demo"), &c.users[0]);
  EXPECT_EQ(c.find_user("nobody"), nullptr);
}

TEST(ConfigApi, EnumsHaveTheirConfigurationNames) {
  EXPECT_EQ(to_string(Protocol::postgres), "postgres");
  EXPECT_EQ(to_string(Protocol::tds), "tds");
  EXPECT_EQ(to_string(Protocol::http), "http");
  EXPECT_EQ(to_string(TlsMode::off), "off");
  EXPECT_EQ(to_string(TlsMode::optional), "optional");
  EXPECT_EQ(to_string(TlsMode::required), "required");
  EXPECT_EQ(to_string(PoolMode::session), "session");
  EXPECT_EQ(to_string(PoolMode::transaction), "transaction");
  EXPECT_EQ(to_string(PoolMode::statement), "statement");
  EXPECT_EQ(to_string(LogFormat::text), "text");
  EXPECT_EQ(to_string(LogFormat::json), "json");
}

TEST(ConfigApi, ProblemPrintsFileLineColumnMessage) {
  EXPECT_EQ((Problem{"w.yaml", 3, 14, "bad"}).to_string(), "w.yaml:3:14: bad");
  EXPECT_EQ((Problem{"w.yaml", 0, 0, "unreadable"}).to_string(), "w.yaml: unreadable");
  const ConfigError e({Problem{"a", 1, 2, "x"}, Problem{"a", 3, 4, "y"}});
  EXPECT_EQ(std::string(e.what()), "a:1:2: x\na:3:4: y");
}

}  // namespace
}  // namespace wirepool::config
