#include "server/host_monitor.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

namespace wirepool::server {

namespace asio = boost::asio;

namespace {
pool::HostsConfig hosts_config(const config::HealthCheck& hc,
                               const std::optional<config::ReadOnly>& reads) {
  pool::HostsConfig c;
  if (reads) c.max_lag = reads->max_replica_lag;
  c.check_interval = hc.interval;
  c.failover_interval = hc.failover_interval;
  c.ban_first = hc.ban_time;
  c.ban_max = hc.ban_time_max;
  c.failures_to_ban = static_cast<uint32_t>(hc.failures_to_ban);
  if (reads) c.readmit_lag = reads->readmit_lag;
  return c;
}

/// Whether a failed probe was refused by the server (nothing listens, or it
/// is starting or shutting down) rather than slow or cut: such a host is
/// banned at once. libpq and Connector/C say it only in their messages.
bool refused_by_server(const db::Error& e) {
  if (e.sqlstate.starts_with("57P")) return true;
  return e.message.find("Connection refused") != std::string::npos ||
         ((e.vendor_code == 2002 || e.vendor_code == 2003) &&
          e.message.find("(111)") != std::string::npos);
}

std::string name_of(const db::HostPort& h) {
  if (h.host.empty()) return "(the connection's host)";
  return h.port > 0 ? h.host + ":" + std::to_string(h.port) : h.host;
}

std::string lag_text(const std::optional<std::chrono::milliseconds>& lag) {
  return lag ? std::to_string(lag->count()) + " ms" : std::string("unknown");
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
                         BlockingExecutor& blocking, asio::io_context& timers,
                         std::optional<config::ReadOnly> reads, size_t replicas_from)
    : database_(std::move(database)),
      hosts_(std::move(hosts)),
      hc_(hc),
      driver_(driver),
      open_(std::move(open)),
      blocking_(blocking),
      timers_(timers),
      timer_(timers),
      reads_(std::move(reads)),
      set_(hosts_.size(), hosts_config(hc, reads_), pool::HostSet::TimePoint{}) {
  open_.probe_timeout = hc.timeout;
  for (size_t i = replicas_from; i < hosts_.size(); ++i)
    set_.set_replica_only(i);
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
  readers_known_.notify_all();
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
    r.lag = result.value().lag;
    r.lsn = result.value().lsn;
  } else {
    r.refused = refused_by_server(result.error());
    spdlog::debug("database \"{}\": probe of {} failed: {}", database_, name_of(hosts_[host]),
                  result.error().message);
  }
  std::unique_lock l(mu_);
  set_.handle_probe(host, r, std::chrono::steady_clock::now());
  if (set_.all_probed()) readers_known_.notify_all();
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
      case K::probe_missed:
        spdlog::info(
            "database \"{}\": host {} did not answer a probe; banned if {} in a row fail "
            "(health_check.failures_to_ban)",
            database_, host, hc_.failures_to_ban);
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
      case K::writable_replica:
        spdlog::error(
            "database \"{}\": host {} is listed under replicas but accepts writes (promoted or "
            "detached?): kept out",
            database_, host);
        break;
      case K::reads_on:
        if (!reads_) break;
        spdlog::info("database \"{}\": host {} takes reads (replay lag {})", database_, host,
                     lag_text(e.lag));
        changed = true;
        readers_known_.notify_all();
        break;
      case K::reads_off:
        if (!reads_) break;
        if (set_.state(e.host).role == pool::HostRole::standby) {
          spdlog::warn(
              "database \"{}\": host {} takes no reads: replay lag {} above max_replica_lag {} ms",
              database_, host, lag_text(e.lag), reads_->max_replica_lag.count());
        } else {
          spdlog::warn("database \"{}\": host {} takes no reads: {}", database_, host,
                       pool::to_string(set_.state(e.host).role));
        }
        changed = true;
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
  Target t = make_target(*set_.primary(), l);
  t.open.read_write = true;
  return t;
}

HostMonitor::Target HostMonitor::make_target(size_t host, std::unique_lock<std::mutex>& lock) {
  (void)lock;  // held
  set_.connection_opened(host);
  std::weak_ptr<HostMonitor> weak = shared_from_this();
  auto lease = std::shared_ptr<void>(nullptr, [weak, host](void*) {
    if (auto self = weak.lock()) {
      std::lock_guard l(self->mu_);
      self->set_.connection_closed(host);
    }
  });
  return Target{host, options_for(host), std::move(lease)};
}

std::optional<HostMonitor::Target> HostMonitor::target(std::string* error) {
  return reads_ ? reader_target(error) : primary_target(error);
}

std::optional<HostMonitor::Target> HostMonitor::reader_target(std::string* error) {
  if (!reads_) return primary_target(error);
  std::unique_lock l(mu_);
  const auto deadline = std::chrono::steady_clock::now() + hc_.failover_timeout;
  // At start-up no host has answered yet: wait for the first answers rather
  // than fall back to the primary (or refuse) before any standby could qualify.
  readers_known_.wait_until(l, deadline, [&] {
    if (stopped_ || set_.all_probed()) return true;
    for (size_t i = 0; i < set_.size(); ++i) {
      if (set_.readable(i)) return true;
    }
    return false;
  });
  if (stopped_) {
    if (error) *error = "database \"" + database_ + "\" is being replaced";
    return std::nullopt;
  }
  const auto how = reads_->balance == config::ReadOnly::Balance::round_robin
                       ? pool::Balance::round_robin
                       : pool::Balance::least_connections;
  if (auto host = set_.pick_reader(how)) return make_target(*host, l);
  if (reads_->fallback == config::ReadOnly::Fallback::refuse) {
    if (error) {
      *error = "no replica of database \"" + database_ + "\" takes reads (none is up" +
               (reads_->max_replica_lag.count() > 0
                    ? " within max_replica_lag " + std::to_string(reads_->max_replica_lag.count()) +
                          " ms"
                    : std::string()) +
               ") and read_only.fallback is refuse";
    }
    return std::nullopt;
  }
  if (!primary_known_.wait_until(l, deadline, [&] { return stopped_ || set_.primary(); }) ||
      stopped_) {
    if (error) {
      *error = "no replica and no primary among the " + std::to_string(hosts_.size()) +
               " hosts of database \"" + database_ + "\" (waited " +
               std::to_string(hc_.failover_timeout.count()) + " ms)";
    }
    return std::nullopt;
  }
  Target t = make_target(*set_.primary(), l);
  t.open.read_write = true;
  return t;
}

void HostMonitor::open_failed(size_t host) {
  std::unique_lock l(mu_);
  set_.handle_open_failed(host, std::chrono::steady_clock::now(), reads_.has_value());
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
                   std::chrono::duration_cast<std::chrono::milliseconds>(s.ban),
                   s.role == pool::HostRole::standby ? s.lag : std::nullopt, set_.lag_bytes(i),
                   reads_.has_value() && s.readable, s.connections});
  }
  return out;
}

}  // namespace wirepool::server
