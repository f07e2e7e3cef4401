// Several hosts per database (`hosts:`, `health_check:`):
//  - a hosts list loads with its ports (default 0 = the driver's), and the
//    health_check keys with their defaults and written values (failures_to_ban
//    2 by default);
//  - refused: a host without `host`, an empty list, a port out of range, a
//    driver other than postgresql, a duration under 10ms, ban_time_max below
//    ban_time, failures_to_ban 0;
//  - read replicas: `read_only` makes a second entry named read_only.name
//    (reads_of the first, the same hosts, replicas and keys), which users may
//    name in their databases; `hosts`/`replicas`/`read_only` load for mysql;
//  - read_only.readmit_lag loads (0 = 4/5 of max_replica_lag by default);
//  - refused: read_only without a name, a name already taken, an unknown
//    fallback or balance, a readmit_lag above max_replica_lag, replicas without read_only,
//    read_only for sqlite;
//  - read_only.route_transactions is off by default and loads when on;
//  - read_only.route_statements likewise, postgresql in transaction mode only;
//    refused for mysql and for a postgresql entry not in transaction mode.

#include <gtest/gtest.h>

#include "config/config.hpp"
#include "tests/unit/config/helpers.hpp"

namespace wirepool::config {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::has_problem;
using testing::kFile;
using testing::problems_of;

const std::string kUsers = "users: [{name: demo, password: demo}]\n";

TEST(ConfigHosts, HostsListAndHealthCheckLoad) {
  const Config c = load_string(
      "databases:\n"
      "  - name: app\n"
      "    driver: postgresql\n"
      "    connection: \"dbname=app\"\n"
      "    hosts:\n"
      "      - { host: 10.0.0.1, port: 5433 }\n"
      "      - { host: db2 }\n"
      "    health_check: { interval: 2s, ban_time: 500ms, failover_timeout: 9s, failures_to_ban: 3 "
      "}\n" +
          kUsers,
      kFile);
  const Database& d = c.databases.at(0);
  ASSERT_EQ(d.hosts.size(), 2u);
  EXPECT_EQ(d.hosts[0].host, "10.0.0.1");
  EXPECT_EQ(d.hosts[0].port, 5433);
  EXPECT_EQ(d.hosts[1].host, "db2");
  EXPECT_EQ(d.hosts[1].port, 0);
  EXPECT_EQ(d.health_check.interval, seconds(2));
  EXPECT_EQ(d.health_check.ban_time, milliseconds(500));
  EXPECT_EQ(d.health_check.failover_timeout, seconds(9));
  EXPECT_EQ(d.health_check.failover_interval, milliseconds(200));  // default
  EXPECT_EQ(d.health_check.timeout, seconds(3));
  EXPECT_EQ(d.health_check.ban_time_max, seconds(30));
  EXPECT_EQ(d.health_check.failures_to_ban, 3);
  EXPECT_EQ(HealthCheck{}.failures_to_ban, 2);
}

TEST(ConfigHosts, BadHostsAndHealthChecksAreRefusedAtTheirKey) {
  const std::string head =
      "databases:\n"
      "  - name: app\n"
      "    driver: postgresql\n"
      "    connection: \"dbname=app\"\n";
  EXPECT_TRUE(has_problem(problems_of(head + "    hosts: [{ port: 5432 }]\n" + kUsers), 5, 13,
                          "missing the required key \"host\""));
  EXPECT_TRUE(
      has_problem(problems_of(head + "    hosts: []\n" + kUsers), 5, 12, "is an empty list"));
  EXPECT_TRUE(has_problem(problems_of(head + "    hosts: [{ host: a, port: 70000 }]\n" + kUsers), 5,
                          30, "must be between 1 and 65535"));
  EXPECT_TRUE(has_problem(problems_of(head + "    health_check: { interval: 5ms }\n" + kUsers), 5,
                          31, "at least 10ms"));
  EXPECT_TRUE(has_problem(
      problems_of(head + "    health_check: { ban_time: 5s, ban_time_max: 1s }\n" + kUsers), 5, 19,
      "ban_time_max is less than ban_time"));
  EXPECT_TRUE(has_problem(problems_of(head + "    health_check: { failures_to_ban: 0 }\n" + kUsers),
                          5, 38, "must be between 1 and 100"));
  EXPECT_TRUE(has_problem(problems_of("databases:\n"
                                      "  - name: app\n"
                                      "    driver: sqlite\n"
                                      "    connection: app.db\n"
                                      "    hosts: [{ host: a }]\n" +
                                      kUsers),
                          5, 5, "only the postgresql and mysql drivers take several hosts"));
}

TEST(ConfigHosts, ReadOnlyMakesASecondDatabaseOnTheSameHosts) {
  const Config c = load_string(
      "databases:\n"
      "  - name: shop\n"
      "    driver: mysql\n"
      "    connection: \"user=u dbname=shop\"\n"
      "    hosts: [{ host: db1, port: 3307 }]\n"
      "    replicas: [{ host: r1 }]\n"
      "    read_only: { name: shop_ro, max_replica_lag: 2s, readmit_lag: 1500ms, fallback: refuse, "
      "balance: round_robin }\n"
      "    pool: { max: 3 }\n"
      "users: [{name: demo, password: demo, databases: [shop_ro]}]\n",
      kFile);
  ASSERT_EQ(c.databases.size(), 2u);
  const Database& rw = c.databases[0];
  const Database& ro = c.databases[1];
  EXPECT_EQ(rw.reads_of, "");
  EXPECT_EQ(ro.name, "shop_ro");
  EXPECT_EQ(ro.reads_of, "shop");
  EXPECT_EQ(ro.hosts, rw.hosts);
  ASSERT_EQ(ro.replicas.size(), 1u);
  EXPECT_EQ(ro.replicas[0].host, "r1");
  EXPECT_EQ(ro.pool.max, 3);
  EXPECT_EQ(ro.read_only.max_replica_lag, seconds(2));
  EXPECT_EQ(ro.read_only.readmit_lag, milliseconds(1500));
  EXPECT_EQ(ro.read_only.fallback, ReadOnly::Fallback::refuse);
  EXPECT_EQ(ro.read_only.balance, ReadOnly::Balance::round_robin);
  EXPECT_EQ(c.find_database("shop_ro"), &c.databases[1]);
}

TEST(ConfigHosts, BadReadOnlySettingsAreRefused) {
  const std::string head =
      "databases:\n"
      "  - name: app\n"
      "    driver: postgresql\n"
      "    connection: \"dbname=app\"\n";
  EXPECT_TRUE(has_problem(problems_of(head + "    read_only: { max_replica_lag: 1s }\n" + kUsers),
                          5, 16, "missing the required key \"name\""));
  EXPECT_TRUE(
      has_problem(problems_of(head + "    read_only: { name: app, fallback: maybe }\n" + kUsers), 5,
                  39, "must be one of"));
  EXPECT_TRUE(
      has_problem(problems_of(head + "    read_only: { name: app_ro, balance: random }\n" + kUsers),
                  5, 41, "must be one of"));
  EXPECT_TRUE(has_problem(
      problems_of(head + "    read_only: { name: app_ro, max_replica_lag: 1s, readmit_lag: 2s }\n" +
                  kUsers),
      5, 66, "readmit_lag is above max_replica_lag"));
  EXPECT_TRUE(has_problem(problems_of(head + "    read_only: { name: app }\n" + kUsers), 5, 5,
                          "duplicate database name \"app\""));
  EXPECT_TRUE(has_problem(problems_of(head + "    replicas: [{ host: r1 }]\n" + kUsers), 5, 5,
                          "nothing reads from them without read_only.name"));
  EXPECT_TRUE(has_problem(problems_of("databases:\n"
                                      "  - name: app\n"
                                      "    driver: sqlite\n"
                                      "    connection: app.db\n"
                                      "    read_only: { name: app_ro }\n" +
                                      kUsers),
                          5, 5, "only the postgresql and mysql drivers have read replicas"));
}

TEST(ConfigHosts, RouteTransactionsIsOptIn) {
  const std::string head =
      "databases:\n"
      "  - name: app\n"
      "    driver: postgresql\n"
      "    connection: \"dbname=app\"\n";
  const Config off = load_string(head + "    read_only: { name: app_ro }\n" + kUsers, kFile);
  EXPECT_FALSE(off.databases[0].read_only.route_transactions);
  const Config on = load_string(
      head + "    read_only: { name: app_ro, route_transactions: true }\n" + kUsers, kFile);
  EXPECT_TRUE(on.databases[0].read_only.route_transactions);
  EXPECT_TRUE(has_problem(
      problems_of(head + "    pool: { mode: session }\n" +
                  "    read_only: { name: app_ro, route_transactions: true }\n" + kUsers),
      6, 32, "only a postgresql database in transaction pool mode"));
  EXPECT_TRUE(
      has_problem(problems_of("databases:\n"
                              "  - name: app\n"
                              "    driver: mysql\n"
                              "    connection: \"dbname=app\"\n"
                              "    read_only: { name: app_ro, route_transactions: true }\n" +
                              kUsers),
                  5, 32, "only a postgresql database in transaction pool mode"));
}

TEST(ConfigHosts, RouteStatementsIsOptIn) {
  const std::string head =
      "databases:\n"
      "  - name: app\n"
      "    driver: postgresql\n"
      "    connection: \"dbname=app\"\n";
  const Config off = load_string(head + "    read_only: { name: app_ro }\n" + kUsers, kFile);
  EXPECT_FALSE(off.databases[0].read_only.route_statements);
  const Config on = load_string(
      head + "    read_only: { name: app_ro, route_statements: true }\n" + kUsers, kFile);
  EXPECT_TRUE(on.databases[0].read_only.route_statements);
  EXPECT_FALSE(on.databases[0].read_only.route_transactions);
  EXPECT_TRUE(has_problem(
      problems_of(head + "    pool: { mode: session }\n" +
                  "    read_only: { name: app_ro, route_statements: true }\n" + kUsers),
      6, 32,
      "only a postgresql database in transaction pool mode routes its read-only statements"));
  EXPECT_TRUE(has_problem(problems_of("databases:\n"
                                      "  - name: app\n"
                                      "    driver: mysql\n"
                                      "    connection: \"dbname=app\"\n"
                                      "    read_only: { name: app_ro, route_statements: true }\n" +
                                      kUsers),
                          5, 32, "routes its read-only statements"));
}

}  // namespace
}  // namespace wirepool::config
