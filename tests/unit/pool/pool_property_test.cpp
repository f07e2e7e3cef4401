// Property tests of pool::Pool: a simulated clock and a driver feed long random
// event sequences (300 seeds x 3000 events) while a model of what the owner knows
// (every action seen so far) checks after every step that:
//  - counted connections (opening+idle+in use+resetting+closing) never exceed max,
//    and after max is lowered they only shrink; every Open is under max and has a
//    waiter beyond the opening and resetting connections, or a min deficit to fill;
//  - no connection is granted while held (only idle connections are granted);
//  - grants go to the oldest waiter (FIFO) and take the most recently used idle
//    connection (LIFO);
//  - every waiter is granted or rejected no later than the first handle_timeout at or
//    after its deadline; timeouts never reject early; next_deadline is exactly the
//    earliest waiter / lifetime / (above min) idle-close deadline, never in the past
//    after handle_timeout(now);
//  - idle connections above min are gone after handle_timeout once idle_timeout passed;
//  - a release is answered as the rules say: unhealthy / not_idle / shutdown /
//    max_lifetime / reconnect closes, Reset in session mode, else reuse; no
//    connection past max_lifetime is granted;
//  - every action names a known connection (Open a new one) and waiter; close
//    reasons match their cause; reset_done(!ok) closes reset_failed;
//  - waiters and idle connections never coexist; after open_failed with nothing
//    opening, in use or resetting no waiter is left; after any other event enough
//    is opening for the waiters and for min (up to max);
//  - back-off after a failed open: no Open before retry_at (backoff_first, doubled
//    by each failure of an attempt started after the last back-off, up to
//    backoff_max; forgotten on success), then one Open at a time; a waiter that
//    nothing live could serve during the back-off is rejected open_failed at
//    once; next_deadline includes retry_at until it passes; a success reopens
//    for every waiter and min;
//  - shutdown: no waiters, no idle connections, no Open, later acquires rejected;
//  - events in the wrong state change nothing; stats match the model exactly;
//  - pipeline_max (half the seeds): waiters that are all pipelined past the
//    connections on their way open nothing at or above pipeline_max unless no
//    grant or cancel came for kPipelinePatience (then one at a time), and
//    next_deadline includes that patience; a release closes `surplus` exactly
//    when live connections are above pipeline_max, every waiter is pipelined,
//    the queue is not stuck and no other waiter came for kPipelineSurplusQuiet.
// Events: acquire (half of them trying try_acquire's immediate grant first), cancel, release
// (healthy or not, idle or in a transaction), opened, open_failed (with outage phases), reset_done
// (ok or not), closed (also of idle connections found dead), timeouts with clock jumps (to
// next_deadline or beyond), reconfigure (min sometimes above max), reconnect, shutdown (a quarter
// of the seeds), and bogus events.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "pool/pool.hpp"
#include "tests/unit/pool/describe.hpp"

