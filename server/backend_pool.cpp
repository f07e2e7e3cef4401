#include "server/backend_pool.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/container/small_vector.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <functional>
#include <optional>
#include <thread>
#include <utility>

#include "backends/odbc/odbc_text.hpp"

namespace wirepool::server {

namespace asio = boost::asio;

Backend::~Backend() = default;  // the watcher closes its own descriptor (a duplicate)

asio::generic::stream_protocol::socket& Backend::watch(int fd, const asio::any_io_executor& ex) {
  if (watcher && watched_fd == fd && watcher->get_executor() == ex) return *watcher;
  watcher.reset();  // deregisters and closes its duplicate, nothing of the driver's
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  const int family =
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0 ? addr.ss_family : AF_INET;
  watcher = std::make_unique<asio::generic::stream_protocol::socket>(ex);
  watched_fd = fd;
  const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  boost::system::error_code ec;
  if (own < 0) {
    ec.assign(errno, boost::system::system_category());
  } else {
    watcher->assign(asio::generic::stream_protocol(family, family == AF_UNIX ? 0 : IPPROTO_TCP),
                    own, ec);
    if (ec) ::close(own);
  }
  if (ec) spdlog::error("backend {}: cannot watch its socket: {}", id, ec.message());
  return *watcher;
}

// ---------------------------------------------------------------------------
// StatementCache

db::Statement* StatementCache::find(const std::string& key) {
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return &it->second->second;
}

db::Statement* StatementCache::insert(const std::string& key, db::Statement stmt,
                                      std::vector<db::Statement>* evicted) {
  if (auto it = map_.find(key); it != map_.end()) {
    evicted->push_back(std::move(it->second->second));
    lru_.erase(it->second);
    map_.erase(it);
  }
  lru_.emplace_front(key, std::move(stmt));
  map_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    evicted->push_back(std::move(lru_.back().second));
    map_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return &lru_.front().second;
}

void StatementCache::forget() {
  lru_.clear();
  map_.clear();
  relay_.clear();
}

const std::string* StatementCache::relay_find(const std::string& key) const {
  auto it = relay_.find(key);
  return it == relay_.end() ? nullptr : &it->second;
}

std::string StatementCache::relay_name(const std::string& key, std::string* evicted) {
  evicted->clear();
  if (relay_.size() >= capacity_ && !relay_.count(key)) {
    // Not least recently used: the relay keeps no order on its hot path. An
    // evicted statement is prepared again when it is next used.
    auto victim = relay_.begin();
    *evicted = std::move(victim->second);
    relay_.erase(victim);
  }
  if (relay_prefix_.empty()) relay_prefix_ = db::random_statement_prefix("wpr_");
  return relay_prefix_ + std::to_string(++relay_seq_);
}

void StatementCache::relay_add(const std::string& key, std::string name) {
  relay_[key] = std::move(name);
}

std::string StatementCache::relay_drop(const std::string& key) {
  auto it = relay_.find(key);
  if (it == relay_.end()) return {};
  std::string name = std::move(it->second);
  relay_.erase(it);
  return name;
}

// ---------------------------------------------------------------------------

sql::Dialect dialect_for_driver(std::string_view driver) {
  if (driver == "sqlite") return sql::Dialect::sqlite;
  if (driver == "postgresql") return sql::Dialect::postgres;
  if (driver == "mysql") return sql::Dialect::mysql;
  if (driver == "tds") return sql::Dialect::tsql;
  return sql::Dialect::ansi;
}

sql::Dialect dialect_for_database(const config::Database& db) {
  if (db.driver != "odbc") return dialect_for_driver(db.driver);
  const auto name = odbc::connection_value(db.connection, "driver");
  return odbc::dialect_of(odbc::flavor_of(name.value_or("")));
}

namespace {
uint64_t next_lease() {
  static std::atomic<uint64_t> seq{0};
  return seq.fetch_add(1, std::memory_order_relaxed) + 1;
}
bool host_is_local(std::string_view h) {
  if (h.empty() || h.front() == '/' || h.front() == '@') return true;  // Unix sockets
  std::string l(h);
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (l.starts_with("%2f")) return true;  // a URI's percent-encoded socket directory
  if (l.size() > 2 && l.front() == '[' && l.back() == ']') l = l.substr(1, l.size() - 2);
  return l == "localhost" || l.starts_with("127.") || l == "::1";
}

/// What SHOW SERVERS reports of a connection that just opened.
void describe_backend(Backend& b) {
  auto* impl = b.conn.impl();
  if (impl == nullptr) return;
  b.server_pid = impl->server_pid();
  for (const auto& [k, v] : impl->server_parameters()) {
    if (k == "application_name") b.application_name = v;
  }
  const int fd = impl->socket_fd();
  if (fd < 0) return;
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return;
  char host[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    b.local_port = ntohs(in->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    b.local_port = ntohs(in6->sin6_port);
  } else {
    return;  // a Unix socket: no address of its own
  }
  b.local_addr = host;
}

pool::Config pool_config(const config::Database& d) {
  pool::Config c;
  c.pipeline_max = pipeline_max(d, usable_cores());
  c.min = static_cast<size_t>(d.pool.min);
  c.max = static_cast<size_t>(d.pool.max);
  c.acquire_timeout = d.pool.acquire_timeout;
  c.idle_timeout = d.pool.idle_timeout;
  c.max_lifetime = d.pool.max_lifetime;
  c.reset_on_release = d.pool.mode == config::PoolMode::session;
  c.backoff_max = d.pool.connect_backoff_max;
  return c;
}

std::vector<std::string> split_commas(std::string_view v) {
  std::vector<std::string> out;
  for (;;) {
    const size_t comma = v.find(',');
    out.emplace_back(v.substr(0, comma));
    if (comma == std::string_view::npos) return out;
    v.remove_prefix(comma + 1);
  }
}
}  // namespace

std::vector<std::string> conninfo_hosts(std::string_view s) {
  std::optional<std::string> host, hostaddr;
  auto param = [&](std::string_view key, std::string value) {
    if (key == "host") host = std::move(value);
    if (key == "hostaddr") hostaddr = std::move(value);
  };
  if (s.starts_with("postgresql://") || s.starts_with("postgres://")) {
    std::string_view rest = s.substr(s.find("://") + 3);
    const size_t end = rest.find_first_of("/?");
    std::string_view auth = rest.substr(0, end);
    if (const size_t at = auth.rfind('@'); at != std::string_view::npos) auth.remove_prefix(at + 1);
    std::string hosts;
    const auto parts = split_commas(auth);
    for (size_t i = 0; i < parts.size(); ++i) {
      std::string_view h = parts[i];  // host, host:port or [v6]:port
      h = h.starts_with('[') ? h.substr(0, h.find(']') + 1) : h.substr(0, h.find(':'));
      if (i > 0) hosts += ',';
      hosts += h;
    }
    if (!auth.empty()) host = hosts;
    if (const size_t q = rest.find('?'); q != std::string_view::npos) {
      std::string_view query = rest.substr(q + 1);
      while (!query.empty()) {
        const size_t amp = query.find('&');
        std::string_view kv = query.substr(0, amp);
        const size_t eq = kv.find('=');
        if (eq != std::string_view::npos) param(kv.substr(0, eq), std::string(kv.substr(eq + 1)));
        if (amp == std::string_view::npos) break;
        query.remove_prefix(amp + 1);
      }
    }
  } else {
    size_t i = 0;
    auto space = [&] {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
        ++i;
    };
    while (true) {
      space();
      if (i >= s.size()) break;
      const size_t k = i;
      while (i < s.size() && s[i] != '=' && !std::isspace(static_cast<unsigned char>(s[i])))
        ++i;
      std::string_view key = s.substr(k, i - k);
      space();
      if (i >= s.size() || s[i] != '=') break;  // malformed: libpq reports it when connecting
      ++i;
      space();
      std::string value;
      if (i < s.size() && s[i] == '\'') {
        for (++i; i < s.size() && s[i] != '\''; ++i) {
          if (s[i] == '\\' && i + 1 < s.size()) ++i;
          value += s[i];
        }
        ++i;
      } else {
        while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) {
          if (s[i] == '\\' && i + 1 < s.size()) ++i;
          value += s[i++];
        }
      }
      param(key, std::move(value));
    }
  }
  if (hostaddr && !hostaddr->empty()) return split_commas(*hostaddr);
  if (host) return split_commas(*host);
  return {""};
}

size_t usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return static_cast<size_t>(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

size_t pipeline_max(const config::Database& d, size_t cores) {
  if (d.driver != "postgresql" || d.pool.mode != config::PoolMode::transaction ||
      !d.pool.pipeline) {
    return 0;
  }
  if (d.pool.pipeline_max > 0) return static_cast<size_t>(d.pool.pipeline_max);
  const auto hosts = conninfo_hosts(d.connection);
  if (!std::all_of(hosts.begin(), hosts.end(),
                   [](const std::string& h) { return host_is_local(h); }))
    return 0;
  return 2 * std::max<size_t>(cores, 1) + 1;
}

DatabasePool::DatabasePool(const config::Database& cfg, std::string user, DatabaseSharedPtr shared,
                           const db::Driver& driver, db::OpenOptions open,
                           BlockingExecutor& blocking, asio::io_context& timer_context)
    : cfg_(cfg),
      user_(std::move(user)),
      shared_(std::move(shared)),
      driver_(driver),
      open_(std::move(open)),
      blocking_(blocking),
      dialect_(dialect_for_database(cfg)),
      keeps_settings_(cfg.driver == "postgresql"),
      multi_statement_(cfg.driver != "odbc"),
      pool_(pool_config(cfg)),
      settings_(cfg.pool),
      timer_(timer_context) {}

DatabasePool::~DatabasePool() {
  shared_->leave(budget_id());
  shared_->withdraw(budget_id());
  for (auto& [id, b] : backends_) {
    b->statements.forget();  // the connection's close drops them on the server
    (void)b->conn.close();
    shared_->connection_gone();
  }
}

void DatabasePool::reconfigure(const config::PoolSettings& settings) {
  config::Database d = cfg_;
  d.pool = settings;
  std::unique_lock lock(mu_);
  pool_.reconfigure(pool_config(d), pool::Clock::now());
  settings_ = settings;
  spdlog::info("database {}: pool now min {} max {}, acquire_timeout {} ms", cfg_.name,
               settings.min, settings.max, settings.acquire_timeout.count());
  pump(lock);
}

config::PoolSettings DatabasePool::settings() const {
  std::lock_guard lock(mu_);
  return settings_;
}

void DatabasePool::reconnect() {
  std::unique_lock lock(mu_);
  pool_.reconnect(pool::Clock::now());
  pump(lock);
}

std::vector<DatabasePool::ServerInfo> DatabasePool::servers() const {
  std::lock_guard lock(mu_);
  std::vector<ServerInfo> out;
  for (const auto& [id, b] : backends_)
    out.push_back(ServerInfo{id, b->leased, b->opened_at, b->server_pid, b->local_addr,
                             b->local_port, b->application_name, b->host, b->port});
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.id < b.id; });
  return out;
}

