// Every transition of the pool lives in this file (see pool.hpp for the contract).
//
// Connection states and what moves a connection between them:
//
//   from       event                          to         action
//   ---------  -----------------------------  ---------  --------------------------------
//   (none)     dispatch: waiters or < min     opening    Open
//   opening    handle_opened                  idle       (Close if retired, see below)
//   opening    handle_open_failed             (gone)     Reject open_failed if nothing left;
//                                                        back off (no Open before retry_at)
//   idle       dispatch: a waiter is first    in_use     Grant (most recently used first)
//   idle       handle_timeout: idle too long  closing    Close idle_timeout (above min only)
//   idle       handle_timeout: too old        closing    Close max_lifetime
//   idle       reconnect / shutdown           closing    Close reconnect / shutdown
//   idle       reconfigure: above new max     closing    Close reconnect
//   idle       handle_closed (found dead)     (gone)
//   in_use     handle_release: broken         closing    Close unhealthy / not_idle
//   in_use     handle_release: retired        closing    Close shutdown / max_lifetime / reconnect
//   in_use     handle_release: above          closing    Close surplus
//              pipeline_max, only pipelined
//              waiters wait
//   in_use     handle_release, session mode   resetting  Reset
//   in_use     handle_release                 idle
//   resetting  handle_reset_done(ok)          idle       (Close if retired)
//   resetting  handle_reset_done(!ok)         closing    Close reset_failed
//   closing    handle_closed                  (gone)
//
// "Retired" (retire_reason): the pool is shutting down, the connection reached
// max_lifetime, reconnect() marked it, or more connections are live than `max`.
// Every handler ends in dispatch(), which grants idle connections to waiters in
// FIFO order and opens connections for waiters and for `min`, never above `max`
// (closing connections count until handle_closed); for pipelined waiters alone
// only up to `pipeline_max` (pipeline_limit); after a failed open, none
// before retry_at and then one at a time until one succeeds (may_open_now),
// and waiters that nothing live could serve meanwhile are rejected open_failed.

#include "pool/pool.hpp"

#include <algorithm>
#include <optional>
#include <vector>

namespace wirepool::pool {

std::string_view to_string(RejectReason r) {
  switch (r) {
    case RejectReason::timeout:
      return "timeout";
    case RejectReason::open_failed:
      return "open_failed";
    case RejectReason::shutdown:
      return "shutdown";
    case RejectReason::paused:
      return "paused";
  }
  return "unknown";
}

std::string_view to_string(CloseReason r) {
  switch (r) {
    case CloseReason::unhealthy:
      return "unhealthy";
    case CloseReason::not_idle:
      return "not_idle";
    case CloseReason::max_lifetime:
      return "max_lifetime";
    case CloseReason::idle_timeout:
      return "idle_timeout";
    case CloseReason::reset_failed:
      return "reset_failed";
    case CloseReason::shutdown:
      return "shutdown";
    case CloseReason::reconnect:
      return "reconnect";
    case CloseReason::yielded:
      return "yielded";
    case CloseReason::surplus:
      return "surplus";
  }
  return "unknown";
}

namespace {

/// True when `span` is set (non-zero) and has elapsed since `start`.
bool elapsed(TimePoint start, Duration span, TimePoint now) {
  return span > Duration::zero() && now - start >= span;
}

void keep_earliest(std::optional<TimePoint>& best, TimePoint t) {
  if (!best || t < *best) best = t;
}

}  // namespace

Pool::Pool(Config config) : config_(config) {
  dispatch(TimePoint{}, true);
}

// ---- bookkeeping ---------------------------------------------------------------

size_t Pool::live() const {
  return count(State::opening) + count(State::idle) + count(State::in_use) +
         count(State::resetting);
}

size_t Pool::counted() const {
  return live() + count(State::closing);
}

size_t Pool::effective_min() const {
  return std::min(config_.min, config_.max);
}

Pool::Conn* Pool::find(ConnId id, State expected) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second.state != expected) return nullptr;
  return &it->second;
}

/// The one place a connection changes state: keeps counts_ and idle_ in step.
void Pool::set_state(ConnId id, Conn& c, State to) {
  if (c.state == State::idle) idle_.erase(std::find(idle_.begin(), idle_.end(), id));
  --counts_[static_cast<size_t>(c.state)];
  c.state = to;
  ++counts_[static_cast<size_t>(to)];
  if (to == State::idle) idle_.push_back(id);
}

void Pool::forget(ConnId id, Conn& c) {
  if (c.state == State::idle) idle_.erase(std::find(idle_.begin(), idle_.end(), id));
  --counts_[static_cast<size_t>(c.state)];
  conns_.erase(id);
}

