// Every configuration error is a Problem at the exact line:column of the
// offending node, and all of them are reported together. Cases:
//  - YAML: a syntax error at the parser's position; a second document; a top
//    level that is not a map; an empty file;
//  - keys: unknown (top level and nested, with a suggestion or the known keys),
//    repeated, without a value; a missing databases/users section, empty lists;
//  - types: a map or list where a scalar is expected, text for an integer, a
//    quoted number, integers out of range (threads, port, pool), a bool other
//    than true/false;
//  - required keys: database name/driver/connection, user name, exactly one of
//    password/scram, empty required values;
//  - references: duplicate database and user names, duplicate listener
//    address:port (port 0 exempt), a user's databases naming an unknown one;
//  - values: pool min > max and max < 1, unknown pool mode/log level/log
//    format/protocol/tls mode/driver, malformed duration/size/CIDR/pin/SCRAM,
//    zero where a bound is mandatory, listener address,
//    password_env with password_file, password_env and auth_password_env names,
//    non-scalar options, cipher suites;
//  - TLS: certificate without key, client_ca or listener TLS without a
//    certificate, the TDS listener without a certificate;
//  - the HTTP listener is accepted beside the others;
//  - accepted TLS settings: listener modes (and their default with a
//    certificate), tls.certificate, a database tls block with pins; a mysql
//    entry's pins refused at their key (the connector cannot check them);
//  - the driver validator's answers, located at the option or the entry;
//  - several problems at once, sorted by position, one per line in what().

#include <gtest/gtest.h>

#include <string>

#include "config/config.hpp"
#include "tests/unit/config/helpers.hpp"

namespace wirepool::config {
namespace {

using testing::has_problem;
using testing::kTail;
using testing::one_problem;
using testing::problems_of;

// Loading "server: {key: value}" reports one problem, at the value, containing `text`.
::testing::AssertionResult server_value_problem(const std::string& key, const std::string& value,
                                                std::string_view text) {
  const std::string head = "server: {" + key + ": ";
  return one_problem(head + value + "}\n" + kTail, 1, static_cast<int>(head.size()) + 1, text);
}

// ---- YAML ---------------------------------------------------------------------------

TEST(ConfigErrors, YamlSyntaxErrorIsReportedAtTheParserPosition) {
  auto problems = problems_of("server:\n  threads: 1\n   state_dir: x\n");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].to_string(),
            "/etc/wirepool/wirepool.yaml:3:13: YAML syntax error: illegal map value");
  EXPECT_TRUE(one_problem("users: [{name: demo, password: demo}\n", 2, 1,
                          "YAML syntax error: end of sequence flow not found"));
}

TEST(ConfigErrors, OnlyOneDocumentIsAllowed) {
  EXPECT_TRUE(one_problem(kTail + "---\nserver: {}\n", 4, 1, "only one YAML document"));
}

TEST(ConfigErrors, TopLevelMustBeAMap) {
  EXPECT_TRUE(one_problem("- server\n- users\n", 1, 1, "expected a map of sections"));
}

TEST(ConfigErrors, EmptyFileLacksDatabasesAndUsers) {
  auto problems = problems_of("");
  ASSERT_EQ(problems.size(), 2u) << testing::list(problems);
  EXPECT_TRUE(has_problem(problems, 1, 1, "missing the required key \"databases\""));
  EXPECT_TRUE(has_problem(problems, 1, 1, "missing the required key \"users\""));
}

// ---- keys ---------------------------------------------------------------------------

TEST(ConfigErrors, UnknownTopLevelKeyIsReportedAtTheKeyWithASuggestion) {
  EXPECT_TRUE(one_problem("servr:\n  threads: 1\n" + kTail, 1, 1,
                          "unknown key \"servr\" in the top level (did you mean \"server\"?)"));
}

TEST(ConfigErrors, UnknownNestedKeyListsTheKnownKeys) {
  EXPECT_TRUE(one_problem("server:\n  log: { level: info, colour: true }\n" + kTail, 2, 23,
                          "unknown key \"colour\" in server.log; expected one of: level | format"));
}

TEST(ConfigErrors, UnknownKeyInsideAListEntryNamesTheEntry) {
  EXPECT_TRUE(one_problem(R"(databases:
  - name: demo
    driver: sqlite
    connection: demo.db
    pool: { max: 4, maximum: 8 }
users: [{name: demo, password: demo}]
)",
                          5, 21, "unknown key \"maximum\" in databases[0].pool"));
}

