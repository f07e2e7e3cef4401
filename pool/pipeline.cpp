#include "pool/pipeline.hpp"

#include <algorithm>
#include <functional>

namespace wirepool::pool {

using Micros = std::chrono::microseconds;

Pipeline::Pipeline(PipelineLimits limits) : limits_(limits) {}

uint64_t Pipeline::shape_add(uint64_t shape, std::string_view text) {
  return (shape ^ std::hash<std::string_view>{}(text)) * 0x100000001B3ULL;
}

uint64_t Pipeline::shape_key(PoolKey pool, uint64_t shape) {
  return shape ^ (pool * 0x9E3779B97F4A7C15ULL);
}

uint32_t Pipeline::batch_limit(const PoolView& view) const {
  return view.clients_waiting ? limits_.busy_train_batches : limits_.max_train_batches;
}

bool Pipeline::room(const Train& tr, const PoolView& view, std::optional<TimePoint> now) const {
  return tr.open && tr.followers.size() < limits_.max_followers &&
         (!now || *now - tr.since <= limits_.join_within) &&
         tr.batches + tr.followers.size() + 1 < batch_limit(view);
}

bool Pipeline::has_room(TrainId t, const PoolView& view) const {
  const Train* tr = trains_.find(t);
  return tr && room(*tr, view, std::nullopt);
}

void Pipeline::close(TrainId t, Train& tr) {
  if (!tr.open) return;
  tr.open = false;
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (*it == t) {
      *it = open_.back();
      open_.pop_back();
      break;
    }
  }
}

void Pipeline::fail_followers(TrainId t, Train& tr) {
  for (const auto& f : tr.followers)
    actions_.push_back(Fail{f.batch, t});
  tr.followers.clear();
}

bool Pipeline::handle_turn_began(TrainId t, PoolKey pool, uint64_t shape, bool dirty,
                                 TimePoint turn_started) {
  Train& tr = trains_[t];
  tr.pool = pool;
  if (tr.open || dirty) return false;
  if (shape_slow(pool, shape)) return false;
  // The batch count goes on from the pool's grant: a train closed and opened
  // again by its last batch does not start over, or the pool's queue would
  // wait behind it for good.
  if (tr.followers.empty()) tr.since = turn_started;
  if (tr.batches >= limits_.max_train_batches) return false;
  tr.open = true;
  open_.push_back(t);
  return true;
}

void Pipeline::join_order(PoolKey pool, const PoolView& view, TimePoint now,
                          std::vector<TrainId>& out) const {
  out.clear();
  if (!view.pipeline || now < view.paused_until || open_.empty()) return;
  for (const auto& w : waiters_)
    if (w.pool == pool) return;  // queued before this one: they go first
  // Fewest followers first, in opening order among equals: one pass per
  // follower count (there are a few).
  size_t most = 0;
  for (TrainId t : open_) {
    const Train& tr = *trains_.find(t);
    if (tr.pool != pool) continue;
    most = std::max(most, tr.followers.size());
    if (tr.followers.empty() && room(tr, view, now)) out.push_back(t);
  }
  for (size_t n = 1; n <= most; ++n) {
    for (TrainId t : open_) {
      const Train& tr = *trains_.find(t);
      if (tr.pool == pool && tr.followers.size() == n && room(tr, view, now)) out.push_back(t);
    }
  }
}

void Pipeline::pull_order(TrainId t, const PoolView& view, TimePoint now, size_t skip,
                          std::vector<BatchId>& out) const {
  out.clear();
  const Train* tr = trains_.find(t);
  if (!tr || waiters_.empty() || now < view.paused_until || !room(*tr, view, std::nullopt)) return;
  // A queue of hundreds is not copied for the few places a train has.
  const size_t taken = tr->batches + tr->followers.size() + 1;
  const size_t places = std::min(limits_.max_followers - tr->followers.size(),
                                 static_cast<size_t>(batch_limit(view)) - taken);
  for (const auto& w : waiters_) {
    if (w.pool != tr->pool) continue;
    if (skip > 0) {
      --skip;
      continue;
    }
    out.push_back(w.batch);
    if (out.size() == places) return;
  }
}

void Pipeline::handle_joined(TrainId t, BatchId b, uint64_t shape, bool sent_all) {
  Train& tr = trains_[t];
  // A send that would block leaves the rest for the batch's own turn:
  // nobody may follow it.
  if (!sent_all) close(t, tr);
  tr.followers.push_back({b, shape});
}