bool DatabasePool::is_shut_down() const {
  std::lock_guard lock(mu_);
  return pool_.is_shut_down();
}

HostMonitorPtr DatabaseShared::monitor() const {
  std::lock_guard lock(mu_);
  return monitor_;
}

void DatabaseShared::set_monitor(HostMonitorPtr m) {
  std::lock_guard lock(mu_);
  monitor_ = std::move(m);
}

db::Result<db::Connection> open_backend(const db::Driver& driver, const db::OpenOptions& open,
                                        const HostMonitorPtr& monitor, db::HostPort* on,
                                        std::shared_ptr<void>* lease) {
  if (!monitor) return driver.open(open);
  // A read-only database tries the next standby at once when one fails (it is
  // banned by then); a read-write one leaves the wait for a new primary to
  // the pool's back-off.
  const size_t attempts = monitor->for_reads() ? monitor->hosts().size() : 1;
  for (size_t attempt = 1;; ++attempt) {
    std::string error;
    auto target = monitor->target(&error);
    if (!target) {
      db::Error e = db::Error::connection(std::move(error));
      e.sqlstate = "08001";
      return e;
    }
    if (on) *on = {target->open.host, target->open.port};
    if (!open.user.empty()) {
      // A user pool's own role (auth.mode passthrough) on whichever host is chosen.
      target->open.user = open.user;
      target->open.password = open.password;
    }
    auto result = driver.open(target->open);
    if (!open.user.empty())
      OPENSSL_cleanse(target->open.password.data(), target->open.password.size());
    if (result.ok()) {
      if (lease) *lease = std::move(target->lease);
      return result;
    }
    // The server is gone, refuses, is starting or stopping, or is read-only:
    // not a password or a database name that every host would refuse alike.
    const auto& state = result.error().sqlstate;
    const bool server_side =
        state.empty() || state.starts_with("08") || state.starts_with("57P") || state == "25006";
    if (server_side) monitor->open_failed(target->host);
    if (!server_side || attempt >= attempts) return result;
  }
}