TEST(ConfigErrors, RepeatedKeyIsReportedAtItsSecondOccurrence) {
  EXPECT_TRUE(one_problem("server:\n  threads: 1\n  threads: 2\n" + kTail, 3, 3,
                          "duplicate key \"threads\" in server (first at line 2)"));
}

TEST(ConfigErrors, KeyWithoutValueIsReportedAtTheKey) {
  EXPECT_TRUE(one_problem("server:\n  login_timeout:\n" + kTail, 2, 3,
                          "server.login_timeout has no value; expected a duration"));
  EXPECT_TRUE(one_problem("server:\n" + kTail, 1, 1, "server has no value; expected a map"));
}

TEST(ConfigErrors, MissingDatabasesOrUsersSectionIsReportedAtTheTop) {
  EXPECT_TRUE(one_problem("server: {threads: 1}\nusers: [{name: demo, password: demo}]\n", 1, 1,
                          "missing the required key \"databases\""));
  EXPECT_TRUE(one_problem("\n\ndatabases: [{name: demo, driver: sqlite, connection: demo.db}]\n", 3,
                          1, "missing the required key \"users\""));
}

TEST(ConfigErrors, EmptyDatabasesUsersAndListenersListsAreRefused) {
  EXPECT_TRUE(one_problem("databases: []\nusers: [{name: demo, password: demo}]\n", 1, 12,
                          "databases is an empty list"));
  EXPECT_TRUE(
      one_problem("databases: [{name: demo, driver: sqlite, connection: demo.db}]\nusers: []\n", 2,
                  8, "users is an empty list"));
  EXPECT_TRUE(one_problem("listeners: []\n" + kTail, 1, 12, "listeners is an empty list"));
}

// ---- types --------------------------------------------------------------------------

TEST(ConfigErrors, MapWhereAScalarIsExpectedIsReportedAtTheMap) {
  EXPECT_TRUE(one_problem("server:\n  state_dir: {path: x}\n" + kTail, 2, 14,
                          "server.state_dir: expected a string, got a map"));
  EXPECT_TRUE(one_problem("server:\n  threads: [1]\n" + kTail, 2, 12,
                          "server.threads: expected an integer, got a list"));
}

TEST(ConfigErrors, ScalarWhereAMapOrListIsExpected) {
  EXPECT_TRUE(one_problem("server: fast\n" + kTail, 1, 9, "server: expected a map, got \"fast\""));
  EXPECT_TRUE(one_problem("listeners: {port: 1}\n" + kTail, 1, 12,
                          "listeners: expected a list, got a map"));
}

TEST(ConfigErrors, TextWhereAnIntegerIsExpected) {
  EXPECT_TRUE(one_problem("server:\n  threads: abc\n" + kTail, 2, 12,
                          "server.threads: expected an integer, got \"abc\""));
  EXPECT_TRUE(one_problem("server:\n  threads: 4.5\n" + kTail, 2, 12,
                          "server.threads: expected an integer, got \"4.5\""));
  EXPECT_TRUE(one_problem("server:\n  threads: 0x10\n" + kTail, 2, 12,
                          "server.threads: expected an integer, got \"0x10\""));
}

TEST(ConfigErrors, QuotedNumberIsAStringNotAnInteger) {
  EXPECT_TRUE(one_problem("listeners: [{port: \"6432\"}]\n" + kTail, 1, 20,
                          "listeners[0].port: expected an integer, got the string \"6432\""));
}

TEST(ConfigErrors, IntegersOutsideTheirRangeAreRefused) {
  EXPECT_TRUE(one_problem("listeners: [{port: 65536}]\n" + kTail, 1, 20,
                          "listeners[0].port must be between 0 and 65535, got 65536"));
  EXPECT_TRUE(one_problem("listeners: [{port: -1}]\n" + kTail, 1, 20,
                          "listeners[0].port must be between 0 and 65535, got -1"));
  EXPECT_TRUE(server_value_problem("threads", "1025", "server.threads must be between 0 and 1024"));
  EXPECT_TRUE(server_value_problem("max_clients", "0", "server.max_clients must be between 1 and"));
  EXPECT_TRUE(server_value_problem("max_clients", "99999999999999999999",
                                   "server.max_clients must be between 1 and 9223372036854775807"));
}