std::optional<BatchId> Pipeline::handle_turn_end(TrainId t, PoolKey pool, const TurnReport& r,
                                                 const PoolView& view, TimePoint now) {
  Train* const train = trains_.find(t);
  std::optional<Follower> next;
  if (train) {
    Train& tr = *train;
    if (!tr.followers.empty()) {
      if (r.clean) {
        next = tr.followers.front();
        tr.followers.erase(tr.followers.begin());
      } else {
        fail_followers(t, tr);
      }
    }
    if (!next) close(t, tr);
  }
  if (!next && !r.answered) return std::nullopt;

  const auto took = now - r.turn_started;
  const bool others_ran = r.progress >= limits_.slow_progress;
  if (r.plain && view.pipeline &&
      note_turn(pool, r.shape, std::chrono::duration_cast<Micros>(took), others_ran)) {
    actions_.push_back(ShapeSlow{pool, took});
  }
  if (took > limits_.slow_batch && view.pipeline && others_ran && now >= view.paused_until) {
    actions_.push_back(Pause{pool, now + limits_.slow_pause, took});
  }
  if (!next) return std::nullopt;
  Train& tr = *train;  // no train was added or erased since the lookup
  ++tr.batches;
  tr.since = now;
  if (tr.open && shape_slow(pool, next->shape)) close(t, tr);
  return next->batch;
}

bool Pipeline::handle_released(TrainId t) {
  Train* tr = trains_.find(t);
  if (!tr) return true;
  close(t, *tr);
  const bool clean = tr->followers.empty();
  fail_followers(t, *tr);
  trains_.erase(t);
  return clean;
}

void Pipeline::handle_wait_begin(BatchId b, PoolKey pool) {
  waiters_.push_back({b, pool});
}

void Pipeline::handle_wait_end(BatchId b) {
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (it->batch == b) {
      waiters_.erase(it);
      return;
    }
  }
}

bool Pipeline::waiting(BatchId b) const {
  return std::any_of(waiters_.begin(), waiters_.end(),
                     [b](const Waiter& w) { return w.batch == b; });
}

size_t Pipeline::followers(TrainId t) const {
  const Train* tr = trains_.find(t);
  return tr ? tr->followers.size() : 0;
}

bool Pipeline::is_open(TrainId t) const {
  const Train* tr = trains_.find(t);
  return tr && tr->open;
}

HeadFlush Pipeline::head_flush(TrainId t, const PoolView& view, bool reading_ahead,
                               size_t buffered) const {
  const bool others_behind = followers(t) != 0;
  if (reading_ahead && buffered >= limits_.max_read_ahead && others_behind) {
    return HeadFlush::disconnect;
  }
  if (reading_ahead) return HeadFlush::wait;
  if (others_behind) return HeadFlush::with_patience;
  if (!view.pipeline) return HeadFlush::wait;
  return view.clients_waiting ? HeadFlush::with_patience : HeadFlush::watch;
}

bool Pipeline::shape_slow(PoolKey pool, uint64_t shape) const {
  if (slow_.empty()) return false;
  auto it = slow_.find(shape_key(pool, shape));
  return it != slow_.end() && it->second > limits_.slow_statement;
}

bool Pipeline::note_turn(PoolKey pool, uint64_t shape, Micros took, bool others_ran) {
  const bool slow_turn = took > limits_.slow_statement;
  if (slow_.empty() && !slow_turn) return false;
  const uint64_t key = shape_key(pool, shape);
  auto it = slow_.find(key);
  if (it == slow_.end()) {
    if (!slow_turn || !others_ran) return false;
    if (slow_.size() >= limits_.slow_shapes) slow_.clear();  // rare: they come back
    it = slow_.emplace(key, Micros(0)).first;
  } else if (slow_turn && !others_ran) {
    return false;  // everything stalled: says nothing of the statement
  }
  const bool was = it->second > limits_.slow_statement;
  it->second += (took - it->second) / 16;
  if (it->second < limits_.fast_again) {
    slow_.erase(it);
    return false;
  }
  return !was && it->second > limits_.slow_statement;
}

std::optional<PipelineAction> Pipeline::poll_action() {
  if (actions_.empty()) return std::nullopt;
  PipelineAction a = std::move(actions_.front());
  actions_.pop_front();
  return a;
}

}  // namespace wirepool::pool