std::optional<CloseReason> Pool::retire_reason(const Conn& c, TimePoint now) const {
  if (shutting_down_) return CloseReason::shutdown;
  if (elapsed(c.opened_at, config_.max_lifetime, now)) return CloseReason::max_lifetime;
  if (c.replace) return CloseReason::reconnect;
  if (live() > config_.max) return CloseReason::reconnect;  // `max` was lowered
  return std::nullopt;
}

// ---- actions -------------------------------------------------------------------

void Pool::open_one(TimePoint now) {
  const ConnId id = next_conn_++;
  conns_.emplace(id, Conn{State::opening, now, now, false});
  ++counts_[static_cast<size_t>(State::opening)];
  actions_.push_back(Open{id});
}

void Pool::make_idle(ConnId id, Conn& c, TimePoint now) {
  if (auto reason = retire_reason(c, now)) {
    close_conn(id, c, *reason);
    return;
  }
  c.idle_since = now;
  set_state(id, c, State::idle);
}

void Pool::close_conn(ConnId id, Conn& c, CloseReason reason) {
  set_state(id, c, State::closing);
  actions_.push_back(Close{id, reason});
}

void Pool::reject(WaiterId waiter, RejectReason reason) {
  if (reason == RejectReason::timeout) {
    ++totals_.rejected_timeout_total;
  } else {
    ++totals_.rejected_other_total;
  }
  actions_.push_back(Reject{waiter, reason});
}

std::deque<Pool::Waiter>::iterator Pool::drop_waiter(std::deque<Waiter>::iterator it, TimePoint now,
                                                     bool progress) {
  if (it->pipelined) --pipelined_waiting_;
  if (progress) last_progress_ = now;
  return waiters_.erase(it);
}

Pool::PipelineLimit Pool::pipeline_limit(TimePoint now) const {
  if (config_.pipeline_max == 0 || waiters_.empty()) return PipelineLimit::none;
  // A waiter that is not pipelined, past those the connections on their way
  // serve (in FIFO order), needs one of its own.
  const size_t coming = count(State::opening) + count(State::resetting);
  if (waiters_.size() > pipelined_waiting_ &&
      std::any_of(waiters_.begin() + static_cast<std::ptrdiff_t>(std::min(coming, waiters_.size())),
                  waiters_.end(), [](const Waiter& w) { return !w.pipelined; })) {
    return PipelineLimit::none;
  }
  if (counted() < config_.pipeline_max) return PipelineLimit::none;
  return coming == 0 && pipeline_stuck(now) ? PipelineLimit::past_patience : PipelineLimit::held;
}

bool Pool::pipeline_stuck(TimePoint now) const {
  return pipelined_waiting_ > 0 && now - last_progress_ >= kPipelinePatience;
}

bool Pool::may_open_now(TimePoint now) const {
  return !failing_ || (now >= retry_at_ && count(State::opening) == 0);
}

void Pool::dispatch(TimePoint now, bool may_open) {
  if (shutting_down_) return;
  // Serve waiters from idle connections: first waiter, most recently used connection.
  while (!waiters_.empty() && !idle_.empty()) {
    const ConnId id = idle_.back();
    Conn& c = conns_.at(id);
    if (auto reason = retire_reason(c, now)) {
      close_conn(id, c, *reason);
      continue;
    }
    const WaiterId waiter = waiters_.front().id;
    drop_waiter(waiters_.begin(), now, true);
    set_state(id, c, State::in_use);
    ++totals_.granted_total;
    actions_.push_back(Grant{waiter, id});
  }
  // Backing off with nothing that could serve a waiter: answer it from the
  // last failure now rather than let each one start an attempt.
  if (failing_ && now < retry_at_ && live() == 0 && !waiters_.empty()) {
    for (const Waiter& w : waiters_)
      reject(w.id, RejectReason::open_failed);
    waiters_.clear();
    pipelined_waiting_ = 0;
  }
  if (!may_open) return;
  // One Open per waiter not already covered by an opening or resetting connection.
  while (counted() < config_.max &&
         waiters_.size() > count(State::opening) + count(State::resetting) && may_open_now(now)) {
    const PipelineLimit limit = pipeline_limit(now);
    if (limit == PipelineLimit::held) break;
    if (limit == PipelineLimit::past_patience) ++totals_.patience_opens_total;
    open_one(now);
  }
  // And up to min, counting every connection not closing.
  while (counted() < config_.max && live() < effective_min() && may_open_now(now)) {
    open_one(now);
  }
}

// ---- events --------------------------------------------------------------------