boost::asio::awaitable<std::optional<db::Error>> verify_login(BlockingExecutor& blocking,
                                                              const db::Driver& driver,
                                                              db::OpenOptions open,
                                                              HostMonitorPtr monitor) {
  // The job captures by reference only (this frame owns everything): GCC 12
  // destroyed the owning captures of a temporary job twice.
  std::optional<db::Error> failure;
  auto job = [&driver, &open, &monitor, &failure] {
    auto result = open_backend(driver, open, monitor);
    if (!result.ok()) failure = result.error();
    return 0;
  };
  co_await blocking.run(job);
  OPENSSL_cleanse(open.password.data(), open.password.size());
  co_return failure;
}

void DatabaseShared::note_open(bool ok, std::string error) {
  std::lock_guard lock(mu_);
  tried_ = true;
  failed_ = !ok;
  error_ = ok ? std::string() : std::move(error);
}

bool DatabaseShared::reachable(std::string* error) const {
  std::lock_guard lock(mu_);
  if (failed_ && error) *error = error_;
  return !failed_;
}

bool DatabaseShared::tried() const {
  std::lock_guard lock(mu_);
  return tried_;
}

void DatabaseShared::request_open(uint64_t pool, pool::ConnId conn, std::function<void()> open) {
  std::unique_lock lock(budget_mu_);
  if (budget_.request(pool, conn)) {
    lock.unlock();
    open();
    return;
  }
  waiting_opens_.emplace(std::make_pair(pool, conn), std::move(open));
  waiting_ = waiting_opens_.size();
  // Better than waiting for an idle_timeout elsewhere: another user's pool
  // gives up a connection it is not using.
  std::vector<std::function<bool()>> others;
  for (const auto& [id, yield] : members_) {
    if (id != pool) others.push_back(yield);
  }
  lock.unlock();
  for (auto& yield : others) {
    if (yield()) break;
  }
}

