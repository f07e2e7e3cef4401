#include "server/server.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>
#include <boost/asio/signal_set.hpp>

#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "server/client_connection.hpp"
#include "server/log.hpp"
#include "server/notify.hpp"
#include "tls/tls.hpp"

namespace wirepool::server {

// ---------------------------------------------------------------------------
// CancelRegistry

namespace {
/// Random words from a per-thread reserve refilled 256 at a time: OpenSSL 3's
/// RAND_bytes costs ~6k instructions a call whatever its size (a login draws
/// one key). Each word is handed out once and wiped from the reserve.
int32_t random_word() {
  struct Reserve {
    std::array<int32_t, 256> words{};
    size_t used = 256;
    ~Reserve() { OPENSSL_cleanse(words.data(), sizeof words); }
  };
  thread_local Reserve r;
  if (r.used == r.words.size()) {
    if (RAND_bytes(reinterpret_cast<unsigned char*>(r.words.data()), sizeof r.words) != 1) {
      throw std::runtime_error("RAND_bytes failed");
    }
    r.used = 0;
  }
  const int32_t w = r.words[r.used];
  r.words[r.used++] = 0;
  return w;
}
}  // namespace

CancelRegistry::CancelRegistry() {
  rehash(kMinSlots);
}

size_t CancelRegistry::home(int32_t pid) const {
  // With a peer id the high bits are fixed: Fibonacci hashing mixes them all.
  return (static_cast<uint32_t>(pid) * 0x9e3779b1u) >> shift_;
}

size_t CancelRegistry::find(int32_t pid) const {
  const size_t mask = slots_.size() - 1;
  size_t i = home(pid);
  while (slots_[i].pid != 0 && slots_[i].pid != pid)
    i = (i + 1) & mask;
  return i;
}

void CancelRegistry::rehash(size_t slots) {
  std::vector<Entry> old(slots, Entry{});
  old.swap(slots_);
  shift_ = 32 - std::countr_zero(slots);
  for (const Entry& e : old) {
    if (e.pid != 0) slots_[find(e.pid)] = e;
  }
}

std::pair<int32_t, int32_t> CancelRegistry::add(CancelTarget& target) {
  std::lock_guard lock(mu_);
  if ((used_ + 1) * 4 > slots_.size() * 3) rehash(slots_.size() * 2);
  for (;;) {
    const int32_t key[2] = {random_word(), random_word()};
    int32_t pid = key[0] & 0x7fffffff;
    if (peer_id_) pid = (peer_id_ << kPeerShift) | (pid & ((1 << kPeerShift) - 1));
    if (pid == 0) continue;
    const size_t i = find(pid);
    if (slots_[i].pid != 0) continue;  // a live client's pid
    slots_[i] = Entry{pid, key[1], &target};
    ++used_;
    return {pid, key[1]};
  }
}

void CancelRegistry::remove(int32_t pid) {
  std::lock_guard lock(mu_);
  if (pid == 0) return;
  size_t i = find(pid);
  if (slots_[i].pid == 0) return;
  // Backward-shift deletion: an entry after the gap moves into it unless its
  // home lies cyclically in (gap, entry], so every probe sequence stays whole.
  const size_t mask = slots_.size() - 1;
  for (size_t j = (i + 1) & mask; slots_[j].pid != 0; j = (j + 1) & mask) {
    const size_t k = home(slots_[j].pid);
    if (((j - k) & mask) >= ((j - i) & mask)) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = Entry{};
  --used_;
  // Given back as clients leave (at most 1/8 used: halving leaves it 1/4 used).
  if (slots_.size() > kMinSlots && used_ * 8 < slots_.size()) rehash(slots_.size() / 2);
}

bool CancelRegistry::cancel(int32_t pid, int32_t secret) {
  std::lock_guard lock(mu_);
  if (pid == 0) return false;
  const Entry& e = slots_[find(pid)];
  if (e.pid == 0 || e.secret != secret) return false;
  // Under the lock: the target cannot remove its key (and be destroyed) meanwhile.
  e.target->cancel_request();
  return true;
}

size_t CancelRegistry::size() const {
  std::lock_guard lock(mu_);
  return used_;
}

size_t CancelRegistry::capacity() const {
  std::lock_guard lock(mu_);
  return slots_.size();
}

// ---------------------------------------------------------------------------

namespace {

/// Warns when `path` exists and every local user may read it.
void warn_if_world_readable(const std::string& path, std::string_view what) {
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || (st.st_mode & S_IROTH) == 0) return;
  spdlog::warn("{} {} is readable by every local user (mode {:04o}): chmod o-r it", what, path,
               st.st_mode & 07777);
}

/// The start-up and reload check for secrets that other local users may read.
void warn_readable_secrets(const config::Config& c) {
  const bool config_secrets =
      std::any_of(c.users.begin(), c.users.end(),
                  [](const config::User& u) { return !u.password.empty(); }) ||
      std::any_of(c.databases.begin(), c.databases.end(), [](const config::Database& d) {
        const db::Driver* driver = db::find_driver(d.driver);
        return driver && driver->redact(d.connection) != d.connection;
      });
  if (config_secrets) warn_if_world_readable(c.path, "the configuration (it holds passwords)");
  if (c.tls.present) warn_if_world_readable(c.tls.key, "tls.key");
  for (const auto& d : c.databases)
    warn_if_world_readable(d.password_file, "password_file of database \"" + d.name + "\"");
}

/// A password from an environment variable or a file's first line (the
/// entry's password_env / password_file, or auth_user's).
std::string read_secret(const std::string& database, const std::string& env,
                        const std::string& file, std::string_view key) {
  if (!env.empty()) {
    const char* v = std::getenv(env.c_str());
    if (!v) {
      throw std::runtime_error("database \"" + database + "\": environment variable " + env +
                               " is not set");
    }
    return v;
  }
  if (!file.empty()) {
    std::ifstream f(file);
    if (!f) {
      throw std::runtime_error("database \"" + database + "\": cannot read " + std::string(key) +
                               " " + file);
    }
    std::string s;
    std::getline(f, s);
    return s;
  }
  return {};
}

/// `threads: 0`: one loop per two usable cores, rounded up (Odyssey's
/// `workers "auto"`). Trains form within a loop, and the cores a pooler shares
/// with the kernel's network stack and its own executor threads: on 2 cores one
/// loop beat two in every pgbench cell (docs/performance-notes.md).
size_t loop_count(const config::Config& cfg) {
  if (cfg.server.threads > 0) return static_cast<size_t>(cfg.server.threads);
  return (usable_cores() + 1) / 2;
}

/// Raises the soft RLIMIT_NOFILE to the hard one; answers the limit in force.
uint64_t raise_descriptor_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
  if (r.rlim_cur < r.rlim_max) {
    rlimit raised = r;
    raised.rlim_cur = r.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  return r.rlim_cur == RLIM_INFINITY ? uint64_t{1} << 20 : static_cast<uint64_t>(r.rlim_cur);
}

/// Descriptors that are not clients': backends (libpq's socket and the
/// watcher's duplicate), listeners, and a margin for epoll, eventfds, timers,
/// the log, the spare descriptor and files.
uint64_t reserved_descriptors(const config::Config& cfg) {
  uint64_t n = 64 + cfg.listeners.size();
  for (const auto& d : cfg.databases)
    n += 2 * static_cast<uint64_t>(d.pool.max);
  return n;
}

/// The configured limits, with pending connections held to a quarter of the
/// descriptors left for clients: the rest stays for logged-in clients and the
/// admin console, whatever unauthenticated peers open.
Admission::Limits admission_limits(const config::Config& cfg, uint64_t fd_limit) {
  const auto& s = cfg.server;
  const uint64_t reserved = reserved_descriptors(cfg);
  const uint64_t for_clients = fd_limit > reserved + 64 ? fd_limit - reserved : 64;
  Admission::Limits l;
  l.max_clients = s.max_clients;
  l.admin_reserved = s.admin_reserved_clients;
  l.max_pending = std::min<int64_t>(s.max_pending_logins,
                                    std::max<int64_t>(16, static_cast<int64_t>(for_clients / 4)));
  l.max_pending_per_address = std::min(s.max_pending_logins_per_address, l.max_pending);
  // The waiting room holds only sockets: another quarter of the descriptors.
  l.max_waiting = std::max<int64_t>(16, static_cast<int64_t>(for_clients / 4));
  l.wait_timeout = s.login_timeout;
  return l;
}

/// Threads for password hashing: half the cores (a hash is pure CPU; the
/// event loops keep the rest).
size_t hashing_threads() {
  return std::max<size_t>(1, usable_cores() / 2);
}

size_t blocking_threads(const config::Config& cfg) {
  // One thread per backend connection that can be busy at once (each user
  // that may use a database has a pool of its own), plus a few for opening and
  // closing; bounded so a large configuration stays sane.
  size_t n = 4;
  for (const auto& d : cfg.databases) {
    size_t users = 0;
    for (const auto& u : cfg.users) {
      if (u.databases.empty() ||
          std::find(u.databases.begin(), u.databases.end(), d.name) != u.databases.end()) {
        ++users;
      }
    }
    n += static_cast<size_t>(d.pool.max) * std::max<size_t>(users, 1);
    // Users from the backend: the lookup job, and one more user's pool.
    if (d.auth_query.enabled()) n += 1 + static_cast<size_t>(d.pool.max);
    // Several hosts: a probe of each may run at once.
    const size_t named = conninfo_hosts(d.connection).size();
    n += (!d.hosts.empty() ? d.hosts.size() : (named > 1 ? named : 0)) +
         (d.reads_of.empty() ? 0 : d.replicas.size() + 1);
  }
  return std::min<size_t>(n, 512);
}

}  // namespace

Server::Server(config::Config cfg, config::DatabaseValidator validator)
    : cfg_(std::move(cfg)),
      validator_(validator),
      current_(std::make_shared<const config::Config>(cfg_)),
      blocking_(blocking_threads(cfg_)),
      fd_limit_(raise_descriptor_limit()),
      admission_(admission_limits(cfg_, fd_limit_)),
      throttle_(LoginThrottle::Limits{cfg_.server.login_failure_burst,
                                      cfg_.server.login_failure_interval,
                                      static_cast<size_t>(cfg_.server.login_throttle_entries)}),
      hashing_(hashing_threads()) {
  std::error_code ec;
  std::filesystem::create_directories(cfg_.server.state_dir, ec);
  if (ec) {
    throw std::runtime_error("cannot create state_dir " + cfg_.server.state_dir + ": " +
                             ec.message());
  }
  warn_readable_secrets(cfg_);
  auth_secret_ =
      load_auth_secret((std::filesystem::path(cfg_.server.state_dir) / kAuthSecretFile).string());
  users_ = std::make_shared<const UserStore>(cfg_.users, auth_secret_);
  metrics().set_config_hash(file_sha256(cfg_.path));
  cancels_.set_peer_id(cfg_.server.peer_id);
  spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const auto& limits = admission_.limits();
  if (limits.max_pending < cfg_.server.max_pending_logins) {
    spdlog::warn(
        "server.max_pending_logins {} lowered to {}: a quarter of the {} descriptors this process "
        "may open (RLIMIT_NOFILE) after its backends'; raise LimitNOFILE or ulimit -n",
        cfg_.server.max_pending_logins, limits.max_pending, fd_limit_);
  }
  const uint64_t wanted =
      reserved_descriptors(cfg_) +
      static_cast<uint64_t>(limits.max_clients + limits.admin_reserved + limits.max_pending);
  if (wanted > fd_limit_) {
    spdlog::warn(
        "server.max_clients {} (+{} for admins, +{} logging in) and the backends need about {} "
        "descriptors, more than the {} this process may open (RLIMIT_NOFILE): accept will fail "
        "before max_clients is reached; raise LimitNOFILE or ulimit -n",
        limits.max_clients, limits.admin_reserved, limits.max_pending, wanted, fd_limit_);
  }
  spdlog::info("login waiting room: up to {} connections, each for up to login_timeout",
               limits.max_waiting);
  admission_.on_room([this] {
    if (!waiting_posted_.exchange(true)) asio::post(main_, [this] { serve_waiting(); });
  });
  setup_tls();
  for (size_t i = 0; i < loop_count(cfg_); ++i)
    loops_.push_back(std::make_unique<Loop>());
  for (const auto& d : cfg_.databases) {
    auto e = make_entry(d);
    if (auto m = e.shared->monitor()) m->start();
    databases_.emplace(d.name, std::move(e));
  }
}

Server::DatabaseEntry Server::make_entry(const config::Database& d) {
  DatabaseEntry e;
  e.cfg = d;
  e.driver = db::find_driver(d.driver);
  if (!e.driver)
    throw std::runtime_error("database \"" + d.name + "\": unknown driver " + d.driver);
  e.open.connection = d.connection;
  e.open.password = read_secret(d.name, d.password_env, d.password_file, "password_file");
  e.open.options = d.options;
  e.open.base_dir = cfg_.server.state_dir;
  e.open.max_value_size = cfg_.server.max_value_size;
  e.open.tls_ca = d.tls.ca;
  e.open.tls_pins = d.tls.pin_sha256;
  e.shared = std::make_shared<DatabaseShared>();
  e.shared->resize_budget(static_cast<size_t>(d.pool.max_db_connections));
  if (d.auth_query.enabled()) e.auth = make_auth_lookup(e, d);
  e.shared->set_monitor(make_monitor(e));
  return e;
}

AuthLookupPtr Server::make_auth_lookup(const DatabaseEntry& e, const config::Database& d) {
  db::OpenOptions open = e.open;
  const auto& a = d.auth_query;
  if (!a.password_env.empty() || !a.password_file.empty()) {
    open.password = read_secret(d.name, a.password_env, a.password_file, "auth_password_file");
  }
  return std::make_shared<AuthLookup>(d, *e.driver, std::move(open), blocking_, e.shared);
}

HostMonitorPtr Server::make_monitor(const DatabaseEntry& e) {
  auto hosts = hosts_of(e.cfg, *e.driver, e.open);
  std::optional<config::ReadOnly> reads;
  size_t replicas_from = SIZE_MAX;
  if (!e.cfg.reads_of.empty()) {
    // A read-only database: the primary's hosts (the connection's own when it
    // names one), then the replicas.
    if (hosts.empty()) hosts.push_back({});
    replicas_from = hosts.size();
    for (const auto& r : e.cfg.replicas)
      hosts.push_back({r.host, r.port});
    reads = e.cfg.read_only;
  }
  if (hosts.empty()) return nullptr;
  auto m =
      std::make_shared<HostMonitor>(e.cfg.name, std::move(hosts), e.cfg.health_check, *e.driver,
                                    e.open, blocking_, main_, std::move(reads), replicas_from);
  // A new primary (or none): idle connections point at the old one; each pool
  // replaces its connections, busy ones when they come back.
  m->on_change([this, name = e.cfg.name] {
    for (auto& pool : pools_of(name))
      pool->reconnect();
  });
  return m;  // started once the entry is in force (start_monitors)
}

DatabasePoolPtr Server::make_pool(const DatabaseEntry& e, std::string user) {
  return std::make_shared<DatabasePool>(e.cfg, std::move(user), e.shared, *e.driver, e.open,
                                        blocking_, main_);
}

const config::Peer* Server::cancel_peer(int32_t pid) const {
  int peer = cancels_.peer_of(pid);
  if (peer == 0 || peer == cfg_.server.peer_id) return nullptr;
  for (const auto& p : cfg_.peers) {
    if (p.id == peer) return &p;
  }
  return nullptr;
}

std::shared_ptr<const config::Config> Server::current_config() const {
  std::lock_guard lock(state_mu_);
  return current_;
}

std::shared_ptr<const UserStore> Server::users() const {
  std::lock_guard lock(state_mu_);
  return users_;
}

Server::~Server() {
  stop_all();
}

std::vector<DatabasePoolPtr> Server::pools() const {
  std::lock_guard lock(state_mu_);
  std::vector<DatabasePoolPtr> out;
  for (const auto& [name, entry] : databases_) {
    for (const auto& [user, pool] : entry.pools)
      out.push_back(pool);
  }
  return out;
}

std::vector<HostMonitorPtr> Server::host_monitors() const {
  std::lock_guard lock(state_mu_);
  std::vector<HostMonitorPtr> out;
  for (const auto& [name, entry] : databases_) {
    if (auto m = entry.shared->monitor()) out.push_back(std::move(m));
  }
  return out;
}

std::vector<DatabasePoolPtr> Server::pools_of(std::string_view database) const {
  std::lock_guard lock(state_mu_);
  std::vector<DatabasePoolPtr> out;
  if (auto it = databases_.find(database); it != databases_.end()) {
    for (const auto& [user, pool] : it->second.pools)
      out.push_back(pool);
  }
  return out;
}

void Server::set_paused(std::string_view database, bool paused) {
  std::lock_guard lock(state_mu_);
  for (auto& [name, entry] : databases_) {
    if (database.empty() || name == database) entry.shared->paused = paused;
  }
}

bool Server::database_paused(std::string_view database) const {
  std::lock_guard lock(state_mu_);
  auto it = databases_.find(database);
  return it != databases_.end() && it->second.shared->paused.load();
}

AuthLookupPtr Server::auth_lookup(std::string_view database) const {
  std::lock_guard lock(state_mu_);
  auto it = databases_.find(database);
  return it == databases_.end() ? nullptr : it->second.auth;
}

bool Server::has_database(std::string_view name) const {
  std::lock_guard lock(state_mu_);
  return databases_.count(name) > 0;
}

DatabasePoolPtr Server::pool_for(std::string_view database, std::string_view user) {
  DatabasePoolPtr made;
  {
    std::lock_guard lock(state_mu_);
    auto it = databases_.find(database);
    if (it == databases_.end()) return nullptr;
    auto& entry = it->second;
    if (auto p = entry.pools.find(user); p != entry.pools.end()) return p->second;
    made = make_pool(entry, std::string(user));
    if (auto s = entry.startups.find(user); s != entry.startups.end()) {
      made->adopt_startup(std::move(s->second));
      entry.startups.erase(s);
    }
    entry.pools.emplace(std::string(user), made);
  }
  spdlog::debug("database \"{}\": pool for user \"{}\" made", database, user);
  made->start();
  return made;
}

DatabasePoolPtr Server::find_pool(std::string_view database, std::string_view user) const {
  std::lock_guard lock(state_mu_);
  auto it = databases_.find(database);
  if (it == databases_.end()) return nullptr;
  auto p = it->second.pools.find(user);
  return p == it->second.pools.end() ? nullptr : p->second;
}

boost::asio::awaitable<std::optional<db::Error>> Server::verify_login(std::string_view database,
                                                                      const std::string& user,
                                                                      const std::string& password) {
  const db::Driver* driver = nullptr;
  db::OpenOptions open;
  HostMonitorPtr monitor;
  {
    std::lock_guard lock(state_mu_);
    auto it = databases_.find(database);
    if (it != databases_.end()) {
      driver = it->second.driver;
      open = it->second.open;
      monitor = it->second.shared->monitor();
    }
  }
  if (!driver) {
    db::Error e = db::Error::connection("the database was removed by a reload");
    e.sqlstate = "08006";
    co_return e;
  }
  open.user = user;
  open.password = password;
  co_return co_await server::verify_login(blocking_, *driver, std::move(open), std::move(monitor));
}

bool Server::unreachable_database(std::string* name, std::string* error) const {
  std::lock_guard lock(state_mu_);
  for (const auto& [n, entry] : databases_) {
    if (!entry.shared->reachable(error)) {
      *name = n;
      return true;
    }
  }
  return false;
}

bool Server::database_reachable(std::string_view database) const {
  std::lock_guard lock(state_mu_);
  auto it = databases_.find(database);
  return it == databases_.end() || it->second.shared->reachable();
}

size_t Server::database_connections(std::string_view database) const {
  std::lock_guard lock(state_mu_);
  auto it = databases_.find(database);
  return it == databases_.end() ? 0 : it->second.shared->connections_counted();
}

void Server::probe_databases() {
  std::lock_guard lock(state_mu_);
  for (auto& [name, entry] : databases_) {
    if (entry.shared->tried() && (entry.shared->reachable() || !entry.pools.empty())) continue;
    if (entry.shared->probing.exchange(true)) continue;
    blocking_.post([shared = entry.shared, driver = entry.driver, open = entry.open, name = name] {
      auto conn = open_backend(*driver, open, shared->monitor());
      if (!conn.ok() && shared->reachable()) {
        spdlog::warn("database \"{}\": readiness probe cannot open a backend: {}", name,
                     conn.error().message);
      }
      shared->note_open(conn.ok(), conn.ok() ? std::string() : conn.error().message);
      shared->probing = false;
    });
  }
}

void Server::sweep_unused_pools() {
  std::vector<DatabasePoolPtr> gone;
  {
    std::lock_guard lock(state_mu_);
    for (auto& [name, entry] : databases_) {
      for (auto it = entry.pools.begin(); it != entry.pools.end();) {
        const auto& pool = it->second;
        auto st = pool->stats();
        // Only this map holds it: no session, no login in progress.
        if (pool.use_count() == 1 && pool->metrics().clients.load() == 0 &&
            st.opening + st.idle + st.in_use + st.resetting + st.closing + st.waiting == 0) {
          if (entry.startups.size() < kMaxRememberedStartups) {
            entry.startups.insert_or_assign(it->first, pool->take_startup());
          }
          gone.push_back(pool);
          it = entry.pools.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
  for (auto& pool : gone)
    pool->shutdown();
}

std::vector<uint16_t> Server::bound_ports() const {
  std::vector<uint16_t> out;
  for (const auto& a : acceptors_) {
    boost::system::error_code ec;
    out.push_back(a->local_endpoint(ec).port());
  }
  return out;
}

std::vector<Loop*> Server::loops() const {
  std::vector<Loop*> out;
  for (const auto& l : loops_)
    out.push_back(l.get());
  return out;
}

void Server::kill_clients(std::string database) {
  for (auto& loop : loops_) {
    asio::post(loop->io, [l = loop.get(), database] {
      for (auto& c : l->clients) {
        if (c.database() == database) c.terminate();
      }
    });
  }
}

void Server::request_reload() {
  asio::post(main_, [this] { reload(); });
}

void Server::request_shutdown() {
  asio::post(main_, [this] {
    if (signals_seen_++ > 0) return;  // already draining
    spdlog::info("SHUTDOWN from the admin console: draining (up to {} ms)",
                 cfg_.server.shutdown_grace.count());
    begin_drain();
  });
}

void Server::start_stats_timer() {
  stats_timer_.expires_after(kStatsPeriod);
  stats_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    for (auto& pool : pools())
      pool->metrics().roll_period();
    sweep_unused_pools();
    probe_databases();
    start_stats_timer();
  });
}

void Server::start_trim_timer() {
  trim_timer_.expires_after(std::chrono::seconds(1));
  trim_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    if (trim_policy_.observe(admission_.clients() + admission_.pending())) malloc_trim(0);
    start_trim_timer();
  });
}

void Server::start_sweep(Loop& loop) {
  loop.sweep_timer.expires_after(std::chrono::milliseconds(250));
  loop.sweep_timer.async_wait([this, &loop](boost::system::error_code ec) {
    if (ec) return;
    auto now = std::chrono::steady_clock::now();
    for (auto& c : loop.clients)
      c.sweep(now);
    start_sweep(loop);
  });
}

int Server::run() {
  start_listeners();

  asio::signal_set signals(main_, SIGINT, SIGTERM, SIGHUP);
  std::function<void()> wait_signal = [&] {
    signals.async_wait([&](boost::system::error_code ec, int signo) {
      if (ec) return;
      on_signal(signo);
      wait_signal();
    });
  };
  wait_signal();
  probe_databases();
  start_stats_timer();
  start_trim_timer();

  for (auto& loop : loops_) {
    start_sweep(*loop);
    loop->thread = std::thread([l = loop.get()] {
      pthread_setname_np(pthread_self(), "wp-loop");
      try {
        l->io.run();
      } catch (const std::exception& e) {
        spdlog::critical("event loop stopped: {}", e.what());
        std::abort();
      }
    });
  }
  spdlog::info("wirepool ready: {} event loop(s), {} blocking thread(s), {} database(s)",
               loops_.size(), blocking_.threads(), current_config()->databases.size());
  notify_ready(ready_status());
  main_.run();
  stop_all();
  spdlog::info("wirepool stopped");
  return exit_code_;
}

void Server::setup_tls() {
  const auto& t = cfg_.tls;
  if (!t.present) return;
  namespace fs = std::filesystem;
  if (t.generate) {
    bool cert = fs::exists(t.certificate), key = fs::exists(t.key);
    if (!cert && !key) {
      std::string error;
      if (!tls::generate_self_signed(t.certificate, t.key, &error)) {
        throw std::runtime_error("cannot generate a TLS certificate: " + error);
      }
      spdlog::info("generated a self-signed TLS certificate {} (key {})", t.certificate, t.key);
    } else if (cert != key) {
      throw std::runtime_error("tls.generate: only one of " + t.certificate + " and " + t.key +
                               " exists; remove it or provide both");
    }
  }
  std::string error;
  auto ctx = tls::ServerContext::create(t, tls::kAlpnPostgresql, &error);
  if (!ctx) throw std::runtime_error(error);
  const auto& f = ctx->fingerprints();
  spdlog::info("TLS certificate {}: sha256 certificate {}, sha256 public-key {}", t.certificate,
               f.certificate, f.public_key);
  pg_tls_ = std::make_unique<tls::ServerContextHolder>(std::move(ctx));
  auto tds = tls::ServerContext::create(t, tls::kAlpnTds, &error);
  if (!tds) throw std::runtime_error(error);
  tds_tls_ = std::make_unique<tls::ServerContextHolder>(std::move(tds));
}

void Server::reload_tls() {
  if (!pg_tls_) {
    spdlog::info("SIGHUP: no TLS certificate configured; nothing to reload");
    metrics().reload(true);
    return;
  }
  std::string error;
  // The files are the start-up ones; whether to ask for client certificates
  // follows the reloaded users' pins.
  config::Tls tls = cfg_.tls;
  tls.client_pins = current_config()->tls.client_pins;
  const bool ok = pg_tls_->reload(tls, &error) && tds_tls_->reload(tls, &error);
  metrics().reload(ok);
  if (ok) {
    const auto& f = pg_tls_->current()->fingerprints();
    spdlog::info(
        "SIGHUP: TLS certificate reloaded (sha256 public-key {}); established sessions "
        "keep theirs",
        f.public_key);
  } else {
    spdlog::error("SIGHUP: TLS certificate not reloaded, the current one stays: {}", error);
  }
}

void Server::on_signal(int signo) {
  if (signo == SIGHUP) {
    reload();
    return;
  }
  if (++signals_seen_ > 1) {
    spdlog::warn("second signal: exiting now");
    std::fflush(nullptr);
    std::_Exit(1);
  }
  spdlog::info("signal {}: draining (up to {} ms)", signo, cfg_.server.shutdown_grace.count());
  begin_drain();
}

std::string Server::ready_status() const {
  return "serving " + std::to_string(current_config()->databases.size()) + " database(s) on " +
         std::to_string(acceptors_.size()) + " listener(s)";
}

void Server::reload() {
  if (draining_) return;
  notify_reloading();
  // Whatever the outcome, systemd hears READY=1 again when this returns.
  struct Ready {
    const Server& s;
    ~Ready() { notify_ready(s.ready_status()); }
  } ready{*this};
  spdlog::info("reloading the configuration from {}", cfg_.path);
  config::Config next;
  try {
    next = config::load(cfg_.path, validator_);
  } catch (const config::ConfigError& e) {
    for (const auto& p : e.problems())
      spdlog::error("reload refused: {}", p.to_string());
    spdlog::error("reload refused: the running configuration stays in force");
    metrics().reload(false);
    return;
  } catch (const std::exception& e) {
    spdlog::error("reload refused: {}: {}; the running configuration stays in force", cfg_.path,
                  e.what());
    metrics().reload(false);
    return;
  }
  try {
    apply(std::move(next));
  } catch (const std::exception& e) {
    // A secret that cannot be read (password_env unset, password_file gone).
    spdlog::error("reload refused: {}; the running configuration stays in force", e.what());
    metrics().reload(false);
    return;
  }
  warn_readable_secrets(*current_config());
  reload_tls();
  metrics().set_config_hash(file_sha256(cfg_.path));
  metrics().reload(true);
}

void Server::begin_drain() {
  notify_stopping();
  draining_ = true;
  listening_ = false;
  stats_timer_.cancel();
  trim_timer_.cancel();
  retire_timer_.cancel();
  for (auto& a : acceptors_) {
    boost::system::error_code ec;
    a->close(ec);
  }
  waiting_timer_.cancel();
  for (uint64_t token : admission_.clear_waiting())
    close_waiting(token, "the server is shutting down");
  for (auto& loop : loops_) {
    asio::post(loop->io, [l = loop.get()] {
      for (auto& c : l->clients)
        c.drain();
    });
  }
  drain_deadline_ = std::chrono::steady_clock::now() + cfg_.server.shutdown_grace;
  check_drained();
}

void Server::check_drained() {
  auto remaining = admission_.clients();
  auto now = std::chrono::steady_clock::now();
  if (remaining == 0) {
    // Every client left: close the backends cleanly, then stop (at most ~5 s).
    auto all = pools();
    all.insert(all.end(), retired_.begin(), retired_.end());
    if (pool_close_waits_ == 0) {
      for (auto& pool : all)
        pool->shutdown();
    }
    bool busy = false;
    for (auto& pool : all) {
      auto s = pool->stats();
      busy = busy || s.opening + s.idle + s.in_use + s.resetting + s.closing > 0;
    }
    if (!busy || ++pool_close_waits_ > 50) {
      main_.stop();
      return;
    }
  } else if (now >= drain_deadline_) {
    spdlog::warn("shutdown_grace over: closing {} remaining client(s)", remaining);
    log_drain_wait(remaining);
    for (auto& loop : loops_) {
      asio::post(loop->io, [l = loop.get()] {
        for (auto& c : l->clients)
          c.terminate();
      });
    }
    drain_deadline_ = now + std::chrono::seconds(5);
  }
  if (remaining > 0 && ++drain_ticks_ % 50 == 0) log_drain_wait(remaining);
  drain_timer_.expires_after(std::chrono::milliseconds(100));
  drain_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) check_drained();
  });
}