void Pool::handle_acquire(WaiterId waiter, TimePoint now, bool pipelined) {
  if (shutting_down_) {
    reject(waiter, RejectReason::shutdown);
    return;
  }
  const TimePoint deadline = now + config_.acquire_timeout;
  if (waiters_.empty()) {
    last_progress_ = now;  // patience counts from the queue's start
    deadlines_in_order_ = true;
  } else if (deadline < waiters_.back().deadline) {
    deadlines_in_order_ = false;  // a shorter acquire_timeout since reconfigure()
  }
  waiters_.push_back(Waiter{waiter, deadline, now, pipelined});
  if (pipelined) {
    ++pipelined_waiting_;
  } else {
    last_unpipelined_ = now;
    unpipelined_seen_ = true;
  }
  dispatch(now, true);
}

std::optional<ConnId> Pool::try_acquire(TimePoint now) {
  // The same choice as dispatch() makes for a waiter at the head of the queue.
  while (!shutting_down_ && waiters_.empty() && !idle_.empty()) {
    const ConnId id = idle_.back();
    Conn& c = conns_.at(id);
    if (auto reason = retire_reason(c, now)) {
      close_conn(id, c, *reason);
      continue;
    }
    set_state(id, c, State::in_use);
    ++totals_.granted_total;
    dispatch(now, true);  // min, after a failed open left it short
    return id;
  }
  dispatch(now, true);
  return std::nullopt;
}

void Pool::handle_cancel(WaiterId waiter, TimePoint now) {
  auto it = std::find_if(waiters_.begin(), waiters_.end(),
                         [waiter](const Waiter& w) { return w.id == waiter; });
  if (it != waiters_.end()) drop_waiter(it, now, true);
  dispatch(now, true);
}

void Pool::handle_release(ConnId conn, bool healthy, TxState tx, TimePoint now, bool reset) {
  Conn* c = find(conn, State::in_use);
  if (c == nullptr) return;
  if (!healthy) {
    close_conn(conn, *c, CloseReason::unhealthy);
  } else if (tx != TxState::idle) {
    close_conn(conn, *c, CloseReason::not_idle);
  } else if (auto reason = retire_reason(*c, now)) {
    close_conn(conn, *c, *reason);
  } else if (config_.pipeline_max != 0 && live() > config_.pipeline_max && !waiters_.empty() &&
             pipelined_waiting_ == waiters_.size() && !pipeline_stuck(now) &&
             (!unpipelined_seen_ || now - last_unpipelined_ >= kPipelineSurplusQuiet)) {
    // Opened for other work (or past a stall): the trains serve these waiters.
    // (live, not counted: connections already closing are gone for this count.)
    close_conn(conn, *c, CloseReason::surplus);
  } else if (config_.reset_on_release || reset) {
    set_state(conn, *c, State::resetting);
    actions_.push_back(Reset{conn});
  } else {
    make_idle(conn, *c, now);
  }
  dispatch(now, true);
}

void Pool::handle_opened(ConnId conn, TimePoint now) {
  Conn* c = find(conn, State::opening);
  if (c == nullptr) return;
  ++totals_.opened_total;
  failing_ = false;
  retry_armed_ = false;
  c->opened_at = now;
  make_idle(conn, *c, now);
  dispatch(now, true);
}

void Pool::handle_open_failed(ConnId conn, TimePoint now) {
  Conn* c = find(conn, State::opening);
  if (c == nullptr) return;
  ++totals_.open_failed_total;
  forget(conn, *c);
  // An attempt started after the last back-off failed: wait longer. (Others
  // failing with it, started before, leave the wait as it is.)
  if (!failing_ || now >= retry_at_) {
    backoff_ = failing_ ? std::min(backoff_ * 2, config_.backoff_max)
                        : std::min(config_.backoff_first, config_.backoff_max);
    failing_ = true;
    retry_at_ = now + backoff_;
    retry_armed_ = true;
  }
  // Nothing left that could serve the waiters soon: fail them now rather than at
  // their deadline. (Idle connections and waiters never coexist after dispatch.)
  if (count(State::opening) == 0 && count(State::in_use) == 0 && count(State::resetting) == 0) {
    for (const Waiter& w : waiters_)
      reject(w.id, RejectReason::open_failed);
    waiters_.clear();
    pipelined_waiting_ = 0;
  }
  dispatch(now, false);  // no Open here: a failing backend must not spin Open/fail
}

void Pool::handle_reset_done(ConnId conn, bool ok, TimePoint now) {
  Conn* c = find(conn, State::resetting);
  if (c == nullptr) return;
  if (ok) {
    make_idle(conn, *c, now);
  } else {
    close_conn(conn, *c, CloseReason::reset_failed);
  }
  dispatch(now, true);
}

void Pool::handle_closed(ConnId conn, TimePoint now) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  if (c.state != State::closing && c.state != State::idle) return;
  ++totals_.closed_total;
  forget(conn, c);
  dispatch(now, true);
}

