#include "server/auth_lookup.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

#include "server/backend_pool.hpp"

namespace wirepool::server {

namespace asio = boost::asio;

namespace {

/// Rows read beyond the first: enough to tell "two rows" from one.
constexpr size_t kMaxRows = 2;

AuthResult failure(std::string reason, bool connection) {
  AuthResult r;
  r.answer = AuthAnswer::failed;
  r.reason = std::move(reason);
  r.connection = connection;
  return r;
}

}  // namespace

/// A client waiting for a lookup: the job posts the result to the timer's
/// executor (the client's loop) and cancels the timer, which ends the wait.
struct AuthLookup::Waiter {
  explicit Waiter(const asio::any_io_executor& ex) : timer(ex) {}
  asio::steady_timer timer;
  std::optional<AuthResult> result;
};

AuthLookup::AuthLookup(const config::Database& cfg, const db::Driver& driver, db::OpenOptions open,
                       BlockingExecutor& blocking, std::shared_ptr<DatabaseShared> shared)
    : database_(cfg.name),
      settings_(cfg.auth_query),
      driver_(driver),
      open_(std::move(open)),
      blocking_(blocking),
      cache_(static_cast<size_t>(cfg.auth_query.cache_size), cfg.auth_query.ttl,
             cfg.auth_query.negative_ttl),
      shared_(std::move(shared)) {
  open_.user = settings_.user;
}

AuthLookup::~AuthLookup() {
  if (conn_.is_open()) {
    blocking_.post([c = std::make_shared<db::Connection>(std::move(conn_))] { (void)c->close(); });
  }
}

bool AuthLookup::same_settings(const config::AuthQuery& a) const {
  return a.user == settings_.user && a.query == settings_.query && a.timeout == settings_.timeout &&
         a.ttl == settings_.ttl && a.negative_ttl == settings_.negative_ttl &&
         a.cache_size == settings_.cache_size;
}

size_t AuthLookup::cached() const {
  std::lock_guard lock(mu_);
  return cache_.size();
}

asio::awaitable<AuthResult> AuthLookup::find(std::string name) {
  if (!auth_name_acceptable(name)) {
    AuthResult r;
    r.answer = AuthAnswer::unknown;
    r.reason = "not a role name (empty, over 63 bytes, a control character or invalid UTF-8)";
    co_return r;
  }
  auto executor = co_await asio::this_coro::executor;
  auto waiter = std::make_shared<Waiter>(executor);
  {
    std::lock_guard lock(mu_);
    auto step = cache_.lookup(name, std::chrono::steady_clock::now());
    if (step.step == AuthCache::Step::hit) co_return std::move(step.result);
    waiters_[name].push_back(waiter);
    if (step.step == AuthCache::Step::start) {
      queue_.push_back(name);
      if (!running_) {
        running_ = true;
        blocking_.post([self = shared_from_this()] { self->drain(); });
      }
    }
  }
  waiter->timer.expires_after(settings_.timeout);
  boost::system::error_code ec;
  co_await waiter->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  if (waiter->result) co_return std::move(*waiter->result);
  {
    std::lock_guard lock(mu_);
    if (auto it = waiters_.find(name); it != waiters_.end()) {
      std::erase(it->second, waiter);
      if (it->second.empty()) waiters_.erase(it);
    }
  }
  co_return failure("auth_query gave no answer within " +
                        std::to_string(settings_.timeout.count()) + " ms (auth_query_timeout)",
                    true);
}

void AuthLookup::drain() {
  for (;;) {
    std::string name;
    {
      std::lock_guard lock(mu_);
      if (queue_.empty()) {
        running_ = false;
        return;
      }
      name = std::move(queue_.front());
      queue_.pop_front();
    }
    deliver(name, run_query(name));
  }
}

AuthResult AuthLookup::run_query(const std::string& name) {
  // A connection kept from an earlier lookup may have died with its server (a
  // failover): a connection error on it is tried once more on a fresh one.
  const bool reused = conn_.is_open() && conn_.alive();
  AuthResult result = query_once(name);
  if (reused && result.answer == AuthAnswer::failed && result.connection) result = query_once(name);
  return result;
}

AuthResult AuthLookup::query_once(const std::string& name) {
  if (!conn_.is_open() || !conn_.alive()) {
    if (conn_.is_open()) (void)conn_.close();
    conn_lease_.reset();
    // Several hosts: the monitor's primary (or a standby for a read-only
    // database), as for the pools' own connections.
    auto opened =
        open_backend(driver_, open_, shared_ ? shared_->monitor() : nullptr, nullptr, &conn_lease_);
    if (!opened.ok()) {
      return failure(
          "cannot connect as auth_user \"" + settings_.user + "\": " + opened.error().message,
          true);
    }
    conn_ = std::move(opened.value());
  }
  db::ConnectionImpl* impl = conn_.impl();
  std::vector<db::Param> params(1);
  params[0].value = db::Value::text(name);
  params[0].untyped = true;  // the backend reads it as its parameter's type (name)
  const db::Params bound(params);
  auto rows = db::call_blocking(
      *impl, [&] { return impl->query(settings_.query, bound, {}); }, settings_.timeout);
  AuthResult result;
  if (!rows.ok()) {
    const bool connection = rows.error().code == db::Errc::connection;
    result = failure("auth_query failed: " + rows.error().message, connection);
  } else {
    auto& reader = *rows.value();
    const size_t width = reader.columns().size();
    std::vector<db::Value> row(width);
    std::vector<std::vector<std::optional<std::string>>> seen;
    for (;;) {
      auto more = db::call_blocking(
          *impl, [&] { return reader.next(std::span<db::Value>(row)); }, settings_.timeout);
      if (!more.ok()) {
        result = failure("auth_query failed: " + more.error().message,
                         more.error().code == db::Errc::connection);
        break;
      }
      if (!more.value()) {
        result = interpret_auth_rows(seen);
        break;
      }
      if (seen.size() < kMaxRows) {
        auto& out = seen.emplace_back();
        for (const auto& v : row)
          out.push_back(v.is_null() ? std::nullopt : std::optional<std::string>(v.str));
      } else {
        result = failure("auth_query returned more than one row, expected one", false);
        break;
      }
    }
    (void)db::call_blocking(
        *impl, [&] { return reader.close(); }, settings_.timeout);
  }
  if (result.answer == AuthAnswer::failed) {
    // The connection's state after a failure is not worth trusting: a fresh one next time.
    (void)conn_.close();
    conn_ = db::Connection();
    conn_lease_.reset();
  }
  return result;
}

void AuthLookup::deliver(const std::string& name, const AuthResult& result) {
  // Once per lookup, that is once per name per TTL (the answer is cached).
  switch (result.answer) {
    case AuthAnswer::found:
      iterations_.store(result.verifier->iterations, std::memory_order_relaxed);
      spdlog::debug("database \"{}\": auth_query found user \"{}\"", database_, name);
      break;
    case AuthAnswer::unknown:
      spdlog::info("database \"{}\": auth_query: no role \"{}\"", database_, name);
      break;
    case AuthAnswer::refused:
      spdlog::warn("database \"{}\": auth_query: user \"{}\" cannot log in through wirepool: {}",
                   database_, name, result.reason);
      break;
    case AuthAnswer::failed:
      spdlog::error("database \"{}\": looking up user \"{}\" failed: {}", database_, name,
                    result.reason);
      break;
  }
  std::vector<std::shared_ptr<Waiter>> waiting;
  {
    std::lock_guard lock(mu_);
    cache_.complete(name, result, std::chrono::steady_clock::now());
    if (auto it = waiters_.find(name); it != waiters_.end()) {
      waiting = std::move(it->second);
      waiters_.erase(it);
    }
  }
  for (auto& w : waiting) {
    asio::post(w->timer.get_executor(), [w, result] {
      w->result = result;
      w->timer.cancel();
    });
  }
}

}  // namespace wirepool::server