void DatabaseShared::join(uint64_t pool, std::function<bool()> yield) {
  std::lock_guard lock(budget_mu_);
  members_[pool] = std::move(yield);
}

void DatabaseShared::leave(uint64_t pool) {
  std::lock_guard lock(budget_mu_);
  members_.erase(pool);
}

void DatabaseShared::connection_gone() {
  std::unique_lock lock(budget_mu_);
  budget_.release();
  run_grants(lock);
}

void DatabaseShared::withdraw(uint64_t pool) {
  std::lock_guard lock(budget_mu_);
  for (auto it = waiting_opens_.begin(); it != waiting_opens_.end();) {
    if (it->first.first == pool) {
      budget_.withdraw(it->first.first, it->first.second);
      it = waiting_opens_.erase(it);
    } else {
      ++it;
    }
  }
  waiting_ = waiting_opens_.size();
}

void DatabaseShared::resize_budget(size_t max) {
  std::unique_lock lock(budget_mu_);
  budget_.resize(max);
  run_grants(lock);
}

size_t DatabaseShared::connections_counted() const {
  std::lock_guard lock(budget_mu_);
  return budget_.used();
}

size_t DatabaseShared::opens_waiting() const {
  std::lock_guard lock(budget_mu_);
  return budget_.waiting();
}

