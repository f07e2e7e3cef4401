// All transitions of the host set (hosts.hpp).
#include "hosts.hpp"

#include <algorithm>

namespace wirepool::pool {

std::string_view to_string(HostRole r) {
  switch (r) {
    case HostRole::unknown:
      return "unknown";
    case HostRole::primary:
      return "primary";
    case HostRole::standby:
      return "standby";
    case HostRole::banned:
      return "banned";
    case HostRole::diverged:
      return "diverged";
  }
  return "unknown";
}

std::string_view to_string(HostEvent::Kind k) {
  switch (k) {
    case HostEvent::Kind::banned:
      return "banned";
    case HostEvent::Kind::unbanned:
      return "unbanned";
    case HostEvent::Kind::primary_changed:
      return "primary_changed";
    case HostEvent::Kind::primary_lost:
      return "primary_lost";
    case HostEvent::Kind::diverged:
      return "diverged";
    case HostEvent::Kind::writable_replica:
      return "writable_replica";
    case HostEvent::Kind::reads_on:
      return "reads_on";
    case HostEvent::Kind::reads_off:
      return "reads_off";
    case HostEvent::Kind::probe_missed:
      return "probe_missed";
  }
  return "unknown";
}

std::string_view to_string(Balance b) {
  return b == Balance::round_robin ? "round_robin" : "least_connections";
}

HostSet::HostSet(size_t count, HostsConfig config, TimePoint now) : config_(config), hosts_(count) {
  for (auto& h : hosts_)
    h.due = now;
}

HostSet::Duration HostSet::recheck() const {
  return primary_ ? config_.check_interval : config_.failover_interval;
}

std::vector<size_t> HostSet::take_due(TimePoint now) {
  std::vector<size_t> out;
  for (size_t i = 0; i < hosts_.size(); ++i) {
    auto& h = hosts_[i];
    if (!h.in_flight && h.due <= now) {
      h.in_flight = true;
      out.push_back(i);
    }
  }
  return out;
}

std::optional<HostSet::TimePoint> HostSet::next_deadline() const {
  std::optional<TimePoint> out;
  for (const auto& h : hosts_) {
    if (!h.in_flight && (!out || h.due < *out)) out = h.due;
  }
  return out;
}

std::vector<HostEvent> HostSet::take_events() {
  std::vector<HostEvent> out;
  out.swap(events_);
  return out;
}

void HostSet::clear_primary(size_t host, TimePoint now) {
  if (primary_ != host) return;
  primary_.reset();
  events_.push_back({HostEvent::Kind::primary_lost, host});
  // Without a primary every host that may be promoted is watched closely.
  for (auto& h : hosts_) {
    if (h.role != HostRole::banned && h.role != HostRole::diverged)
      h.due = std::min(h.due, now + config_.failover_interval);
  }
}

void HostSet::ban(size_t host, TimePoint now) {
  auto& h = hosts_[host];
  clear_primary(host, now);
  h.misses = 0;
  ++h.failures;
  Duration d = config_.ban_first;
  for (uint32_t i = 1; i < h.failures && d < config_.ban_max; ++i)
    d *= 2;
  h.ban = std::min(d, config_.ban_max);
  h.role = HostRole::banned;
  h.due = now + h.ban;
  events_.push_back({HostEvent::Kind::banned, host, h.ban});
  update_readable(host);
}

void HostSet::handle_open_failed(size_t host, TimePoint now, bool for_reads) {
  if (host >= hosts_.size()) return;
  if (primary_ == host || (for_reads && hosts_[host].role == HostRole::standby)) ban(host, now);
}

void HostSet::set_replica_only(size_t host) {
  if (host < hosts_.size()) hosts_[host].replica_only = true;
}

HostSet::Duration HostSet::readmit_lag() const {
  if (config_.readmit_lag.count() > 0) return std::min(config_.readmit_lag, config_.max_lag);
  return config_.max_lag * 4 / 5;
}

void HostSet::update_readable(size_t host) {
  auto& h = hosts_[host];
  // In reads: while within max_lag; out of them: back only within readmit_lag.
  bool now_readable = h.role == HostRole::standby;
  if (now_readable && config_.max_lag.count() > 0)
    now_readable = h.lag && *h.lag <= (h.readable ? config_.max_lag : readmit_lag());
  if (now_readable == h.readable) return;
  h.readable = now_readable;
  events_.push_back(
      {now_readable ? HostEvent::Kind::reads_on : HostEvent::Kind::reads_off, host, {}, 0, h.lag});
}

std::optional<size_t> HostSet::pick_reader(Balance how) {
  const size_t n = hosts_.size();
  std::optional<size_t> best;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (cursor_ + k) % n;
    if (!hosts_[i].readable) continue;
    if (how == Balance::round_robin) {
      best = i;
      break;
    }
    if (!best || hosts_[i].connections < hosts_[*best].connections) best = i;
  }
  if (best) cursor_ = (*best + 1) % n;
  return best;
}

