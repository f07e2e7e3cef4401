#pragma once
// The I/O side of users from the backend (session/auth_query.hpp): one
// dedicated connection per database as its auth_user (on the host monitor's
// primary when the database has several hosts), lookups on the bounded
// executor one at a time, one per name in flight, each client's wait bounded
// by auth_query_timeout.

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/db.hpp"
#include "config/config.hpp"
#include "server/blocking.hpp"
#include "session/auth_query.hpp"

namespace wirepool::server {

struct DatabaseShared;

class AuthLookup : public std::enable_shared_from_this<AuthLookup> {
 public:
  /// `open` is the database entry's (its password is auth_user's); the
  /// connection logs in as cfg.auth_query.user, where `shared`'s host
  /// monitor says when the database has several hosts (as its pools do).
  AuthLookup(const config::Database& cfg, const db::Driver& driver, db::OpenOptions open,
             BlockingExecutor& blocking, std::shared_ptr<DatabaseShared> shared = nullptr);
  ~AuthLookup();

  /// The answer for `name`: cached, or looked up (the first asker starts the
  /// lookup, the others wait for it), within auth_query_timeout (then
  /// `failed` with `connection`). Names auth_name_acceptable() refuses are
  /// `unknown` without a query.
  boost::asio::awaitable<AuthResult> find(std::string name);

  /// The iteration count of the last verifier found (PostgreSQL's default
  /// 4096 before one is): unknown names advertise it too.
  int iterations() const { return iterations_.load(std::memory_order_relaxed); }
  /// Whether the settings that shape lookups equal `a`'s (a reload keeps the cache then).
  bool same_settings(const config::AuthQuery& a) const;
  size_t cached() const;

 private:
  struct Waiter;
  void drain();  ///< on the executor: runs queued lookups until none is left
  AuthResult run_query(const std::string& name);
  AuthResult query_once(const std::string& name);
  void deliver(const std::string& name, const AuthResult& result);

  std::string database_;
  config::AuthQuery settings_;
  const db::Driver& driver_;
  db::OpenOptions open_;
  BlockingExecutor& blocking_;
  std::atomic<int> iterations_{4096};

  mutable std::mutex mu_;  ///< guards cache_, waiters_, queue_, running_
  AuthCache cache_;
  std::unordered_map<std::string, std::vector<std::shared_ptr<Waiter>>> waiters_;
  std::deque<std::string> queue_;
  bool running_ = false;
  std::shared_ptr<DatabaseShared> shared_;  ///< its monitor picks the host; may be null
  db::Connection conn_;                     ///< only the draining job touches it
  std::shared_ptr<void> conn_lease_;        ///< conn_'s count on its host (several hosts)
};

using AuthLookupPtr = std::shared_ptr<AuthLookup>;

}  // namespace wirepool::server