void DatabaseShared::run_grants(std::unique_lock<std::mutex>& lock) {
  std::vector<std::function<void()>> go;
  while (auto g = budget_.poll_grant()) {
    auto it = waiting_opens_.find(*g);
    if (it == waiting_opens_.end()) {
      budget_.release();  // not ours to open any more
      continue;
    }
    go.push_back(std::move(it->second));
    waiting_opens_.erase(it);
  }
  waiting_ = waiting_opens_.size();
  lock.unlock();
  for (auto& f : go)
    f();
}

bool DatabasePool::reachable(std::string* error) const {
  std::lock_guard lock(mu_);
  if (last_open_failed_ && error) *error = last_open_error_;
  return !last_open_failed_;
}

bool DatabasePool::yield_idle() {
  std::unique_lock lock(mu_);
  const bool yielded = pool_.yield_idle(pool::Clock::now());
  pump(lock);
  return yielded;
}

void DatabasePool::start() {
  shared_->join(budget_id(), [weak = weak_from_this()] {
    auto p = weak.lock();
    return p && p->yield_idle();
  });
  std::unique_lock lock(mu_);
  pool_.handle_timeout(pool::Clock::now());  // lets the pool open `min` connections
  pump(lock);
}

asio::awaitable<std::variant<Backend*, AcquireError>> DatabasePool::acquire(bool pipelined) {
  auto self = shared_from_this();  // alive until the waiter is answered
  auto executor = co_await asio::this_coro::executor;
  // Named, not a temporary: GCC 12 can destroy a temporary with captures that
  // lives across a co_await twice. The same rule holds wherever we co_await.
  auto initiate = [this, &executor, pipelined](auto handler) {
    acquire_async(executor, Handler(std::move(handler)), pipelined);
  };
  auto result = co_await asio::async_initiate<const asio::use_awaitable_t<>,
                                              void(std::variant<Backend*, AcquireError>)>(
      std::move(initiate), asio::use_awaitable);
  co_return result;
}

pool::WaiterId DatabasePool::acquire_async(asio::any_io_executor executor, AcquireHandler handler,
                                           bool pipelined) {
  std::unique_lock lock(mu_);
  pool::WaiterId id = next_waiter_++;
  waiters_.emplace_back(id, Waiter{std::move(handler), std::move(executor)});
  pool_.handle_acquire(id, pool::Clock::now(), pipelined);
  pump(lock);
  return id;
}

bool DatabasePool::cancel_acquire(pool::WaiterId id) {
  std::unique_lock lock(mu_);
  auto w = find_waiter(id);
  if (w == waiters_.end()) return false;  // granted or rejected: the answer is posted
  Waiter gone = std::move(w->second);     // destroyed after pump() lets the lock go
  waiters_.erase(w);
  pool_.handle_cancel(id, pool::Clock::now());
  pump(lock);
  return true;
}

Backend* DatabasePool::try_acquire() {
  std::unique_lock lock(mu_);
  Backend* granted = nullptr;
  if (auto id = pool_.try_acquire(pool::Clock::now())) {
    auto b = backends_.find(*id);
    if (b == backends_.end()) {
      spdlog::critical("pool {}: immediate grant of unknown connection {}", cfg_.name, *id);
    } else {
      b->second->leased = true;
      b->second->lease = next_lease();  // a new lease from the pool: a new train
      granted = b->second.get();
    }
  }
  if (pool_.has_actions()) pump(lock);  // retired idle connections it closed
  return granted;
}