void Pool::handle_timeout(TimePoint now) {
  if (retry_armed_ && now >= retry_at_) retry_armed_ = false;  // dispatch below may open
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->deadline <= now) {
      reject(it->id, RejectReason::timeout);
      it = drop_waiter(it, now, false);
    } else {
      ++it;
    }
  }
  // Too old: closed whatever the count (dispatch reopens up to min).
  std::vector<ConnId> due;
  for (ConnId id : idle_) {
    if (elapsed(conns_.at(id).opened_at, config_.max_lifetime, now)) due.push_back(id);
  }
  for (ConnId id : due) {
    close_conn(id, conns_.at(id), CloseReason::max_lifetime);
  }
  // Idle too long: closed, longest idle first, while more than min are live.
  due.clear();
  for (ConnId id : idle_) {
    if (elapsed(conns_.at(id).idle_since, config_.idle_timeout, now)) due.push_back(id);
  }
  std::stable_sort(due.begin(), due.end(), [this](ConnId a, ConnId b) {
    return conns_.at(a).idle_since < conns_.at(b).idle_since;
  });
  for (ConnId id : due) {
    if (live() <= effective_min()) break;
    close_conn(id, conns_.at(id), CloseReason::idle_timeout);
  }
  dispatch(now, true);
}

bool Pool::yield_idle(TimePoint now) {
  const bool yield = !idle_.empty() && live() > effective_min();
  if (yield) {
    const ConnId id = idle_.front();
    close_conn(id, conns_.at(id), CloseReason::yielded);
  }
  dispatch(now, true);  // as after any event: `min` topped up
  return yield;
}

void Pool::reconfigure(Config config, TimePoint now) {
  config_ = config;
  // Surplus idle connections go now, least recently used first; busy ones on release.
  while (live() > config_.max && !idle_.empty()) {
    const ConnId id = idle_.front();
    close_conn(id, conns_.at(id), CloseReason::reconnect);
  }
  dispatch(now, true);
}

void Pool::reconnect(TimePoint now) {
  for (auto& [id, c] : conns_) {
    if (c.state != State::idle && c.state != State::closing) c.replace = true;
  }
  while (!idle_.empty()) {
    const ConnId id = idle_.front();
    close_conn(id, conns_.at(id), CloseReason::reconnect);
  }
  dispatch(now, true);
}

void Pool::shutdown(TimePoint /*now*/) {
  if (shutting_down_) return;
  shutting_down_ = true;
  for (const Waiter& w : waiters_) {
    reject(w.id, RejectReason::shutdown);
  }
  waiters_.clear();
  pipelined_waiting_ = 0;
  while (!idle_.empty()) {
    const ConnId id = idle_.front();
    close_conn(id, conns_.at(id), CloseReason::shutdown);
  }
}

// ---- queries -------------------------------------------------------------------

std::optional<Action> Pool::poll_action() {
  if (actions_.empty()) return std::nullopt;
  Action a = actions_.front();
  actions_.pop_front();
  return a;
}

std::optional<TimePoint> Pool::next_deadline() const {
  std::optional<TimePoint> best;
  // Called at every event: the queue's front is its earliest deadline unless
  // a reconfigure shortened acquire_timeout while it was queued.
  if (deadlines_in_order_ && !waiters_.empty()) {
    best = waiters_.front().deadline;
  } else {
    for (const Waiter& w : waiters_)
      keep_earliest(best, w.deadline);
  }
  if (retry_armed_) keep_earliest(best, retry_at_);  // the back-off ends: open for min or waiters
  // Pipelined waiters held back by pipeline_max: when patience runs out.
  // (Not while a connection is on its way, nor during a back-off: dispatch
  // opens one at a time, and a deadline already past would spin the timer.)
  if (config_.pipeline_max != 0 && pipelined_waiting_ > 0 && counted() < config_.max &&
      count(State::opening) + count(State::resetting) == 0 && !retry_armed_)
    keep_earliest(best, last_progress_ + kPipelinePatience);
  const bool idle_closable = config_.idle_timeout > Duration::zero() && live() > effective_min();
  for (ConnId id : idle_) {
    const Conn& c = conns_.at(id);
    if (config_.max_lifetime > Duration::zero()) {
      keep_earliest(best, c.opened_at + config_.max_lifetime);
    }
    // At or below min an idle connection is kept, so its idle deadline is not due.
    if (idle_closable) keep_earliest(best, c.idle_since + config_.idle_timeout);
  }
  return best;
}

Stats Pool::stats(TimePoint now) const {
  Stats s = totals_;
  s.opening = count(State::opening);
  s.idle = count(State::idle);
  s.in_use = count(State::in_use);
  s.resetting = count(State::resetting);
  s.closing = count(State::closing);
  s.waiting = waiters_.size();
  s.longest_wait = Duration::zero();
  for (const Waiter& w : waiters_)
    s.longest_wait = std::max(s.longest_wait, now - w.since);
  return s;
}

}  // namespace wirepool::pool
