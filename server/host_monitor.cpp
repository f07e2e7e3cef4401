#include "server/host_monitor.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

namespace wirepool::server {

namespace asio = boost::asio;

namespace {
pool::HostsConfig hosts_config(const config::HealthCheck& hc) {
  pool::HostsConfig c;
  c.check_interval = hc.interval;
  c.failover_interval = hc.failover_interval;
  c.ban_first = hc.ban_time;
  c.ban_max = hc.ban_time_max;
  return c;
}

std::string name_of(const db::HostPort& h) {
  return h.port > 0 ? h.host + ":" + std::to_string(h.port) : h.host;
}
}  // namespace

std::vector<db::HostPort> hosts_of(const config::Database& d, const db::Driver& driver,
                                   const db::OpenOptions& open) {
  std::vector<db::HostPort> out;
  for (const auto& h : d.hosts)
    out.push_back({h.host, h.port});
  if (out.empty()) out = driver.hosts(open);
  return out;
}

HostMonitor::HostMonitor(std::string database, std::vector<db::HostPort> hosts,
                         config::HealthCheck hc, const db::Driver& driver, db::OpenOptions open,
                         BlockingExecutor& blocking, asio::io_context& timers)
    : database_(std::move(database)),
      hosts_(std::move(hosts)),
      hc_(hc),
      driver_(driver),
      open_(std::move(open)),
      blocking_(blocking),
      timers_(timers),
      timer_(timers),
      set_(hosts_.size(), hosts_config(hc), pool::HostSet::TimePoint{}) {
  open_.probe_timeout = hc.timeout;
}

db::OpenOptions HostMonitor::options_for(size_t host) const {
  db::OpenOptions o = open_;
  o.host = hosts_[host].host;
  o.port = hosts_[host].port;
  return o;
}

void HostMonitor::on_change(std::function<void()> f) {
  std::lock_guard l(mu_);
  on_change_ = std::move(f);
}

void HostMonitor::start() {
  asio::post(timers_, [self = shared_from_this()] { self->on_timer(); });
}

void HostMonitor::stop() {
  std::lock_guard l(mu_);
  stopped_ = true;
  primary_known_.notify_all();
  asio::post(timers_, [self = shared_from_this()] { self->timer_.cancel(); });
}

void HostMonitor::arm(std::unique_lock<std::mutex>& lock) {
  (void)lock;  // held: posts reach the timer in the order of the states they saw
  if (stopped_) return;
  const auto next = set_.next_deadline();
  if (!next) return;  // every host is in flight: its answer re-arms
  asio::post(timers_, [self = shared_from_this(), at = *next] {
    self->timer_.expires_at(at);
    self->timer_.async_wait(
        [weak = std::weak_ptr<HostMonitor>(self)](boost::system::error_code ec) {
          if (ec) return;
          if (auto s = weak.lock()) s->on_timer();
        });
  });
}

void HostMonitor::on_timer() {
  std::unique_lock l(mu_);
  if (stopped_) return;
  for (size_t host : set_.take_due(std::chrono::steady_clock::now())) {
    blocking_.post([self = shared_from_this(), host] { self->run_probe(host); });
  }
  arm(l);
}

void HostMonitor::run_probe(size_t host) {
  auto result = driver_.probe(options_for(host));
  pool::ProbeResult r;
  if (result.ok()) {
    r.kind = result.value().read_only ? pool::ProbeResult::Kind::read_only
                                      : pool::ProbeResult::Kind::read_write;
    r.timeline = result.value().timeline;
  } else {
    spdlog::debug("database \"{}\": probe of {} failed: {}", database_, name_of(hosts_[host]),
                  result.error().message);
  }
  std::unique_lock l(mu_);
  set_.handle_probe(host, r, std::chrono::steady_clock::now());
  const bool changed = drain_events(l);
  arm(l);
  auto notify = changed ? on_change_ : nullptr;
  l.unlock();
  if (notify) asio::post(timers_, notify);
}

bool HostMonitor::drain_events(std::unique_lock<std::mutex>& lock) {
  (void)lock;
  bool changed = false;
  for (const auto& e : set_.take_events()) {
    const std::string host = name_of(hosts_[e.host]);
    using K = pool::HostEvent::Kind;
    switch (e.kind) {
      case K::banned:
        spdlog::warn("database \"{}\": host {} banned for {} ms (unreachable)", database_, host,
                     std::chrono::duration_cast<std::chrono::milliseconds>(e.ban).count());
        break;
      case K::unbanned:
        spdlog::info("database \"{}\": host {} answers again: unbanned", database_, host);
        break;
      case K::primary_changed:
        spdlog::warn("database \"{}\": host {} is the primary (timeline {})", database_, host,
                     e.timeline);
        changed = true;
        primary_known_.notify_all();
        break;
      case K::primary_lost:
        spdlog::warn("database \"{}\": host {} is no longer the primary", database_, host);
        changed = true;
        break;
      case K::diverged:
        spdlog::error(
            "database \"{}\": host {} accepts writes on timeline {}, older than timeline {} of "
            "the primary: a diverged server, kept out (rebuild it as a standby)",
            database_, host, e.timeline, set_.max_timeline());
        break;
    }
  }
  return changed;
}

std::optional<HostMonitor::Target> HostMonitor::primary_target(std::string* error) {
  std::unique_lock l(mu_);
  const auto deadline = std::chrono::steady_clock::now() + hc_.failover_timeout;
  if (!primary_known_.wait_until(l, deadline, [&] { return stopped_ || set_.primary(); }) ||
      stopped_) {
    if (error) {
      *error = "no primary among the " + std::to_string(hosts_.size()) + " hosts of database \"" +
               database_ + "\" (waited " + std::to_string(hc_.failover_timeout.count()) + " ms)";
    }
    return std::nullopt;
  }
  const size_t host = *set_.primary();
  Target t{host, options_for(host)};
  t.open.read_write = true;
  return t;
}

void HostMonitor::open_failed(size_t host) {
  std::unique_lock l(mu_);
  set_.handle_open_failed(host, std::chrono::steady_clock::now());
  const bool changed = drain_events(l);
  arm(l);
  auto notify = changed ? on_change_ : nullptr;
  l.unlock();
  if (notify) asio::post(timers_, notify);
}

std::vector<HostMonitor::HostInfo> HostMonitor::snapshot() const {
  std::lock_guard l(mu_);
  std::vector<HostInfo> out;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    const auto& s = set_.state(i);
    out.push_back({hosts_[i].host, hosts_[i].port, s.role, s.timeline, s.failures,
                   std::chrono::duration_cast<std::chrono::milliseconds>(s.ban)});
  }
  return out;
}

}  // namespace wirepool::server
