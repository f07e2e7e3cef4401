// DatabasePool's queue of waiters, on an in-memory SQLite backend (the pool's
// I/O side: the pure state machine has its own tests in tests/unit/pool/).
//
// Cases: a waiter taken back with cancel_acquire() from the middle of the
// queue is never answered, and the ones after it are granted in order (this
// shifted the deque's elements by move assignment, which Boost 1.81's
// any_completion_handler turns into an endless recursion unless the waiter
// swaps); a waiter already granted cannot be taken back. pipeline_max(): the
// hosts of key=value and URI connection strings, local or not, and the auto
// value (2 x cores + 1 for a server on this host). Backend::watch(): a
// backend's watcher gone after the driver closed its descriptor leaves the
// socket that took that descriptor's number watched (the relay's lost wake-up).
// auth.mode passthrough: a password held from the first hold until the last
// one goes; verify_login (no pool needed) leaves the pool's owner count as it found it.

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
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
    pool = std::make_shared<DatabasePool>(d, "alice", std::make_shared<DatabaseShared>(),
                                          *db::find_driver("sqlite"), o, blocking, io);
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

TEST(DatabasePool, PasswordHeldUntilTheLastHoldGoes) {
  Fixture f;
  EXPECT_FALSE(f.pool->credentials_match("pw"));  // nothing held yet
  auto first = f.pool->hold_credentials("pw");
  // Held from the start: a temporary hold released it at once, and the
  // pool's first backend login went without a password.
  EXPECT_TRUE(f.pool->credentials_match("pw"));
  EXPECT_FALSE(f.pool->credentials_match("pw2"));
  auto second = f.pool->hold_credentials("pw");
  first.reset();
  EXPECT_TRUE(f.pool->credentials_match("pw"));
  second.reset();
  EXPECT_FALSE(f.pool->credentials_match("pw"));  // wiped with the last hold
}

TEST(DatabasePool, VerifyLoginNeedsNoPoolAndLeavesItsCountAlone) {
  Fixture f;
  const auto before = f.pool.use_count();
  std::optional<db::Error> error{db::Error{}};
  bool done = false;
  boost::asio::co_spawn(
      f.io,
      [&]() -> boost::asio::awaitable<void> {
        db::OpenOptions open;
        open.connection = ":memory:";
        open.user = "ann";
        open.password = "pw";
        error = co_await verify_login(f.blocking, *db::find_driver("sqlite"), open, nullptr);
        done = true;
      },
      boost::asio::detached);
  ASSERT_TRUE(run_until(f.io, [&] { return done; }));
  EXPECT_FALSE(error.has_value());  // SQLite opens whatever the password
  // GCC 12 destroyed a temporary job's owning capture twice: one owner too few.
  EXPECT_EQ(f.pool.use_count(), before);
}

TEST(BackendWatch, DriverClosingItsSocketLeavesTheNextOneWatched) {
  boost::asio::io_context io;
  int driver[2], next[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, driver), 0);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, next), 0);
  auto b = std::make_unique<Backend>();
  b->watch(driver[0], io.get_executor());
  ASSERT_TRUE(b->watcher->is_open());
  // The driver closes its socket (libpq on a lost connection, PQfinish); a
  // client accepted next gets the same number, watched on the same loop.
  const int number = driver[0];
  ASSERT_EQ(::close(number), 0);
  ASSERT_EQ(::dup2(next[0], number), number);
  ::close(next[0]);
  boost::asio::generic::stream_protocol::socket client(io);
  client.assign(boost::asio::generic::stream_protocol(AF_UNIX, 0), number);
  b.reset();  // the pool closes the backend: its watcher goes
  bool woken = false;
  client.async_wait(boost::asio::socket_base::wait_read,
                    [&](boost::system::error_code ec) { woken = !ec; });
  ASSERT_EQ(::write(next[1], "x", 1), 1);
  EXPECT_TRUE(run_until(
      io, [&] { return woken; }, std::chrono::seconds(2)));
  ::close(next[1]);
  ::close(driver[1]);
}

TEST(BackendWatch, SameDescriptorAndLoopKeepTheWatcher) {
  boost::asio::io_context io, other;
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  Backend b;
  auto* first = &b.watch(fds[0], io.get_executor());
  EXPECT_EQ(&b.watch(fds[0], io.get_executor()), first);
  EXPECT_EQ(b.watcher.get(), first);
  b.watch(fds[0], other.get_executor());  // another loop leased it: a new watcher
  EXPECT_EQ(b.watcher->get_executor(), boost::asio::any_io_executor(other.get_executor()));
  // Readable through the watcher: it watches the driver's socket.
  ASSERT_EQ(::write(fds[1], "y", 1), 1);
  char c = 0;
  EXPECT_EQ(b.watcher->receive(boost::asio::buffer(&c, 1)), 1u);
  EXPECT_EQ(c, 'y');
  b.watcher.reset();
  // The driver's own descriptor is still open: the watcher closed only its copy.
  EXPECT_EQ(::write(fds[0], "z", 1), 1);
  ::close(fds[0]);
  ::close(fds[1]);
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