TEST(ConfigErrors, PreAuthenticationLimitsAreChecked) {
  EXPECT_TRUE(server_value_problem("max_pending_logins", "0",
                                   "server.max_pending_logins must be between 1 and 1000000000"));
  EXPECT_TRUE(server_value_problem("admin_reserved_clients", "-1",
                                   "server.admin_reserved_clients must be between 0 and"));
  EXPECT_TRUE(server_value_problem("login_throttle_entries", "15",
                                   "server.login_throttle_entries must be between 16 and"));
  EXPECT_TRUE(server_value_problem("login_failure_burst", "0",
                                   "server.login_failure_burst must be between 1 and"));
  EXPECT_TRUE(server_value_problem("login_failure_interval", "0",
                                   "server.login_failure_interval must be greater than 0"));
  // The per-address cap cannot exceed the global one.
  EXPECT_TRUE(one_problem(
      "server:\n  max_pending_logins: 10\n  max_pending_logins_per_address: 11\n" + kTail, 3, 35,
      "server.max_pending_logins_per_address (11) is greater than server.max_pending_logins"));
}

TEST(ConfigErrors, BooleanMustBeTrueOrFalse) {
  for (const char* value : {"yes", "on", "True", "1", "\"true\""}) {
    EXPECT_TRUE(one_problem(
        std::string("databases: [{name: demo, driver: sqlite, connection: demo.db}]\n") +
            "users: [{name: demo, password: demo, admin: " + value + "}]\n",
        2, 45, "users[0].admin: expected true or false"))
        << value;
  }
}

// ---- required keys ------------------------------------------------------------------

TEST(ConfigErrors, DatabaseNameDriverAndConnectionAreRequired) {
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - driver: sqlite
    connection: demo.db
)",
                          3, 5, "databases[0] is missing the required key \"name\""));
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - name: demo
    connection: demo.db
)",
                          3, 5, "databases[0] is missing the required key \"driver\""));
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - { name: demo, driver: sqlite }
)",
                          3, 5, "databases[0] is missing the required key \"connection\""));
}

TEST(ConfigErrors, RequiredValuesMustNotBeEmpty) {
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - { name: demo, driver: sqlite, connection: "" }
)",
                          3, 47, "databases[0].connection must not be empty"));
  EXPECT_TRUE(one_problem(R"(databases: [{name: demo, driver: sqlite, connection: demo.db}]
users:
  - { name: "", password: x }
)",
                          3, 13, "users[0].name must not be empty"));
}

TEST(ConfigErrors, UserNeedsANameAndExactlyOneCredential) {
  const std::string dbs = "databases: [{name: demo, driver: sqlite, connection: demo.db}]\n";
  EXPECT_TRUE(one_problem(dbs + "users:\n  - { password: x }\n", 3, 5,
                          "users[0] is missing the required key \"name\""));
  EXPECT_TRUE(one_problem(dbs + "users:\n  - { name: demo, admin: true }\n", 3, 5,
                          "users[0] has no credential: set password"));
  EXPECT_TRUE(one_problem(dbs + "users:\n  - { name: demo, password: x, scram: "
                                "\"SCRAM-SHA-256$4096:c2FsdA==$"
                                "ta4wbddqkyx7kYAAeopzDjKGf9CJkGnXFaO+7O6nxFk=:"
                                "KHPk7iMcv/aMZxMQuDVaQ2YUuYfce13CzkJjTJcP7Dk=\" }\n",
                          3, 32, "users[0] sets both password and scram; set exactly one"));
}

TEST(ConfigErrors, ScramMustHavePostgresVerifierShape) {
  const std::string head =
      "databases: [{name: demo, driver: sqlite, connection: demo.db}]\n"
      "users: [{name: ops, scram: \"";
  const std::string key = "ta4wbddqkyx7kYAAeopzDjKGf9CJkGnXFaO+7O6nxFk=";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"md5abcdef", "must start with \"SCRAM-SHA-256$\""},
      {"SCRAM-SHA-1$4096:c2FsdA==$" + key + ":" + key, "must start with"},
      {"SCRAM-SHA-256$4096:c2FsdA==", "expected SCRAM-SHA-256$<iterations>"},
      {"SCRAM-SHA-256$4096c2FsdA==$" + key + ":" + key, "expected SCRAM-SHA-256$<iterations>"},
      {"SCRAM-SHA-256$x:c2FsdA==$" + key + ":" + key, "iteration count"},
      {"SCRAM-SHA-256$0:c2FsdA==$" + key + ":" + key, "iteration count"},
      {"SCRAM-SHA-256$4096:c2Fsd!==$" + key + ":" + key, "the salt is not base64"},
      {"SCRAM-SHA-256$4096:c2FsdA==$abc:" + key, "base64 of 32 bytes"},
      {"SCRAM-SHA-256$4096:c2FsdA==$" + key + ":" + key + "AAAA", "base64 of 32 bytes"},
  };
  for (const auto& [verifier, text] : bad) {
    EXPECT_TRUE(one_problem(head + verifier + "\"}]\n", 2, 28, text)) << verifier;
  }
}