void DatabasePool::release(Backend* backend, bool healthy) {
  pool::TxState tx = pool::TxState::idle;
  if (healthy) {
    switch (backend->conn.tx_state()) {
      case db::TxState::idle:
        tx = pool::TxState::idle;
        break;
      case db::TxState::in_transaction:
        tx = pool::TxState::in_transaction;
        break;
      case db::TxState::failed:
        tx = pool::TxState::failed;
        break;
    }
  }
  // The session just used it (a lost connection is reported as unhealthy);
  // the next user probes it before use (Session::settle).
  auto now = pool::Clock::now();
  std::unique_lock lock(mu_);
  backend->leased = false;
  pool_.handle_release(backend->id, healthy, tx, now, backend->dirty);
  // Another pool of the database waits for a place under max_db_connections.
  if (shared_->opens_wanted()) (void)pool_.yield_idle(now);
  pump(lock);
}

void DatabasePool::shutdown() {
  std::unique_lock lock(mu_);
  pool_.shutdown(pool::Clock::now());
  pump(lock);
}

pool::Stats DatabasePool::stats() const {
  std::lock_guard lock(mu_);
  return pool_.stats(pool::Clock::now());
}

namespace {
template <class... Ts>
struct overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
overloaded(Ts...) -> overloaded<Ts...>;

/// Completes a waiter on its own executor, never inline.
template <class W>
void complete(W& w, std::variant<Backend*, AcquireError> v) {
  asio::post(w.executor, [h = std::move(w.handler), v = std::move(v)]() mutable {
    std::move(h)(std::move(v));
  });
}
}  // namespace

std::deque<std::pair<pool::WaiterId, DatabasePool::Waiter>>::iterator DatabasePool::find_waiter(
    pool::WaiterId id) {
  return std::find_if(waiters_.begin(), waiters_.end(),
                      [id](const auto& w) { return w.first == id; });
}

bool DatabasePool::credentials_match(std::string_view password) const {
  // Digests of equal length: the comparison tells nothing about the length either.
  std::array<uint8_t, SHA256_DIGEST_LENGTH> given{}, held{};
  SHA256(reinterpret_cast<const uint8_t*>(password.data()), password.size(), given.data());
  std::lock_guard l(credentials_mu_);
  if (password_.empty()) return false;
  SHA256(reinterpret_cast<const uint8_t*>(password_.data()), password_.size(), held.data());
  return CRYPTO_memcmp(given.data(), held.data(), given.size()) == 0;
}

namespace {
/// Owns its pool: the pool is not swept away between the check and the session.
/// Made in place: a copy's destructor would release the hold it copied.
struct CredentialHold {
  explicit CredentialHold(DatabasePoolPtr p) : pool(std::move(p)) {}
  CredentialHold(const CredentialHold&) = delete;
  CredentialHold& operator=(const CredentialHold&) = delete;
  ~CredentialHold() { pool->release_credentials(); }
  DatabasePoolPtr pool;
};
}  // namespace

std::shared_ptr<void> DatabasePool::hold_credentials(const std::string& password) {
  {
    std::lock_guard l(credentials_mu_);
    OPENSSL_cleanse(password_.data(), password_.size());
    password_.assign(password);
    ++credential_holds_;
  }
  return std::make_shared<CredentialHold>(shared_from_this());
}

void DatabasePool::release_credentials() {
  std::lock_guard l(credentials_mu_);
  if (credential_holds_ > 0 && --credential_holds_ == 0) {
    OPENSSL_cleanse(password_.data(), password_.size());
    password_.clear();
  }
}