void Server::log_drain_wait(int64_t counted) {
  // Each loop lists its own clients; the last one to answer compares the
  // total with the count: a client counted but on no loop has left and is
  // still held by an operation that has not ended.
  struct Tally {
    std::atomic<size_t> listed{0};
    std::atomic<size_t> loops_left;
  };
  auto tally = std::make_shared<Tally>();
  tally->loops_left = loops_.size();
  for (auto& loop : loops_) {
    asio::post(loop->io, [l = loop.get(), tally, counted] {
      size_t n = 0;
      for (auto& c : l->clients) {
        ++n;
        ClientInfo info;
        if (c.describe(info)) {
          spdlog::info("draining: waiting for client {} ({}:{}, {}@{}): {}", info.id, info.address,
                       info.port, info.user, info.database, info.state);
        } else {
          spdlog::info("draining: waiting for a client that has not logged in");
        }
      }
      tally->listed += n;
      if (--tally->loops_left == 0 && tally->listed.load() < static_cast<size_t>(counted)) {
        spdlog::warn(
            "draining: {} client(s) counted, {} connected: {} left but are still held by an "
            "operation that has not ended",
            counted, tally->listed.load(), counted - static_cast<int64_t>(tally->listed.load()));
      }
    });
  }
  for (auto& pool : pools()) {
    auto s = pool->stats();
    if (s.in_use + s.waiting > 0) {
      spdlog::info("draining: database \"{}\" (user \"{}\"): {} backend(s) in use, {} waiting",
                   pool->config().name, pool->user(), s.in_use, s.waiting);
    }
  }
}

void Server::stop_all() {
  {
    std::lock_guard lock(state_mu_);
    for (auto& [name, entry] : databases_) {
      if (auto m = entry.shared->monitor()) m->stop();
    }
  }
  for (auto& loop : loops_)
    loop->io.stop();
  for (auto& loop : loops_) {
    if (loop->thread.joinable()) loop->thread.join();
  }
  // A parked client is held by itself, not by an operation that goes with the
  // loop: let it go too.
  for (auto& loop : loops_) {
    std::vector<std::shared_ptr<ClientConnection>> parked;
    for (auto& c : loop->clients) {
      if (auto* conn = dynamic_cast<ClientConnection*>(&c)) {
        if (auto self = conn->leave_park_for_exit()) parked.push_back(std::move(self));
      }
    }
  }
  blocking_.stop();
  blocking_.join();
  hashing_.stop();
  hashing_.join();
  if (spare_fd_ >= 0) {
    ::close(spare_fd_);
    spare_fd_ = -1;
  }
}

}  // namespace wirepool::server