// ---- references ---------------------------------------------------------------------

TEST(ConfigErrors, DuplicateDatabaseNameIsReportedAtTheSecondName) {
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - { name: demo, driver: sqlite, connection: a.db }
  - { name: demo, driver: sqlite, connection: b.db }
)",
                          4, 13,
                          "databases[1].name: duplicate database name \"demo\" (first declared "
                          "at line 3)"));
}

TEST(ConfigErrors, DuplicateUserNameIsReportedAtTheSecondName) {
  EXPECT_TRUE(
      one_problem(R"(databases: [{name: demo, driver: sqlite, connection: demo.db}]
users:
  - { name: demo, password: a }
  - name: demo
    password: b
)",
                  4, 11, "users[1].name: duplicate user name \"demo\" (first declared at line 3)"));
}

TEST(ConfigErrors, DuplicateListenerAddressAndPortIsReportedAtTheSecondListener) {
  EXPECT_TRUE(one_problem(R"(listeners:
  - { address: 127.0.0.1, port: 6432 }
  - { address: 127.0.0.2, port: 6432 }
  - { port: 6432 }
)" + kTail,
                          4, 5,
                          "listeners[2]: 127.0.0.1 port 6432 is already used by the listener at "
                          "line 2"));
  // The same address written another way is the same address.
  EXPECT_TRUE(one_problem(R"(listeners:
  - { address: "::1", port: 7000 }
  - { address: "0:0::1", port: 7000 }
)" + kTail,
                          3, 5, "is already used by the listener at line 2"));
}

TEST(ConfigErrors, PortZeroMayRepeatBecauseEachGetsAnEphemeralPort) {
  const Config c = load_string(
      "listeners: [{port: 0}, {port: 0}, {address: 127.0.0.1, port: 0}]\n" + kTail, testing::kFile);
  EXPECT_EQ(c.listeners.size(), 3u);
}

TEST(ConfigErrors, UserDatabasesMustNameConfiguredDatabases) {
  EXPECT_TRUE(one_problem(R"(databases: [{name: demo, driver: sqlite, connection: demo.db}]
users:
  - name: ops
    password: x
    databases: [demo, sales]
)",
                          5, 23, "users[0].databases[1]: no database named \"sales\""));
}

// ---- values -------------------------------------------------------------------------

TEST(ConfigErrors, PoolMinAboveMaxIsReportedAtMin) {
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - name: demo
    driver: sqlite
    connection: demo.db
    pool: { min: 9, max: 8 }
)",
                          6, 18, "databases[0].pool: min (9) is greater than max (8)"));
  // Against the default max (8).
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - name: demo
    driver: sqlite
    connection: demo.db
    pool:
      min: 9
)",
                          7, 12, "min (9) is greater than max (8)"));
}

TEST(ConfigErrors, PoolMaxBelowOneIsRefused) {
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - { name: demo, driver: sqlite, connection: demo.db, pool: { max: 0 } }
)",
                          3, 69, "databases[0].pool.max must be between 1 and 2147483647, got 0"));
}

TEST(ConfigErrors, UnknownNamesOfEnumeratedSettingsAreRefused) {
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - { name: demo, driver: sqlite, connection: demo.db, pool: { mode: batch } }
)",
                          3, 70,
                          "databases[0].pool.mode must be one of session | transaction | "
                          "statement, got \"batch\""));
  EXPECT_TRUE(one_problem("server: {log: {level: verbose}}\n" + kTail, 1, 23,
                          "server.log.level must be one of trace | debug | info | warn | error | "
                          "critical | off, got \"verbose\""));
  EXPECT_TRUE(one_problem("server: {log: {format: xml}}\n" + kTail, 1, 24,
                          "server.log.format must be one of text | json, got \"xml\""));
  EXPECT_TRUE(one_problem("listeners: [{protocol: mysql}]\n" + kTail, 1, 24,
                          "listeners[0].protocol must be one of postgres | tds | http"));
  EXPECT_TRUE(one_problem("listeners: [{tls: prefer}]\n" + kTail, 1, 19,
                          "listeners[0].tls must be one of off | optional | required"));
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - { name: demo, driver: oracle, connection: x }
)",
                          3, 27,
                          "databases[0].driver must be one of sqlite | postgresql | mysql | odbc "
                          "| tds, got \"oracle\""));
}