namespace wirepool::pool {
namespace {

using namespace std::chrono_literals;

enum class MState { opening, idle, in_use, resetting, closing };

struct MConn {
  MState st = MState::opening;
  TimePoint opened_at{};
  TimePoint idle_since{};
  bool replace = false;   // existed (not idle) when reconnect() was called
  uint64_t idle_seq = 0;  // order of becoming idle: the highest is the most recently used
};

struct MWaiter {
  WaiterId id;
  TimePoint deadline;
  TimePoint since;
  bool pipelined = false;
};

enum class Ev {
  start,
  acquire,
  cancel,
  release,
  opened,
  open_failed,
  reset_done,
  closed,
  timeout,
  reconfigure,
  reconnect,
  shutdown,
  yield,
  bogus,
};

struct Step {
  Ev ev = Ev::start;
  ConnId conn = 0;
  WaiterId waiter = 0;
  bool healthy = true;
  TxState tx = TxState::idle;
  bool ok = true;
  bool pipelined = false;
  Config config{};
  int bogus_kind = 0;
};

/// How often each action and reason occurred over all seeds: proves the driver
/// reaches every transition, not just the easy ones.
struct Coverage {
  std::array<uint64_t, std::variant_size_v<Action>> actions{};
  std::array<uint64_t, 4> rejects{};  // by RejectReason
  std::array<uint64_t, 8> closes{};   // by CloseReason
  uint64_t direct_grants = 0;         // by try_acquire
  uint64_t probes = 0;                // Opens while failing (after a back-off)
  uint64_t backoff_rejects = 0;       // waiters answered from the last failure
};

#define SIM_CHECK(cond, what)                            \
  do {                                                   \
    if (!(cond)) {                                       \
      fail(std::string(what) + "  [failed: " #cond "]"); \
      return;                                            \
    }                                                    \
  } while (0)

class Sim {
 public:
  Sim(uint64_t seed, Coverage& coverage) : rng_(seed), coverage_(coverage) {
    cfg_ = random_config();
    if (seed % 4 == 3) shutdown_at_ = pick(500, 2900);
    pool_.emplace(cfg_);
    Step s;
    s.ev = Ev::start;
    absorb(s);
  }

  void run(size_t steps) {
    for (step_ = 0; step_ < steps && failure_.empty(); ++step_) {
      if (chance(0.002)) outage_ = !outage_;
      if (chance(0.5)) now_ += std::chrono::milliseconds(pick(0, 400));
      const Step s = choose();
      apply(s);
      if (failure_.empty()) absorb(s);
    }
  }

  const std::string& failure() const { return failure_; }

 private:
  // ---- randomness ------------------------------------------------------------
  size_t pick(size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  Config random_config() {
    Config c;
    c.max = pick(1, 6);
    c.min = chance(0.1) ? pick(0, 8) : pick(0, std::min<size_t>(c.max, 3));
    c.acquire_timeout =
        chance(0.05) ? Duration::zero() : Duration(std::chrono::milliseconds(pick(200, 8000)));
    c.idle_timeout =
        chance(0.25) ? Duration::zero() : Duration(std::chrono::milliseconds(pick(500, 20000)));
    c.max_lifetime =
        chance(0.25) ? Duration::zero() : Duration(std::chrono::milliseconds(pick(2000, 60000)));
    c.reset_on_release = chance(0.5);
    c.pipeline_max = chance(0.5) ? pick(1, 4) : 0;
    c.backoff_first = std::chrono::milliseconds(pick(10, 300));
    c.backoff_max = chance(0.2) ? c.backoff_first / 2 : std::chrono::milliseconds(pick(300, 6000));
    return c;
  }

  /// Sorts the model's connections by state into by_state_ (reused between steps).
  void group_by_state() {
    for (auto& ids : by_state_)
      ids.clear();
    for (const auto& [id, c] : conns_)
      by_state_[static_cast<size_t>(c.st)].push_back(id);
  }
  ConnId any_of(const std::vector<ConnId>& ids) { return ids[pick(0, ids.size() - 1)]; }

  Step choose() {
    Step s;
    if (step_ == shutdown_at_) {
      s.ev = Ev::shutdown;
      return s;
    }
    group_by_state();
    const auto& opening = by_state_[static_cast<size_t>(MState::opening)];
    const auto& idle = by_state_[static_cast<size_t>(MState::idle)];
    const auto& in_use = by_state_[static_cast<size_t>(MState::in_use)];
    const auto& resetting = by_state_[static_cast<size_t>(MState::resetting)];
    const auto& closing = by_state_[static_cast<size_t>(MState::closing)];
    const std::vector<double> weights = {
        waiters_.size() < 40 ? 6.0 : 0.0,               // acquire
        waiters_.empty() ? 0.0 : 1.0,                   // cancel
        in_use.empty() ? 0.0 : 6.0,                     // release
        opening.empty() ? 0.0 : (outage_ ? 1.0 : 5.0),  // opened
        opening.empty() ? 0.0 : (outage_ ? 5.0 : 0.4),  // open_failed
        resetting.empty() ? 0.0 : 4.0,                  // reset_done
        closing.empty() ? 0.0 : 4.0,                    // closed
        idle.empty() ? 0.0 : 0.2,                       // closed (idle found dead)
        3.0,                                            // timeout
        0.05,                                           // reconfigure
        0.05,                                           // reconnect
        idle.empty() ? 0.0 : 0.3,                       // yield
        0.2,                                            // bogus
    };
    switch (std::discrete_distribution<int>(weights.begin(), weights.end())(rng_)) {
      case 0:
        s.ev = Ev::acquire;
        s.waiter = next_waiter_++;
        s.pipelined = chance(0.6);
        break;
      case 1:
        s.ev = Ev::cancel;
        s.waiter = chance(0.9) ? waiters_[pick(0, waiters_.size() - 1)].id : next_waiter_ + 1000;
        break;
      case 2:
        s.ev = Ev::release;
        s.conn = any_of(in_use);
        s.healthy = chance(0.9);
        s.tx = chance(0.85) ? TxState::idle
                            : (chance(0.5) ? TxState::in_transaction : TxState::failed);
        break;
      case 3:
        s.ev = Ev::opened;
        s.conn = any_of(opening);
        break;
      case 4:
        s.ev = Ev::open_failed;
        s.conn = any_of(opening);
        break;
      case 5:
        s.ev = Ev::reset_done;
        s.conn = any_of(resetting);
        s.ok = chance(0.9);
        break;
      case 6:
        s.ev = Ev::closed;
        s.conn = any_of(closing);
        break;
      case 7:
        s.ev = Ev::closed;
        s.conn = any_of(idle);
        break;
      case 8: {
        s.ev = Ev::timeout;
        const auto deadline = pool_->next_deadline();
        const size_t roll = pick(0, 9);
        if (roll < 4 && deadline && *deadline > now_) {
          now_ = *deadline;
        } else if (roll < 8) {
          now_ += std::chrono::milliseconds(pick(0, 3000));
        } else {
          now_ += std::chrono::milliseconds(pick(0, 120000));
        }
        break;
      }
      case 9:
        s.ev = Ev::reconfigure;
        s.config = random_config();
        break;
      case 10:
        s.ev = Ev::reconnect;
        break;
      case 11:
        s.ev = Ev::yield;
        break;
      default:
        s.ev = Ev::bogus;
        s.bogus_kind = static_cast<int>(pick(0, 4));
        s.conn = conns_.empty() || chance(0.3)
                     ? next_unseen() + 7
                     : std::next(conns_.begin(), pick(0, conns_.size() - 1))->first;
        s.ok = chance(0.5);
        break;
    }
    return s;
  }

  ConnId next_unseen() const { return seen_.empty() ? 1 : *seen_.rbegin() + 1; }

  // ---- the step: call the pool, apply what the owner knows before any action ----
  void apply(const Step& s) {
    Pool& p = *pool_;
    before_ = snapshot();
    closes_.clear();
    resets_.clear();
    trace(s);
    switch (s.ev) {
      case Ev::start:
        break;
      case Ev::acquire:
        // Half the acquires try the immediate grant first (the server's fast
        // path), and wait only when it finds nothing.
        direct_tried_ = chance(0.5);
        direct_grant_ = direct_tried_ ? p.try_acquire(now_) : std::nullopt;
        waiters_before_ = waiters_.size();
        if (direct_grant_) break;
        p.handle_acquire(s.waiter, now_, s.pipelined);
        if (!shut_) {
          if (waiters_.empty()) last_progress_ = now_;
          waiters_.push_back({s.waiter, now_ + cfg_.acquire_timeout, now_, s.pipelined});
          if (!s.pipelined) {
            last_unpipelined_ = now_;
            unpipelined_seen_ = true;
          }
        }
        break;
      case Ev::cancel:
        p.handle_cancel(s.waiter, now_);
        if (std::erase_if(waiters_, [&](const MWaiter& w) { return w.id == s.waiter; }) > 0)
          last_progress_ = now_;
        break;
      case Ev::release: {
        surplus_expected_ =
            cfg_.pipeline_max != 0 && live() > cfg_.pipeline_max && !waiters_.empty() &&
            pipelined_waiting() == waiters_.size() && !stuck() &&
            (!unpipelined_seen_ || now_ - last_unpipelined_ >= kPipelineSurplusQuiet);
        p.handle_release(s.conn, s.healthy, s.tx, now_);
        MConn& c = conns_.at(s.conn);
        c.st = MState::idle;  // tentatively: the actions below may close, reset or grant it
        c.idle_since = now_;
        c.idle_seq = ++idle_seq_;
        break;
      }
      case Ev::opened: {
        p.handle_opened(s.conn, now_);
        MConn& c = conns_.at(s.conn);
        c.st = MState::idle;
        c.opened_at = now_;
        c.idle_since = now_;
        c.idle_seq = ++idle_seq_;
        ++opened_;
        failing_ = false;
        retry_armed_ = false;
        break;
      }
      case Ev::open_failed:
        p.handle_open_failed(s.conn, now_);
        conns_.erase(s.conn);
        ++open_failed_;
        if (!failing_ || now_ >= retry_at_) {
          backoff_ = failing_ ? std::min(backoff_ * 2, cfg_.backoff_max)
                              : std::min(cfg_.backoff_first, cfg_.backoff_max);
          failing_ = true;
          retry_at_ = now_ + backoff_;
          retry_armed_ = true;
        }
        break;
      case Ev::reset_done: {
        p.handle_reset_done(s.conn, s.ok, now_);
        MConn& c = conns_.at(s.conn);
        c.st = MState::idle;
        c.idle_since = now_;
        c.idle_seq = ++idle_seq_;
        break;
      }
      case Ev::closed:
        p.handle_closed(s.conn, now_);
        conns_.erase(s.conn);
        ++closed_;
        break;
      case Ev::timeout:
        p.handle_timeout(now_);
        if (retry_armed_ && now_ >= retry_at_) retry_armed_ = false;
        break;
      case Ev::reconfigure:
        p.reconfigure(s.config, now_);
        cfg_ = s.config;
        break;
      case Ev::reconnect:
        p.reconnect(now_);
        for (auto& [id, c] : conns_) {
          if (c.st != MState::idle && c.st != MState::closing) c.replace = true;
        }
        break;
      case Ev::shutdown:
        p.shutdown(now_);
        shut_ = true;
        break;
      case Ev::yield:
        p.yield_idle(now_);
        break;
      case Ev::bogus:
        apply_bogus(s);
        break;
    }
  }

  /// An event the pool must ignore: a connection unknown or in the wrong state.
  void apply_bogus(const Step& s) {
    Pool& p = *pool_;
    auto it = conns_.find(s.conn);
    const std::optional<MState> st =
        it == conns_.end() ? std::nullopt : std::optional<MState>(it->second.st);
    switch (s.bogus_kind) {
      case 0:
        if (st != MState::in_use) p.handle_release(s.conn, s.ok, TxState::idle, now_);
        break;
      case 1:
        if (st != MState::opening) p.handle_opened(s.conn, now_);
        break;
      case 2:
        if (st != MState::opening) p.handle_open_failed(s.conn, now_);
        break;
      case 3:
        if (st != MState::resetting) p.handle_reset_done(s.conn, s.ok, now_);
        break;
      default:
        if (st != MState::closing && st != MState::idle) p.handle_closed(s.conn, now_);
        break;
    }
  }

  // ---- the actions, checked one by one against the model ---------------------------
  void absorb(const Step& s) {
    while (auto a = pool_->poll_action()) {
      if (!recent_.empty()) recent_.back().actions.push_back(*a);
      tally(*a);
      std::visit([&](const auto& act) { on_action(s, act); }, *a);
      if (!failure_.empty()) return;
    }
    if (s.ev == Ev::acquire && direct_tried_) check_direct(s);
    if (!failure_.empty()) return;
    check_after(s);
  }

  /// try_acquire: a grant as the queue would have made it to a waiter at its
  /// head (checked after the step's Close actions of retired idle connections),
  /// and nullopt only when a waiter could not have been granted either.
  void check_direct(const Step&) {
    if (!direct_grant_) {
      SIM_CHECK(shut_ || waiters_before_ > 0 || n(MState::idle) == 0,
                "try_acquire refused while a connection was idle and nobody waited");
      return;
    }
    auto it = conns_.find(*direct_grant_);
    SIM_CHECK(it != conns_.end(), "try_acquire granted an unknown connection");
    SIM_CHECK(it->second.st == MState::idle, "try_acquire granted a connection that is not idle");
    SIM_CHECK(waiters_before_ == 0, "try_acquire jumped the queue of waiters");
    SIM_CHECK(!shut_, "try_acquire granted after shutdown");
    SIM_CHECK(!past_lifetime(it->second), "try_acquire granted a connection past max_lifetime");
    for (const auto& [id, c] : conns_) {
      SIM_CHECK(c.st != MState::idle || c.idle_seq <= it->second.idle_seq,
                "try_acquire granted an idle connection other than the most recently used");
    }
    it->second.st = MState::in_use;
    ++granted_;
    ++coverage_.direct_grants;
  }

  void tally(const Action& a) {
    ++coverage_.actions[a.index()];
    if (const auto* r = std::get_if<Reject>(&a))
      ++coverage_.rejects[static_cast<size_t>(r->reason)];
    if (const auto* c = std::get_if<Close>(&a)) ++coverage_.closes[static_cast<size_t>(c->reason)];
  }

  void on_action(const Step& s, const Open& a) {
    SIM_CHECK(!seen_.count(a.conn), "Open of a connection id already used");
    SIM_CHECK(s.ev != Ev::open_failed, "Open within handle_open_failed (Open/fail spin)");
    SIM_CHECK(!shut_, "Open after shutdown");
    SIM_CHECK(counted() < cfg_.max, "Open at or above max");
    SIM_CHECK(waiters_.size() > n(MState::opening) + n(MState::resetting) || live() < eff_min(),
              "Open beyond the waiters and min (over-opening)");
    SIM_CHECK(live() < eff_min() || !limited(),
              "Open for pipelined waiters at pipeline_max (progress, or a connection coming)");
    if (failing_) {
      SIM_CHECK(now_ >= retry_at_, "Open during the back-off after a failed open");
      SIM_CHECK(n(MState::opening) == 0, "a second Open while the backend is failing");
      ++coverage_.probes;
    }
    seen_.insert(a.conn);
    conns_[a.conn] = MConn{};
  }

  void on_action(const Step&, const Grant& a) {
    auto it = conns_.find(a.conn);
    SIM_CHECK(it != conns_.end(), "Grant of an unknown connection");
    SIM_CHECK(it->second.st == MState::idle,
              "Grant of a connection that is not idle (held twice?)");
    SIM_CHECK(!waiters_.empty() && waiters_.front().id == a.waiter, "Grant out of FIFO order");
    SIM_CHECK(!past_lifetime(it->second), "Grant of a connection past max_lifetime");
    for (const auto& [id, c] : conns_) {
      SIM_CHECK(c.st != MState::idle || c.idle_seq <= it->second.idle_seq,
                "Grant of an idle connection other than the most recently used (LIFO)");
    }
    SIM_CHECK(!shut_, "Grant after shutdown");
    it->second.st = MState::in_use;
    waiters_.pop_front();
    last_progress_ = now_;
    ++granted_;
  }

  void on_action(const Step& s, const Reject& a) {
    if (s.ev == Ev::acquire && shut_ && a.waiter == s.waiter) {
      SIM_CHECK(a.reason == RejectReason::shutdown, "acquire after shutdown not rejected shutdown");
      ++rejected_other_;
      return;
    }
    auto it = std::find_if(waiters_.begin(), waiters_.end(),
                           [&](const MWaiter& w) { return w.id == a.waiter; });
    SIM_CHECK(it != waiters_.end(), "Reject of an unknown waiter");
    switch (a.reason) {
      case RejectReason::timeout:
        SIM_CHECK(s.ev == Ev::timeout && it->deadline <= now_,
                  "Reject timeout before the deadline");
        ++rejected_timeout_;
        break;
      case RejectReason::open_failed:
        if (s.ev != Ev::open_failed) {
          SIM_CHECK(failing_ && now_ < retry_at_ && live() == 0,
                    "Reject open_failed outside handle_open_failed and the back-off");
          ++coverage_.backoff_rejects;
        }
        SIM_CHECK(n(MState::opening) + n(MState::in_use) + n(MState::resetting) == 0,
                  "Reject open_failed while a connection could still serve the waiter");
        ++rejected_other_;
        break;
      case RejectReason::shutdown:
        SIM_CHECK(s.ev == Ev::shutdown, "Reject shutdown outside shutdown()");
        ++rejected_other_;
        break;
      case RejectReason::paused:
        SIM_CHECK(false, "Reject paused is never emitted");
    }
    waiters_.erase(it);
  }

  void on_action(const Step& s, const Close& a) {
    auto it = conns_.find(a.conn);
    SIM_CHECK(it != conns_.end(), "Close of an unknown connection");
    MConn& c = it->second;
    SIM_CHECK(c.st == MState::idle, "Close of a connection in use, opening, resetting or closing");
    const bool is_subject = a.conn == s.conn;
    switch (a.reason) {
      case CloseReason::unhealthy:
        SIM_CHECK(s.ev == Ev::release && is_subject && !s.healthy, "Close unhealthy without cause");
        break;
      case CloseReason::not_idle:
        SIM_CHECK(s.ev == Ev::release && is_subject && s.tx != TxState::idle,
                  "Close not_idle without cause");
        break;
      case CloseReason::max_lifetime:
        SIM_CHECK(past_lifetime(c), "Close max_lifetime of a young connection");
        break;
      case CloseReason::idle_timeout:
        SIM_CHECK(s.ev == Ev::timeout && cfg_.idle_timeout > Duration::zero() &&
                      now_ - c.idle_since >= cfg_.idle_timeout,
                  "Close idle_timeout of a connection not idle long enough");
        SIM_CHECK(live() > eff_min(), "Close idle_timeout at or below min");
        break;
      case CloseReason::reset_failed:
        SIM_CHECK(s.ev == Ev::reset_done && is_subject && !s.ok,
                  "Close reset_failed without cause");
        break;
      case CloseReason::shutdown:
        SIM_CHECK(shut_, "Close shutdown before shutdown()");
        break;
      case CloseReason::reconnect:
        SIM_CHECK(s.ev == Ev::reconnect || c.replace || live() > cfg_.max,
                  "Close reconnect of a connection neither marked nor surplus");
        break;
      case CloseReason::yielded:
        SIM_CHECK(s.ev == Ev::yield && live() > eff_min(), "Close yielded without cause");
        break;
      case CloseReason::surplus:
        SIM_CHECK(s.ev == Ev::release && is_subject && surplus_expected_,
                  "Close surplus without cause");
        break;
    }
    c.st = MState::closing;
    closes_[a.conn] = a.reason;
  }

  void on_action(const Step& s, const Reset& a) {
    auto it = conns_.find(a.conn);
    SIM_CHECK(it != conns_.end(), "Reset of an unknown connection");
    SIM_CHECK(s.ev == Ev::release && a.conn == s.conn && cfg_.reset_on_release,
              "Reset other than on release in session mode");
    SIM_CHECK(it->second.st == MState::idle, "Reset of a connection not just released");
    it->second.st = MState::resetting;
    resets_.insert(a.conn);
  }

  // ---- invariants after the step ----------------------------------------------
  void check_after(const Step& s) {
    const size_t now_counted = counted();
    SIM_CHECK(now_counted <= cfg_.max || now_counted <= before_.counted,
              "counted connections above max grew");
    if (!waiters_.empty()) {
      SIM_CHECK(n(MState::idle) == 0, "a waiter waits while a connection is idle");
    }
    // An ignored (bogus) event changes nothing, so the state after open_failed may stand.
    if (!shut_ && s.ev != Ev::open_failed && s.ev != Ev::bogus && !failing_) {
      SIM_CHECK(waiters_.size() <= n(MState::opening) + n(MState::resetting) ||
                    now_counted >= cfg_.max || limited(),
                "waiters left without a connection opening for them (under max)");
      SIM_CHECK(live() >= eff_min() || now_counted >= cfg_.max, "min not maintained (under max)");
    }
    if (!shut_ && failing_ && now_ < retry_at_ && live() == 0 && s.ev != Ev::bogus) {
      SIM_CHECK(waiters_.empty(), "a waiter kept during the back-off with nothing to serve it");
    }
    if (!shut_ && failing_ && now_ >= retry_at_ && s.ev != Ev::open_failed && s.ev != Ev::bogus &&
        now_counted < cfg_.max &&
        ((waiters_.size() > n(MState::opening) + n(MState::resetting) && !limited()) ||
         live() < eff_min())) {
      SIM_CHECK(n(MState::opening) >= 1, "back-off over, and no attempt for the waiters or min");
    }
    if (s.ev == Ev::open_failed &&
        n(MState::opening) + n(MState::in_use) + n(MState::resetting) == 0) {
      SIM_CHECK(waiters_.empty(), "open failed with nothing left to wait for, waiters kept");
    }
    if (shut_) {
      SIM_CHECK(waiters_.empty(), "waiters after shutdown");
      SIM_CHECK(n(MState::idle) == 0, "idle connections after shutdown");
    }
    if (s.ev == Ev::release) check_release(s);
    if (s.ev == Ev::reset_done && !s.ok) {
      SIM_CHECK(closes_.count(s.conn) && closes_[s.conn] == CloseReason::reset_failed,
                "failed reset not closed reset_failed");
    }
    if (s.ev == Ev::bogus) {
      SIM_CHECK(snapshot() == before_, "an ignored event changed the pool");
    }
    check_deadlines(s);
    check_stats();
  }

  void check_release(const Step& s) {
    const MConn& c = conns_.at(s.conn);
    std::optional<CloseReason> expected;
    if (!s.healthy) {
      expected = CloseReason::unhealthy;
    } else if (s.tx != TxState::idle) {
      expected = CloseReason::not_idle;
    } else if (shut_) {
      expected = CloseReason::shutdown;
    } else if (past_lifetime(c)) {
      expected = CloseReason::max_lifetime;
    } else if (c.replace || before_.live > cfg_.max) {
      expected = CloseReason::reconnect;
    } else if (surplus_expected_) {
      expected = CloseReason::surplus;
    }
    if (expected) {
      SIM_CHECK(closes_.count(s.conn), "released connection not closed (" +
                                           std::string(to_string(*expected)) + " expected)");
      SIM_CHECK(closes_[s.conn] == *expected,
                "released connection closed for " + std::string(to_string(closes_[s.conn])) +
                    ", expected " + std::string(to_string(*expected)));
    } else if (cfg_.reset_on_release) {
      SIM_CHECK(resets_.count(s.conn) && c.st == MState::resetting,
                "session-mode release without Reset");
    } else {
      SIM_CHECK(c.st == MState::idle || c.st == MState::in_use,
                "healthy release neither reused nor kept idle");
    }
  }

  void check_deadlines(const Step& s) {
    std::optional<TimePoint> expected;
    auto keep = [&](TimePoint t) {
      if (!expected || t < *expected) expected = t;
    };
    for (const MWaiter& w : waiters_)
      keep(w.deadline);
    if (retry_armed_) keep(retry_at_);
    if (cfg_.pipeline_max != 0 && pipelined_waiting() > 0 && counted() < cfg_.max &&
        n(MState::opening) + n(MState::resetting) == 0 && !retry_armed_) {
      keep(last_progress_ + kPipelinePatience);
    }
    const bool idle_closable = cfg_.idle_timeout > Duration::zero() && live() > eff_min();
    for (const auto& [id, c] : conns_) {
      if (c.st != MState::idle) continue;
      if (cfg_.max_lifetime > Duration::zero()) keep(c.opened_at + cfg_.max_lifetime);
      if (idle_closable) keep(c.idle_since + cfg_.idle_timeout);
    }
    const std::optional<TimePoint> got = pool_->next_deadline();
    SIM_CHECK(got == expected, "next_deadline differs from the earliest waiter/idle deadline");
    if (s.ev == Ev::timeout) {
      for (const MWaiter& w : waiters_) {
        SIM_CHECK(w.deadline > now_, "waiter neither granted nor rejected by its deadline");
      }
      for (const auto& [id, c] : conns_) {
        if (c.st != MState::idle) continue;
        SIM_CHECK(!past_lifetime(c), "idle connection past max_lifetime kept after timeout");
        if (idle_closable) {
          SIM_CHECK(now_ - c.idle_since < cfg_.idle_timeout,
                    "idle connection above min kept after idle_timeout");
        }
      }
      SIM_CHECK(!got || *got > now_, "next_deadline in the past after handle_timeout(now)");
    }
  }

  void check_stats() {
    const Stats st = pool_->stats(now_);
    SIM_CHECK(st.opening == n(MState::opening), "stats.opening");
    SIM_CHECK(st.idle == n(MState::idle), "stats.idle");
    SIM_CHECK(st.in_use == n(MState::in_use), "stats.in_use");
    SIM_CHECK(st.resetting == n(MState::resetting), "stats.resetting");
    SIM_CHECK(st.closing == n(MState::closing), "stats.closing");
    SIM_CHECK(st.waiting == waiters_.size(), "stats.waiting");
    SIM_CHECK(st.granted_total == granted_, "stats.granted_total");
    SIM_CHECK(st.rejected_timeout_total == rejected_timeout_, "stats.rejected_timeout_total");
    SIM_CHECK(st.rejected_other_total == rejected_other_, "stats.rejected_other_total");
    SIM_CHECK(st.opened_total == opened_, "stats.opened_total");
    SIM_CHECK(st.open_failed_total == open_failed_, "stats.open_failed_total");
    SIM_CHECK(st.closed_total == closed_, "stats.closed_total");
    Duration longest{};
    for (const MWaiter& w : waiters_)
      longest = std::max(longest, now_ - w.since);
    SIM_CHECK(st.longest_wait == longest, "stats.longest_wait");
    SIM_CHECK(pool_->is_shut_down() == shut_, "is_shut_down");
  }

  // ---- model helpers -------------------------------------------------------------
  struct Snapshot {
    size_t live = 0, counted = 0;
    Stats stats;
    std::optional<TimePoint> deadline;
    bool operator==(const Snapshot& o) const {
      return live == o.live && counted == o.counted && deadline == o.deadline &&
             stats.opening == o.stats.opening && stats.idle == o.stats.idle &&
             stats.in_use == o.stats.in_use && stats.resetting == o.stats.resetting &&
             stats.closing == o.stats.closing && stats.waiting == o.stats.waiting &&
             stats.opened_total == o.stats.opened_total &&
             stats.closed_total == o.stats.closed_total &&
             stats.open_failed_total == o.stats.open_failed_total;
    }
  };
  Snapshot snapshot() const {
    return {live(), counted(), pool_->stats(now_), pool_->next_deadline()};
  }

  size_t n(MState st) const {
    return static_cast<size_t>(std::count_if(conns_.begin(), conns_.end(),
                                             [st](const auto& kv) { return kv.second.st == st; }));
  }
  size_t live() const { return conns_.size() - n(MState::closing); }
  size_t counted() const { return conns_.size(); }
  size_t eff_min() const { return std::min(cfg_.min, cfg_.max); }
  size_t pipelined_waiting() const {
    return static_cast<size_t>(std::count_if(waiters_.begin(), waiters_.end(),
                                             [](const MWaiter& w) { return w.pipelined; }));
  }
  bool stuck() const {
    return pipelined_waiting() > 0 && now_ - last_progress_ >= kPipelinePatience;
  }
  /// The spec of pipeline_max: no Open is due for the waiters now.
  bool limited() const {
    if (cfg_.pipeline_max == 0 || waiters_.empty()) return false;
    const size_t coming = n(MState::opening) + n(MState::resetting);
    for (size_t i = coming; i < waiters_.size(); ++i)
      if (!waiters_[i].pipelined) return false;
    if (counted() < cfg_.pipeline_max) return false;
    return !(coming == 0 && stuck());
  }
  bool past_lifetime(const MConn& c) const {
    return cfg_.max_lifetime > Duration::zero() && now_ - c.opened_at >= cfg_.max_lifetime;
  }

  // ---- failure reporting -----------------------------------------------------------
  struct Traced {
    size_t index;
    TimePoint at;
    Step step;
    std::vector<Action> actions;
  };

  void trace(const Step& s) {
    recent_.push_back(Traced{step_, now_, s, {}});
    if (recent_.size() > 25) recent_.pop_front();
  }

  static std::string format(const Traced& t) {
    static constexpr const char* names[] = {
        "start",  "acquire", "cancel",      "release",   "opened",   "open_failed", "reset_done",
        "closed", "timeout", "reconfigure", "reconnect", "shutdown", "yield",       "bogus"};
    const Step& s = t.step;
    std::ostringstream o;
    o << "#" << t.index << " t=" << std::chrono::duration<double>(t.at - TimePoint{}).count()
      << "s " << names[static_cast<int>(s.ev)];
    if (s.conn) o << " c" << s.conn;
    if (s.waiter) o << " w" << s.waiter << (s.pipelined ? "p" : "");
    if (s.ev == Ev::release) o << " healthy=" << s.healthy << " tx=" << static_cast<int>(s.tx);
    if (s.ev == Ev::reset_done) o << " ok=" << s.ok;
    if (s.ev == Ev::bogus) o << " kind=" << s.bogus_kind;
    if (s.ev == Ev::reconfigure) {
      o << " min=" << s.config.min << " max=" << s.config.max
        << " reset=" << s.config.reset_on_release;
    }
    o << "  ->";
    for (const Action& a : t.actions)
      o << " " << test::describe(a) << ";";
    return o.str();
  }

  void fail(const std::string& what) {
    std::ostringstream o;
    o << what << "\nconfig: min=" << cfg_.min << " max=" << cfg_.max
      << " acquire_timeout=" << std::chrono::duration<double>(cfg_.acquire_timeout).count()
      << "s idle_timeout=" << std::chrono::duration<double>(cfg_.idle_timeout).count()
      << "s max_lifetime=" << std::chrono::duration<double>(cfg_.max_lifetime).count()
      << "s reset=" << cfg_.reset_on_release << " pipeline_max=" << cfg_.pipeline_max
      << " shut=" << shut_ << "\nrecent steps:\n";
    for (const Traced& t : recent_)
      o << "  " << format(t) << "\n";
    failure_ = o.str();
  }

  std::mt19937_64 rng_;
  Coverage& coverage_;
  Config cfg_;
  std::optional<Pool> pool_;
  TimePoint now_ = TimePoint{} + 1h;
  size_t step_ = 0;
  size_t shutdown_at_ = SIZE_MAX;
  bool outage_ = false;
  bool shut_ = false;

  std::map<ConnId, MConn> conns_;
  std::array<std::vector<ConnId>, 5> by_state_;
  std::set<ConnId> seen_;
  std::deque<MWaiter> waiters_;
  WaiterId next_waiter_ = 1;
  uint64_t idle_seq_ = 0;
  uint64_t granted_ = 0, rejected_timeout_ = 0, rejected_other_ = 0;
  bool direct_tried_ = false;           // this acquire called try_acquire first
  std::optional<ConnId> direct_grant_;  // and what it answered
  size_t waiters_before_ = 0;           // waiters before this acquire

  uint64_t opened_ = 0, open_failed_ = 0, closed_ = 0;
  TimePoint last_progress_{};     // a waiter granted or cancelled, or the queue began
  TimePoint last_unpipelined_{};  // a waiter that is not pipelined came
  bool unpipelined_seen_ = false;
  bool surplus_expected_ = false;  // this release should close `surplus`
  bool failing_ = false;           // the back-off, as the pool should keep it
  Duration backoff_{};
  TimePoint retry_at_{};
  bool retry_armed_ = false;

  Snapshot before_;
  std::map<ConnId, CloseReason> closes_;  // in this step
  std::set<ConnId> resets_;               // in this step
  std::deque<Traced> recent_;
  std::string failure_;
};

#undef SIM_CHECK

TEST(PoolProperty, InvariantsHoldOnLongRandomEventSequences) {
  constexpr uint64_t kSeeds = 300;
  constexpr size_t kSteps = 3000;
  Coverage coverage;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    Sim sim(seed, coverage);
    sim.run(kSteps);
    ASSERT_TRUE(sim.failure().empty()) << "seed " << seed << ": " << sim.failure();
  }
  // The driver must exercise the pool, not just time out every waiter.
  const size_t grant = 1;  // Action index of Grant
  EXPECT_GT(coverage.actions[grant], kSeeds * kSteps / 20);
  EXPECT_GT(coverage.direct_grants, kSeeds * kSteps / 50);
  EXPECT_GT(coverage.probes, kSeeds);
  EXPECT_GT(coverage.backoff_rejects, kSeeds);
  for (size_t i = 0; i < coverage.actions.size(); ++i) {
    EXPECT_GT(coverage.actions[i], 0u) << "action index " << i << " never emitted";
  }
  for (RejectReason r :
       {RejectReason::timeout, RejectReason::open_failed, RejectReason::shutdown}) {
    EXPECT_GT(coverage.rejects[static_cast<size_t>(r)], 0u) << to_string(r) << " never emitted";
  }
  for (size_t i = 0; i < coverage.closes.size(); ++i) {
    EXPECT_GT(coverage.closes[i], 0u) << to_string(static_cast<CloseReason>(i)) << " never emitted";
  }
}

}  // namespace
}  // namespace wirepool::pool