void HostSet::connection_opened(size_t host) {
  if (host < hosts_.size()) ++hosts_[host].connections;
}

void HostSet::connection_closed(size_t host) {
  if (host < hosts_.size() && hosts_[host].connections > 0) --hosts_[host].connections;
}

bool HostSet::all_probed() const {
  return std::none_of(hosts_.begin(), hosts_.end(),
                      [](const HostState& h) { return h.role == HostRole::unknown; });
}

std::optional<uint64_t> HostSet::lag_bytes(size_t host) const {
  const auto& h = hosts_.at(host);
  if (h.role != HostRole::standby || h.lsn == 0 || !primary_) return std::nullopt;
  const uint64_t head = hosts_[*primary_].lsn;
  if (head == 0) return std::nullopt;
  return head > h.lsn ? head - h.lsn : 0;
}

void HostSet::fence(size_t host, TimePoint now) {
  auto& h = hosts_[host];
  clear_primary(host, now);
  h.role = HostRole::diverged;
  ++h.failures;
  Duration d = config_.ban_first;
  for (uint32_t i = 1; i < h.failures && d < config_.ban_max; ++i)
    d *= 2;
  h.ban = std::min(d, config_.ban_max);
  h.due = now + h.ban;
}

void HostSet::handle_probe(size_t host, ProbeResult r, TimePoint now) {
  if (host >= hosts_.size()) return;
  hosts_[host].in_flight = false;
  apply_probe(host, r, now);
  // A promotion or a fence changes another host's role too.
  for (size_t i = 0; i < hosts_.size(); ++i)
    update_readable(i);
}

void HostSet::apply_probe(size_t host, const ProbeResult& r, TimePoint now) {
  auto& h = hosts_[host];
  if (r.kind == ProbeResult::Kind::unreachable) {
    // A healthy host's slow or failed probe may be load, not death: it keeps
    // its role and is asked again soon, until failures_to_ban in a row.
    const bool healthy = h.role == HostRole::primary || h.role == HostRole::standby;
    if (healthy && !r.refused && h.misses + 1 < std::max<uint32_t>(config_.failures_to_ban, 1)) {
      ++h.misses;
      h.due = now + std::min(config_.failover_interval, recheck());
      events_.push_back({HostEvent::Kind::probe_missed, host});
      return;
    }
    ban(host, now);
    return;
  }
  h.misses = 0;
  if (h.role == HostRole::banned) events_.push_back({HostEvent::Kind::unbanned, host});
  const bool was_diverged = h.role == HostRole::diverged;
  h.lsn = r.lsn;
  if (r.kind == ProbeResult::Kind::read_only) {
    clear_primary(host, now);
    h.role = HostRole::standby;
    h.lag = r.lag;
    h.failures = 0;
    h.ban = {};
    h.due = now + recheck();
    return;
  }
  h.timeline = r.timeline;
  h.lag.reset();
  // A host listed as a replica that accepts writes was promoted or detached:
  // neither written to nor read from, and its timeline fences nobody.
  if (h.replica_only) {
    clear_primary(host, now);
    if (!was_diverged) events_.push_back({HostEvent::Kind::writable_replica, host, {}, r.timeline});
    fence(host, now);
    return;
  }
  // Read-write. A timeline older than one already seen is a server that went
  // on writing after another was promoted past it: never a primary again.
  // The same for a second read-write host on the current primary's timeline
  // (two promotions from one timeline): the primary in place is kept.
  const bool older = r.timeline != 0 && r.timeline < max_timeline_;
  const bool rival =
      primary_ && *primary_ != host && (r.timeline == 0 || r.timeline == max_timeline_) && !older;
  if (older || rival) {
    clear_primary(host, now);
    if (!was_diverged) events_.push_back({HostEvent::Kind::diverged, host, {}, r.timeline});
    fence(host, now);
    return;
  }
  h.failures = 0;
  h.ban = {};
  if (r.timeline > max_timeline_) {
    max_timeline_ = r.timeline;
    // A primary on an older timeline than this one was passed by a promotion.
    if (primary_ && *primary_ != host) {
      const size_t old = *primary_;
      clear_primary(old, now);
      auto& o = hosts_[old];
      o.role = HostRole::diverged;
      o.ban = config_.ban_first;
      o.failures = 1;
      if (!o.in_flight) o.due = now + o.ban;
      events_.push_back({HostEvent::Kind::diverged, old, {}, o.timeline});
    }
  }
  if (!primary_) {
    primary_ = host;
    events_.push_back({HostEvent::Kind::primary_changed, host, {}, r.timeline});
  }
  h.role = HostRole::primary;
  h.due = now + recheck();
}

}  // namespace wirepool::pool