TEST(ConfigErrors, MalformedDurationIsReportedAtTheValue) {
  EXPECT_TRUE(one_problem("server:\n  query_timeout: 30\n" + kTail, 2, 18,
                          "server.query_timeout: malformed duration \"30\""));
  EXPECT_TRUE(
      one_problem("server:\n  shutdown_grace: -5s\n" + kTail, 2, 19, "malformed duration \"-5s\""));
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - name: demo
    driver: sqlite
    connection: demo.db
    pool: { idle_timeout: 10 min }
)",
                          6, 27, "databases[0].pool.idle_timeout: malformed duration \"10 min\""));
}

TEST(ConfigErrors, ZeroIsRefusedWhereAWaitMustBeBounded) {
  EXPECT_TRUE(
      server_value_problem("login_timeout", "0", "server.login_timeout must be greater than 0"));
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - { name: demo, driver: sqlite, connection: demo.db, pool: { acquire_timeout: 0s } }
)",
                          3, 81, "databases[0].pool.acquire_timeout must be greater than 0"));
  EXPECT_TRUE(server_value_problem("max_message_size", "0",
                                   "server.max_message_size must be greater than 0"));
}

TEST(ConfigErrors, MaxValueSizeIsBetweenOneByteAndOneGib) {
  EXPECT_TRUE(server_value_problem("max_value_size", "0",
                                   "server.max_value_size must be between 1 and 1GiB"));
  EXPECT_TRUE(server_value_problem("max_value_size", "2GiB",
                                   "server.max_value_size must be between 1 and 1GiB"));
}

TEST(ConfigErrors, MalformedSizeIsReportedAtTheValue) {
  EXPECT_TRUE(one_problem("server:\n  max_message_size: 64 MiB\n" + kTail, 2, 21,
                          "server.max_message_size: malformed size \"64 MiB\""));
  EXPECT_TRUE(
      one_problem("server:\n  max_message_size: 64mb\n" + kTail, 2, 21, "malformed size \"64mb\""));
}

TEST(ConfigErrors, MalformedNetworkIsReportedAtTheListItem) {
  EXPECT_TRUE(one_problem("listeners:\n  - allow: [127.0.0.0/8, 10.0.0.0/33, \"::1\"]\n" + kTail, 2,
                          26, "listeners[0].allow[1]: malformed network \"10.0.0.0/33\""));
  EXPECT_TRUE(one_problem("listeners:\n  - allow: []\n" + kTail, 2, 12,
                          "listeners[0].allow is an empty list, which would admit nobody"));
}

TEST(ConfigErrors, ListenerAddressMustBeAnIpAddress) {
  EXPECT_TRUE(one_problem("listeners: [{address: localhost}]\n" + kTail, 1, 23,
                          "listeners[0].address must be an IPv4 or IPv6 address"));
}

TEST(ConfigErrors, MalformedPinIsReportedAtTheListItem) {
  EXPECT_TRUE(one_problem(R"(databases: [{name: demo, driver: sqlite, connection: demo.db}]
users:
  - name: ops
    password: x
    client_cert_pins:
      - 64f46a7526a186d2346552453ae478ca51244674f5b21ba150bd483b39f7c812
      - 64f46a7526a186d2346552453ae478ca51244674f5b21ba150bd483b39f7c8
)",
                          7, 9, "users[0].client_cert_pins[1]: malformed pin"));
}

TEST(ConfigErrors, UserDatabasesListMustNotBeEmpty) {
  EXPECT_TRUE(one_problem(R"(databases: [{name: demo, driver: sqlite, connection: demo.db}]
users: [{name: ops, password: x, databases: []}]
)",
                          2, 45, "users[0].databases is an empty list"));
}

TEST(ConfigErrors, PasswordEnvAndPasswordFileAreExclusive) {
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - name: pg
    driver: postgresql
    connection: host=db user=app
    password_env: PG_SECRET
    password_file: secrets/pg
)",
                          3, 5, "databases[0] sets both password_env and password_file"));
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - name: pg
    driver: postgresql
    connection: host=db user=app
    password_env: PG-SECRET
)",
                          6, 19, "databases[0].password_env must be an environment variable name"));
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - name: pg
    driver: postgresql
    connection: host=db user=app
    auth_user: lookup
    auth_password_env: LOOKUP-SECRET
)",
                          7, 24,
                          "databases[0].auth_password_env must be an environment variable name"));
}