void DatabasePool::open_now(pool::ConnId id) {
  blocking_.post([self = shared_from_this(), id] {
    db::OpenOptions o = self->open_;
    if (self->cfg_.auth == config::AuthMode::passthrough) {
      std::lock_guard l(self->credentials_mu_);
      o.user = self->user_;
      o.password = self->password_;
    }
    db::HostPort on;
    std::shared_ptr<void> lease;
    auto result = open_backend(self->driver_, o, self->shared_->monitor(), &on, &lease);
    OPENSSL_cleanse(o.password.data(), o.password.size());
    std::unique_lock l(self->mu_);
    auto now = pool::Clock::now();
    if (result.ok()) {
      auto b = std::make_unique<Backend>();
      b->id = id;
      b->conn = std::move(result.value());
      b->caps = b->conn.capabilities();
      b->opened_at = std::chrono::system_clock::now();
      b->host = on.host;
      b->port = on.port;
      b->host_lease = std::move(lease);
      describe_backend(*b);
      if (b->caps.session_settings)
        self->startup_.note_defaults(b->conn.impl()->server_parameters());
      self->keeps_settings_ = b->caps.session_settings;
      self->multi_statement_ = b->caps.multi_statement;
      self->param_arrays_ = b->caps.param_arrays;
      self->batch_row_counts_ = b->caps.batch_row_counts;
      self->dialect_ = b->caps.dialect;
      self->backends_[id] = std::move(b);
      spdlog::debug("database {}: backend connection {} opened", self->cfg_.name, id);
      self->last_open_failed_ = false;
      self->shared_->note_open(true);
      self->pool_.handle_opened(id, now);
    } else {
      self->last_open_error_ = result.error().message;
      self->last_open_sqlstate_ = result.error().sqlstate;
      self->last_open_failed_ = true;
      self->shared_->note_open(false, self->last_open_error_);
      self->open_failure_log_.log(
          spdlog::level::err,
          fmt::format("database {}: cannot open backend ({}): {}", self->cfg_.name,
                      self->driver_.redact(self->cfg_.connection), result.error().message));
      self->pool_.handle_open_failed(id, now);
      self->shared_->connection_gone();
    }
    self->pump(l);
  });
}

void DatabasePool::pump(std::unique_lock<std::mutex>& lock) {
  // Small vectors: a grant per release is the hot path and allocates nothing.
  boost::container::small_vector<std::function<void()>, 1> todo;
  boost::container::small_vector<std::pair<Waiter, std::variant<Backend*, AcquireError>>, 2>
      answers;
  auto self = shared_from_this();
  while (auto action = pool_.poll_action()) {
    std::visit(
        overloaded{
            [&](const pool::Open& o) {
              todo.emplace_back([self, id = o.conn] {
                // Counted against max_db_connections first; a pool gone by the
                // time its place frees gives the place back.
                std::weak_ptr<DatabasePool> weak = self;
                self->shared_->request_open(self->budget_id(), id,
                                            [weak, shared = self->shared_, id] {
                                              if (auto p = weak.lock()) {
                                                p->open_now(id);
                                              } else {
                                                shared->connection_gone();
                                              }
                                            });
              });
            },
            [&](const pool::Grant& g) {
              auto w = find_waiter(g.waiter);
              auto b = backends_.find(g.conn);
              if (w == waiters_.end() || b == backends_.end()) {
                spdlog::critical("pool {}: grant of unknown waiter {} or connection {}", cfg_.name,
                                 g.waiter, g.conn);
                return;
              }
              b->second->leased = true;
              b->second->lease = next_lease();  // a new lease from the pool: a new train
              answers.emplace_back(std::move(w->second), b->second.get());
              waiters_.erase(w);
            },
            [&](const pool::Reject& r) {
              auto w = find_waiter(r.waiter);
              if (w == waiters_.end()) return;
              std::string msg, sqlstate;
              switch (r.reason) {
                case pool::RejectReason::timeout:
                  msg = "no backend connection for database \"" + cfg_.name +
                        "\" became available within acquire_timeout";
                  break;
                case pool::RejectReason::open_failed:
                  msg = "cannot connect to the backend of database \"" + cfg_.name +
                        "\": " + last_open_error_;
                  sqlstate = last_open_sqlstate_;
                  break;
                case pool::RejectReason::shutdown:
                  msg = "database \"" + cfg_.name + "\" is shutting down";
                  break;
                case pool::RejectReason::paused:
                  msg = "database \"" + cfg_.name + "\" is paused";
                  break;
              }
              answers.emplace_back(std::move(w->second),
                                   AcquireError{r.reason, std::move(msg), std::move(sqlstate)});
              waiters_.erase(w);
            },
            [&](const pool::Close& c) {
              auto b = backends_.find(c.conn);
              std::shared_ptr<Backend> owned;
              if (b != backends_.end()) {
                owned = std::move(b->second);
                backends_.erase(b);
              }
              spdlog::debug("database {}: closing backend connection {} ({})", cfg_.name, c.conn,
                            pool::to_string(c.reason));
              todo.emplace_back([self, owned, id = c.conn] {
                self->blocking_.post([self, owned, id] {
                  if (owned) {
                    // Closing the connection drops its prepared statements on the
                    // server: no need to deallocate them one by one first.
                    owned->statements.forget();
                    if (auto* impl = owned->conn.impl()) {
                      (void)db::call_blocking(*impl, [&] { return owned->conn.close(); });
                    }
                  }
                  self->shared_->connection_gone();
                  std::unique_lock l(self->mu_);
                  self->pool_.handle_closed(id, pool::Clock::now());
                  self->pump(l);
                });
              });
            },
            [&](const pool::Reset& r) {
              auto b = backends_.find(r.conn);
              Backend* backend = b == backends_.end() ? nullptr : b->second.get();
              todo.emplace_back([self, backend, id = r.conn] {
                self->blocking_.post([self, backend, id] {
                  bool ok = false;
                  if (backend) {
                    // A session that left what only a DISCARD ALL undoes gets one.
                    const std::string q =
                        backend->dirty ? std::string("DISCARD ALL") : self->cfg_.pool.reset_query;
                    backend->dirty = false;
                    auto st = db::call_blocking(*backend->conn.impl(),
                                                [&] { return backend->conn.reset(q); });
                    ok = st.ok();
                    if (!ok) {
                      spdlog::warn("database {}: reset of backend {} failed: {}", self->cfg_.name,
                                   id, st.error().message);
                    }
                    if (!q.empty()) {
                      // DISCARD ALL dropped the prepared statements and settings.
                      backend->statements.forget();
                      backend->applied_settings.clear();
                      backend->applied_session = 0;
                    }
                  }
                  std::unique_lock l(self->mu_);
                  self->pool_.handle_reset_done(id, ok, pool::Clock::now());
                  self->pump(l);
                });
              });
            },
        },
        *action);
  }
  arm_timer(lock);
  lock.unlock();
  for (auto& [w, v] : answers)
    complete(w, std::move(v));
  for (auto& f : todo)
    f();
}

