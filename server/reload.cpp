// Reload: a configuration that loaded cleanly put in force (pools resized in
// place, changed or removed databases' pools retired until their sessions
// end). Server::reload reads the file and calls apply.

#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "server/server.hpp"

namespace wirepool::server {

namespace {
/// What makes two entries the same pool: everything but its sizes and timeouts.
/// The auth mode too: a pool's backends log in as its user's role or as the
/// connection's, never the other after a reload.
bool same_backend(const config::Database& a, const config::Database& b) {
  return a.driver == b.driver && a.auth == b.auth && a.connection == b.connection &&
         a.password_env == b.password_env && a.hosts == b.hosts &&
         a.health_check == b.health_check && a.replicas == b.replicas &&
         a.read_only == b.read_only && a.reads_of == b.reads_of &&
         a.password_file == b.password_file && a.options == b.options &&
         a.pool.mode == b.pool.mode && a.pool.reset_query == b.pool.reset_query &&
         a.pool.pipeline == b.pool.pipeline && a.tls.present == b.tls.present &&
         a.tls.ca == b.tls.ca && a.tls.pin_sha256 == b.tls.pin_sha256;
}
}  // namespace

void Server::apply(config::Config next) {
  // Settings that only a restart changes are kept, and said so.
  const auto& was = cfg_;
  if (next.listeners.size() != was.listeners.size() || next.server.threads != was.server.threads ||
      next.server.state_dir != was.server.state_dir ||
      next.server.max_clients != was.server.max_clients ||
      next.server.max_message_size != was.server.max_message_size ||
      next.server.login_timeout != was.server.login_timeout ||
      next.server.client_idle_timeout != was.server.client_idle_timeout ||
      next.server.idle_in_transaction_timeout != was.server.idle_in_transaction_timeout ||
      next.server.query_timeout != was.server.query_timeout ||
      next.server.shutdown_grace != was.server.shutdown_grace ||
      next.server.log_level != was.server.log_level ||
      next.server.log_format != was.server.log_format) {
    spdlog::warn(
        "reload: the server section and the listeners changed; they take effect at the "
        "next restart (databases and users are reloaded now)");
  }
  // Build everything that can fail before changing anything.
  auto users = std::make_shared<const UserStore>(next.users, auth_secret_);
  std::map<std::string, DatabaseEntry, std::less<>> fresh;  // entries of changed databases
  {
    std::lock_guard lock(state_mu_);
    for (const auto& d : next.databases) {
      auto it = databases_.find(d.name);
      if (it == databases_.end() || !same_backend(it->second.cfg, d)) {
        fresh.emplace(d.name, DatabaseEntry{});
      }
    }
  }
  for (auto& [name, entry] : fresh) {
    for (const auto& d : next.databases) {
      if (d.name == name) entry = make_entry(d);  // reads secrets: may throw
    }
  }
  // Kept databases whose auth_user settings changed get a new lookup (and an
  // empty cache); one whose settings stayed keeps its cache.
  std::map<std::string, AuthLookupPtr, std::less<>> lookups;
  {
    std::vector<std::pair<DatabaseEntry, const config::Database*>> changed;
    {
      std::lock_guard lock(state_mu_);
      for (const auto& d : next.databases) {
        auto it = databases_.find(d.name);
        if (it == databases_.end() || !same_backend(it->second.cfg, d)) continue;
        if (d.auth_query.enabled() &&
            (!it->second.auth || !it->second.auth->same_settings(d.auth_query) ||
             d.auth_query.password_env != it->second.cfg.auth_query.password_env ||
             d.auth_query.password_file != it->second.cfg.auth_query.password_file)) {
          DatabaseEntry copy;
          copy.driver = it->second.driver;
          copy.open = it->second.open;
          copy.shared = it->second.shared;
          changed.emplace_back(std::move(copy), &d);
        }
      }
    }
    for (auto& [entry, d] : changed)
      lookups.emplace(d->name, make_auth_lookup(entry, *d));  // reads a secret: may throw
  }
  std::map<std::string, DatabaseEntry, std::less<>> databases;
  std::vector<DatabasePoolPtr> retired;
  std::vector<std::pair<DatabasePoolPtr, config::PoolSettings>> resized;
  std::vector<std::string> added, removed;
  std::vector<std::pair<std::string, HostMonitorPtr>> fresh_started;
  std::vector<HostMonitorPtr> monitors_retired;
  {
    std::lock_guard lock(state_mu_);
    for (const auto& d : next.databases) {
      auto it = databases_.find(d.name);
      if (it != databases_.end() && same_backend(it->second.cfg, d)) {
        // The same backend: its users' pools stay and take the new sizes.
        DatabaseEntry entry = std::move(it->second);
        databases_.erase(it);
        entry.cfg = d;
        entry.open.options = d.options;
        entry.shared->resize_budget(static_cast<size_t>(d.pool.max_db_connections));
        if (!d.auth_query.enabled()) {
          entry.auth.reset();
        } else if (auto l = lookups.find(d.name); l != lookups.end()) {
          entry.auth = l->second;
        }
        for (auto& [user, pool] : entry.pools)
          resized.emplace_back(pool, d.pool);
        databases.emplace(d.name, std::move(entry));
      } else {
        if (it != databases_.end()) {
          if (auto m = it->second.shared->monitor()) monitors_retired.push_back(m);
          for (auto& [user, pool] : it->second.pools)
            retired.push_back(pool);
          databases_.erase(it);
        }
        fresh_started.emplace_back(d.name, fresh.at(d.name).shared->monitor());
        databases.emplace(d.name, std::move(fresh.at(d.name)));
        added.push_back(d.name);
      }
    }
    for (auto& [name, entry] : databases_) {
      removed.push_back(name);
      if (auto m = entry.shared->monitor()) monitors_retired.push_back(m);
      for (auto& [user, pool] : entry.pools)
        retired.push_back(pool);
    }
    databases_ = std::move(databases);
    users_ = std::move(users);
    current_ = std::make_shared<const config::Config>(std::move(next));
  }
  for (auto& [pool, settings] : resized)
    pool->reconfigure(settings);
  // Several hosts: the new entries' monitors start, the replaced ones stop.
  for (auto& [name, entry] : fresh_started) {
    (void)name;
    if (entry) entry->start();
  }
  for (auto& m : monitors_retired)
    m->stop();
  for (const auto& name : added)
    spdlog::info("reload: database \"{}\" added or changed", name);
  for (const auto& name : removed)
    spdlog::info("reload: database \"{}\" removed", name);
  for (auto& pool : retired) {
    spdlog::info(
        "reload: database \"{}\" removed or changed: its pool for user \"{}\" takes no new "
        "clients and closes when its {} session(s) end",
        pool->config().name, pool->user(), pool->metrics().clients.load());
    retired_.push_back(pool);
  }
  spdlog::info("configuration reloaded: {} database(s), {} user(s)",
               current_config()->databases.size(), current_config()->users.size());
  sweep_retired();
  probe_databases();
}

void Server::sweep_retired() {
  for (auto it = retired_.begin(); it != retired_.end();) {
    auto& pool = *it;
    if (pool->metrics().clients.load() > 0) {
      ++it;
      continue;
    }
    pool->shutdown();
    auto st = pool->stats();
    if (st.opening + st.idle + st.in_use + st.resetting + st.closing == 0) {
      spdlog::info("database \"{}\": retired pool of user \"{}\" closed", pool->config().name,
                   pool->user());
      it = retired_.erase(it);
    } else {
      ++it;
    }
  }
  if (!retired_.empty() && !draining_ && !retire_armed_) {
    retire_armed_ = true;
    retire_timer_.expires_after(std::chrono::milliseconds(200));
    retire_timer_.async_wait([this](boost::system::error_code ec) {
      retire_armed_ = false;
      if (!ec && !draining_) sweep_retired();
    });
  }
}

}  // namespace wirepool::server