TEST(ConfigErrors, OptionValuesMustBeScalars) {
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - name: demo
    driver: sqlite
    connection: demo.db
    options: { busy_timeout: 5s, pragmas: [wal] }
)",
                          6, 43,
                          "databases[0].options.pragmas: expected a scalar (text, a number, true "
                          "or false), got a list"));
}

TEST(ConfigErrors, CipherSuitesMustBeTls13Suites) {
  EXPECT_TRUE(
      one_problem("tls:\n  ciphersuites: TLS_AES_128_GCM_SHA256:ECDHE-RSA-AES128-SHA\n" + kTail, 2,
                  17, "tls.ciphersuites: unknown TLS 1.3 cipher suite \"ECDHE-RSA-AES128-SHA\""));
}

// ---- TLS ----------------------------------------------------------------------------

TEST(ConfigErrors, CertificateAndKeyGoTogether) {
  auto problems = problems_of("tls:\n  key: tls/server.key\n" + kTail);
  ASSERT_EQ(problems.size(), 1u) << testing::list(problems);
  EXPECT_TRUE(has_problem(problems, 2, 3, "tls.certificate and tls.key go together"));
}

TEST(ConfigErrors, ClientCaNeedsAServerCertificate) {
  EXPECT_TRUE(one_problem("tls:\n  client_ca: ca.pem\n" + kTail, 2, 3,
                          "tls.client_ca (client certificates) needs a certificate: set "
                          "tls.certificate/tls.key or tls.generate: true"));
}

TEST(ConfigErrors, ListenerTlsNeedsACertificate) {
  auto problems = problems_of("listeners: [{tls: required}]\n" + kTail);
  EXPECT_TRUE(has_problem(problems, 1, 14,
                          "listeners[0].tls: required needs a certificate: set "
                          "tls.certificate/tls.key or tls.generate: true"));
}

TEST(ConfigErrors, TdsListenerWithoutACertificateSaysWhatToSet) {
  auto problems = problems_of("listeners:\n  - { protocol: tds }\n" + kTail);
  EXPECT_TRUE(has_problem(problems, 2, 5,
                          "listeners[0]: the TDS listener needs a certificate: set "
                          "tls.certificate/tls.key or tls.generate: true"));
  // With tls.generate the configuration loads.
  const Config c = load_string("tls: {generate: true}\nlisteners:\n  - { protocol: tds }\n" + kTail,
                               testing::kFile);
  EXPECT_EQ(c.listeners[0].protocol, Protocol::tds);
}

// ---- peers ---------------------------------------------------------------------------

TEST(ConfigPeers, PeersNeedAPeerIdUniqueIdsAndIpAddresses) {
  auto problems = problems_of(R"(server: {peer_id: 2}
peers:
  - {id: 2, address: 10.0.0.2}
  - {id: 3, address: db.example}
  - {id: 3, address: 10.0.0.4}
  - {address: 10.0.0.5}
  - {id: 300, address: 10.0.0.6}
)" + kTail);
  EXPECT_TRUE(
      has_problem(problems, 3, 5, "peers[0]: peer id 2 is this process's own server.peer_id"))
      << testing::list(problems);
  EXPECT_TRUE(has_problem(problems, 4, 22,
                          "peers[1].address must be an IPv4 or IPv6 address, got \"db.example\""))
      << testing::list(problems);
  EXPECT_TRUE(
      has_problem(problems, 5, 5, "peers[2]: duplicate peer id 3 (first declared at line 4)"))
      << testing::list(problems);
  EXPECT_TRUE(has_problem(problems, 6, 5, "peers[3] is missing the required key \"id\""))
      << testing::list(problems);
  EXPECT_EQ(problems.size(), 5u) << testing::list(problems);

  auto missing = problems_of("peers: [{id: 1, address: 10.0.0.1}]\n" + kTail);
  EXPECT_TRUE(has_problem(missing, 1, 9,
                          "peers needs server.peer_id (1-255): this process's own id, carried "
                          "in its cancel keys"))
      << testing::list(missing);
}

// ---- the HTTP listener ---------------------------------------------------------------

TEST(ConfigHttp, HttpListenerIsAcceptedBesideTheOthers) {
  const Config c = load_string(R"(tls: {generate: true}
listeners:
  - { protocol: postgres, port: 6432, tls: off }
  - { protocol: tds, port: 11433 }
  - protocol: http
    port: 9930
)" + kTail,
                               testing::kFile);
  ASSERT_EQ(c.listeners.size(), 3u);
  EXPECT_EQ(c.listeners[2].protocol, Protocol::http);
  EXPECT_EQ(c.listeners[2].port, 9930);
}

