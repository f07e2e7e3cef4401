// DatabasePool's queue of waiters, on an in-memory SQLite backend (the pool's
// I/O side: the pure state machine has its own tests in tests/unit/pool/).
//
// Cases: a waiter taken back with cancel_acquire() from the middle of the
// queue is never answered, and the ones after it are granted in order (this
// shifted the deque's elements by move assignment, which Boost 1.81's
// any_completion_handler turns into an endless recursion unless the waiter
// swaps); a waiter already granted cannot be taken back. pipeline_max(): the
// hosts of key=value and URI connection strings, local or not, and the auto
// value (2 x cores + 1 for a server on this host).

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <variant>
#include <vector>

#include "server/backend_pool.hpp"

namespace wirepool::server {
namespace {

/// Runs `io` until `done()` or `limit`.
bool run_until(boost::asio::io_context& io, const std::function<bool()>& done,
               std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_one_for(std::chrono::milliseconds(20));
  }
  return done();
}

struct Fixture {
  boost::asio::io_context io;
  BlockingExecutor blocking{1};
  std::shared_ptr<DatabasePool> pool;
  std::vector<int> granted;  // which waiters were answered, in order
  std::vector<Backend*> backends;

  Fixture() {
    config::Database d;
    d.name = "t";
    d.driver = "sqlite";
    d.connection = ":memory:";
    d.pool.max = 1;
    db::OpenOptions o;
    o.connection = d.connection;
    pool = std::make_shared<DatabasePool>(d, *db::find_driver("sqlite"), o, blocking, io);
    pool->start();
  }
  ~Fixture() {
    pool->shutdown();
    blocking.join();
  }
  pool::WaiterId wait(int tag) {
    return pool->acquire_async(io.get_executor(), [this,
                                                   tag](std::variant<Backend*, AcquireError> got) {
      granted.push_back(tag);
      backends.push_back(std::holds_alternative<Backend*>(got) ? std::get<Backend*>(got) : nullptr);
    });
  }
};

TEST(DatabasePool, WaiterTakenBackFromTheMiddleIsNeverAnswered) {
  Fixture f;
  f.wait(1);
  ASSERT_TRUE(run_until(f.io, [&] { return f.granted.size() == 1; }));
  ASSERT_NE(f.backends[0], nullptr);
  f.wait(2);
  const auto third = f.wait(3);
  f.wait(4);
  EXPECT_TRUE(f.pool->cancel_acquire(third));
  EXPECT_FALSE(f.pool->cancel_acquire(third));  // gone already
  EXPECT_EQ(f.pool->stats().waiting, 2u);

  f.pool->release(f.backends[0], true);
  ASSERT_TRUE(run_until(f.io, [&] { return f.granted.size() == 2; }));
  ASSERT_NE(f.backends[1], nullptr);
  f.pool->release(f.backends[1], true);
  ASSERT_TRUE(run_until(f.io, [&] { return f.granted.size() == 3; }));
  ASSERT_NE(f.backends[2], nullptr);
  EXPECT_EQ(f.granted, (std::vector<int>{1, 2, 4}));
  f.pool->release(f.backends[2], true);
  run_until(
      f.io, [] { return false; }, std::chrono::milliseconds(300));  // nothing else comes
  EXPECT_EQ(f.granted.size(), 3u);
}

TEST(DatabasePool, GrantedWaiterCannotBeTakenBack) {
  Fixture f;
  const auto first = f.wait(1);
  ASSERT_TRUE(run_until(f.io, [&] { return f.granted.size() == 1; }));
  EXPECT_FALSE(f.pool->cancel_acquire(first));
  f.pool->release(f.backends[0], true);
}

TEST(PipelineMax, HostsOfConnectionStrings) {
  using V = std::vector<std::string>;
  EXPECT_EQ(conninfo_hosts("host=127.0.0.1 port=5432 dbname=x"), V{"127.0.0.1"});
  EXPECT_EQ(conninfo_hosts("dbname=x user=y"), V{""});  // the default Unix socket
  EXPECT_EQ(conninfo_hosts("host = '/run/post gres' hostaddr=''"), V{"/run/post gres"});
  EXPECT_EQ(conninfo_hosts("host=db1,db2 hostaddr=10.0.0.1,10.0.0.2"), (V{"10.0.0.1", "10.0.0.2"}));
  EXPECT_EQ(conninfo_hosts("postgresql://u:p@localhost:5433/db"), V{"localhost"});
  EXPECT_EQ(conninfo_hosts("postgres://[::1]:5432,db.example:5433/db"), (V{"[::1]", "db.example"}));
  EXPECT_EQ(conninfo_hosts("postgresql:///db?host=/var/run/postgresql"), V{"/var/run/postgresql"});
  EXPECT_EQ(conninfo_hosts("postgresql://%2Frun%2Fpg/db"), V{"%2Frun%2Fpg"});
}

TEST(PipelineMax, AutoOnlyForAServerOnThisHost) {
  config::Database d;
  d.driver = "postgresql";
  d.pool.max = 10;
  d.connection = "host=127.0.0.1 port=5432";
  EXPECT_EQ(pipeline_max(d, 2), 5u);
  EXPECT_EQ(pipeline_max(d, 8), 17u);
  d.connection = "host=/tmp port=5432";
  EXPECT_EQ(pipeline_max(d, 2), 5u);
  d.connection = "host=localhost,db.example";
  EXPECT_EQ(pipeline_max(d, 2), 0u);  // one host elsewhere: no limit
  d.connection = "postgresql://db.example/x";
  EXPECT_EQ(pipeline_max(d, 2), 0u);
  d.pool.pipeline_max = 3;  // as written
  EXPECT_EQ(pipeline_max(d, 2), 3u);
  d.pool.pipeline = false;  // no trains: nothing to wait for
  EXPECT_EQ(pipeline_max(d, 2), 0u);
  d.pool.pipeline = true;
  d.pool.mode = config::PoolMode::session;
  EXPECT_EQ(pipeline_max(d, 2), 0u);
  d.pool.mode = config::PoolMode::transaction;
  d.driver = "mysql";
  EXPECT_EQ(pipeline_max(d, 2), 0u);
}

}  // namespace
}  // namespace wirepool::server