void DatabasePool::arm_timer(std::unique_lock<std::mutex>&) {
  auto next = pool_.next_deadline();
  if (!next) return;
  // Only when it is earlier than what the timer was already asked for: a post
  // to the timer's thread per acquire and release would wake it twice a
  // transaction for nothing (later deadlines are picked up when it fires).
  if (requested_ && *requested_ <= *next) return;
  requested_ = *next;
  // The timer is only touched on its own executor. Handlers hold a weak
  // reference: a pending wait lives inside timer_, so a strong one would keep
  // the pool alive through its own member.
  asio::post(timer_.get_executor(), [weak = weak_from_this(), when = *next] {
    auto self = weak.lock();
    if (!self) return;
    if (self->armed_for_ && *self->armed_for_ <= when) return;
    self->armed_for_ = when;
    self->timer_.expires_at(when);
    self->timer_.async_wait([weak](boost::system::error_code ec) {
      if (ec == asio::error::operation_aborted) return;
      if (auto pool = weak.lock()) {
        pool->armed_for_.reset();
        pool->on_timer();
      }
    });
  });
}

void DatabasePool::on_timer() {
  std::unique_lock lock(mu_);
  requested_.reset();
  pool_.handle_timeout(pool::Clock::now());
  pump(lock);
}

std::optional<StartupParameters::List> DatabasePool::startup_parameters(
    const StartupParameters::List& overrides) const {
  std::lock_guard l(mu_);
  return startup_.answer(overrides);
}

void DatabasePool::learn_startup(const StartupParameters::List& overrides,
                                 const StartupParameters::List& reported) {
  std::lock_guard l(mu_);
  startup_.learn(overrides, reported);
}

StartupParameters DatabasePool::take_startup() {
  std::lock_guard l(mu_);
  return std::exchange(startup_, StartupParameters{});
}

void DatabasePool::adopt_startup(StartupParameters learned) {
  std::lock_guard l(mu_);
  startup_ = std::move(learned);
}

}  // namespace wirepool::server