// ---- TLS ----------------------------------------------------------------------------

TEST(ConfigTls, ListenerTlsModesAreAcceptedWithACertificate) {
  const Config c = load_string(
      "tls: {generate: true}\nlisteners:\n  - { tls: optional }\n  - { tls: "
      "required, port: 6433 }\n  - { tls: off, port: 6434 }\n  - { port: 6435 }\n" +
          kTail,
      testing::kFile);
  ASSERT_EQ(c.listeners.size(), 4u);
  EXPECT_EQ(c.listeners[0].tls, TlsMode::optional);
  EXPECT_EQ(c.listeners[1].tls, TlsMode::required);
  EXPECT_EQ(c.listeners[2].tls, TlsMode::off);
  EXPECT_EQ(c.listeners[3].tls, TlsMode::optional);  // the default with a certificate
}

TEST(ConfigTls, CertificateAndKeyAreAccepted) {
  const Config c =
      load_string("tls:\n  certificate: server.crt\n  key: server.key\n" + kTail, testing::kFile);
  EXPECT_TRUE(c.tls.present);
  EXPECT_NE(c.tls.certificate.find("server.crt"), std::string::npos);
}

TEST(ConfigTls, TlsSectionWithoutACertificateLeavesListenersOff) {
  const Config c = load_string(
      "tls:\n  generate: false\n  ciphersuites: TLS_AES_128_GCM_SHA256\n  "
      "certificate: \"\"\n" +
          kTail,
      testing::kFile);
  EXPECT_FALSE(c.tls.present);
  EXPECT_EQ(c.tls.ciphersuites, "TLS_AES_128_GCM_SHA256");
  EXPECT_EQ(c.listeners[0].tls, TlsMode::off);
}

TEST(ConfigTls, DatabaseTlsBlockIsAccepted) {
  const Config c = load_string(R"(users: [{name: demo, password: demo}]
databases:
  - name: pg
    driver: postgresql
    connection: host=db.internal user=app
    tls: { ca: ca.pem, pin_sha256: ["AB:CD:ef:00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff:00:11:22:33:44:55:66:77:88:99:aa:bb:cc"] }
)",
                               testing::kFile);
  ASSERT_TRUE(c.databases[0].tls.present);
  EXPECT_NE(c.databases[0].tls.ca.find("ca.pem"), std::string::npos);
  ASSERT_EQ(c.databases[0].tls.pin_sha256.size(), 1u);
  EXPECT_EQ(c.databases[0].tls.pin_sha256[0],
            "abcdef00112233445566778899aabbccddeeff00112233445566778899aabbcc");
}

TEST(ConfigTls, MysqlPinIsRefusedAtItsKey) {
  // MariaDB Connector/C exposes no peer certificate: a pin it cannot check is
  // refused, never silently ignored.
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - name: my
    driver: mysql
    connection: host=db.internal user=app
    tls:
      ca: ca.pem
      pin_sha256: ["abcdef00112233445566778899aabbccddeeff00112233445566778899aabbcc"]
)",
                          8, 7, "databases[0].tls.pin_sha256: the mysql driver cannot check"));
  const Config c = load_string(R"(users: [{name: demo, password: demo}]
databases:
  - { name: my, driver: mysql, connection: host=db.internal, tls: { ca: ca.pem } }
)",
                               testing::kFile);
  EXPECT_TRUE(c.databases[0].tls.present);
}

TEST(ConfigAuth, PassthroughNeedsRolesAndNoMin) {
  const Config c = load_string(R"(users: [{name: demo, password: demo}]
databases:
  - { name: pg, driver: postgresql, connection: host=db, auth: { mode: passthrough } }
  - { name: pf, driver: postgresql, connection: host=db }
  - { name: my, driver: mysql, connection: host=db, auth: { mode: passthrough } }
  - { name: od, driver: odbc, connection: "DSN=x", auth: { mode: passthrough } }
  - { name: ms, driver: tds, connection: "host=db", auth: { mode: passthrough } }
)",
                               testing::kFile);
  EXPECT_EQ(c.databases[0].auth, AuthMode::passthrough);
  EXPECT_EQ(c.databases[1].auth, AuthMode::fixed);
  // Every driver with logins takes it.
  for (size_t i = 2; i < 5; ++i)
    EXPECT_EQ(c.databases[i].auth, AuthMode::passthrough) << c.databases[i].driver;
  // SQLite has no roles: refused at the key, with the way out.
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - name: lite
    driver: sqlite
    connection: app.db
    auth: { mode: passthrough }
)",
                          6, 19, "databases[0].auth.mode: passthrough needs a driver with"));
  // No password is held without clients: pool.min cannot be kept.
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - name: pg
    driver: postgresql
    connection: host=db
    auth: { mode: passthrough }
    pool: { min: 1 }
)",
                          6, 19, "cannot keep pool.min connections"));
  // The backend checks passwords itself: an auth_user would never be asked.
  EXPECT_TRUE(one_problem(R"(users: [{name: demo, password: demo}]
databases:
  - name: pg
    driver: postgresql
    connection: host=db
    auth: { mode: passthrough }
    auth_user: lookup
)",
                          7, 16, "auth_user has no use with auth.mode passthrough"));
}

// ---- the driver validator -----------------------------------------------------------

std::vector<std::pair<std::string, std::string>> sqlite_options(const Database& db) {
  std::vector<std::pair<std::string, std::string>> out;
  if (db.driver != "sqlite") out.emplace_back("", "driver " + db.driver + " is not built in");
  for (const auto& [key, value] : db.options) {
    if (key != "busy_timeout" && key != "journal") out.emplace_back(key, "unknown option");
  }
  if (db.options.count("journal") == 0) out.emplace_back("journal", "is required");
  return out;
}

TEST(ConfigErrors, ValidatorAnswersAreLocatedAtTheOptionOrTheEntry) {
  auto problems = problems_of(R"(users: [{name: demo, password: demo}]
databases:
  - name: a
    driver: sqlite
    connection: a.db
    options: { journal: wal, busy: 5s }
  - { name: b, driver: oracle, connection: b }
)",
                              sqlite_options);
  ASSERT_EQ(problems.size(), 3u) << testing::list(problems);
  EXPECT_TRUE(has_problem(problems, 6, 30, "databases[0].options.busy: unknown option"));
  // The driver name is the validator's to check; "" locates at the entry.
  EXPECT_TRUE(has_problem(problems, 7, 5, "databases[1] (b): driver oracle is not built in"));
  // An option the file lacks locates at the entry.
  EXPECT_TRUE(has_problem(problems, 7, 5, "databases[1].options.journal: is required"));
}

// ---- several at once ----------------------------------------------------------------

TEST(ConfigErrors, AllProblemsAreReportedTogetherInFileOrder) {
  const std::string yaml = R"(server:
  threads: many
  login_timeout: 5 seconds
listeners:
  - { port: 70000 }
users:
  - { name: demo }
  - { name: demo, password: x, databases: [nope] }
databases:
  - { name: demo, driver: sqlite, connection: a.db, pool: { min: 3, max: 2 } }
  - { name: demo, connection: b.db }
)";
  try {
    load_string(yaml, "wp.yaml");
    FAIL() << "loaded";
  } catch (const ConfigError& e) {
    const std::string expected =
        "wp.yaml:2:12: server.threads: expected an integer, got \"many\"\n"
        "wp.yaml:3:18: server.login_timeout: malformed duration \"5 seconds\"; expected a whole "
        "number with a unit ms, s, m, h or d (250ms, 5s, 10m, 1h, 1d), or 0\n"
        "wp.yaml:5:13: listeners[0].port must be between 0 and 65535, got 70000\n"
        "wp.yaml:7:5: users[0] has no credential: set password (plaintext, for development) or "
        "scram\n"
        "wp.yaml:8:13: users[1].name: duplicate user name \"demo\" (first declared at line 7)\n"
        "wp.yaml:8:44: users[1].databases[0]: no database named \"nope\" in databases\n"
        "wp.yaml:10:66: databases[0].pool: min (3) is greater than max (2)\n"
        "wp.yaml:11:5: databases[1] is missing the required key \"driver\"\n"
        "wp.yaml:11:13: databases[1].name: duplicate database name \"demo\" (first declared at "
        "line 10)";
    EXPECT_EQ(std::string(e.what()), expected);
    ASSERT_EQ(e.problems().size(), 9u);
    EXPECT_EQ(e.problems()[0].file, "wp.yaml");
    EXPECT_EQ(e.problems()[0].line, 2);
    EXPECT_EQ(e.problems()[0].column, 12);
  }
}

}  // namespace
}  // namespace wirepool::config
