// ---- The pipeline (docs/protocol-postgres.md, "Pipelining"). A backend whose
// running batch leaves it idle takes other clients' batches behind it when no
// backend is idle: PostgreSQL then reads several transactions with one wake-up
// instead of one each. pool/pipeline.hpp decides; RelayPath, one per event
// loop, carries its decisions out. All of a train's clients are on the loop of
// the session that holds its backend.

#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <string>
#include <variant>

#include "server/pg/client.hpp"
#include "server/pg/client_detail.hpp"
#include "server/pg_relay.hpp"
#include "server/pg_relay_detail.hpp"

namespace wirepool::server {

namespace asio = boost::asio;
using relay_detail::send_rest;

namespace {
/// At most this many idle States per event loop (each about 9 KiB with
/// its read buffer).
constexpr size_t kRelayStateCache = 64;
/// The statements' and buffers' capacity a cached State may keep.
constexpr size_t kRelayKeepBytes = 16 * 1024;
}  // namespace

bool PgRelay::train_wait_begin() {
  if (!c_.session_->pool().config().pool.pipeline) return false;
  RelayPath::of(c_.loop_).wait_begin(c_);
  return state_->plain;
}

void PgRelay::train_wait_end() {
  RelayPath::of(c_.loop_).wait_end(c_);
}

bool PgRelay::send_behind(Backend& b, bool known) {
  State& R = *state_;
  if (!start(&b, known)) return false;
  // Sent now, behind what is already on the way; a send that would block
  // leaves the rest for this client's turn, and nobody may follow it.
  // (A broken connection is found by the batch ahead.)
  sent_behind(b, send_rest(R.fd, R.to_server, R.sent) == 1);
  return true;
}

void PgRelay::sent_behind(Backend& b, bool sent_all) {
  state_->opened = false;
  RelayPath::of(c_.loop_).joined(c_, b, sent_all);
  c_.session_->pool().metrics().pipelined.fetch_add(1, std::memory_order_relaxed);
}
bool PgRelay::join() {
  if (!state_->plain) return false;
  return RelayPath::of(c_.loop_).join(c_);
}

void PgRelay::post_abandoned(std::shared_ptr<PgClient> f, std::string why) {
  auto& io = f->loop_.io;
  asio::post(io, [f = std::move(f), why = std::move(why)] { f->relay_.abandoned(why); });
}

void PgRelay::abandoned(const std::string& why) {
  c_.session_->unqueued();
  c_.session_->statement_end();
  if (!state_->tracker.failed()) c_.send_error("08006", "server connection lost: " + why);
  pg::Encoder(c_.out_).ready_for_query('I');
  c_.relay_loop(PgClient::LoopEntry::fresh);
}

void PgRelay::give_back() {
  if (state_) RelayPath::of(c_.loop_).give_state(std::move(state_));
}

pool::PoolView RelayPath::view(DatabasePool& pool) {
  pool::PoolView v;
  v.pipeline = pool.config().pool.pipeline;
  v.paused_until = pool.pipeline_paused_until();
  v.clients_waiting = pool.metrics().clients_waiting.load(std::memory_order_relaxed) != 0;
  return v;
}

pool::BatchId RelayPath::id_of(const PgClient& c) {
  return c.relay_.state().batch;
}

std::unique_ptr<PgRelay::State> RelayPath::take_state() {
  std::unique_ptr<PgRelay::State> s;
  if (states_.empty()) {
    s = std::make_unique<PgRelay::State>();
  } else {
    s = std::move(states_.back());
    states_.pop_back();
  }
  s->batch = ++next_batch_;
  return s;
}

void RelayPath::give_state(std::unique_ptr<PgRelay::State> s) {
  if (states_.size() >= kRelayStateCache) return;  // freed here
  s->from_server.consume(s->from_server.size());
  if (s->from_server.capacity() > kReadChunk) s->from_server.release();
  if (s->to_server.capacity() > kRelayKeepBytes) std::string().swap(s->to_server);
  if (s->copy.capacity() > kRelayKeepBytes) std::string().swap(s->copy);
  s->parses.clear();
  s->tracker.clear();
  states_.push_back(std::move(s));
}

void RelayPath::track(Backend& b) {
  if (b.train == this) return;
  b.train = this;
  backends_[b.lease] = &b;
}

void RelayPath::turn_began(PgClient& head, Backend& b) {
  const PgRelay::State& R = head.relay_.state();
  DatabasePool& pool = head.session_->pool();
  const bool opened =
      pipeline_.handle_turn_began(b.lease, key(pool), R.shape, b.dirty, R.turn_started);
  track(b);
  if (opened) pull(head, b);
}

bool RelayPath::join(PgClient& c) {
  DatabasePool& pool = c.session_->pool();
  pipeline_.join_order(key(pool), view(pool), now(), trains_scratch_);
  for (pool::TrainId t : trains_scratch_) {
    Backend* const* tracked = backends_.find(t);
    if (!tracked) continue;  // not opened on this loop (every train opened here is tracked)
    Backend& b = **tracked;
    if (b.cancelling || b.relay_resending || !c.session_->settings_match(b)) continue;
    if (!c.relay_.send_behind(b)) return false;
    c.session_->queued();
    return true;
  }
  return false;
}

void RelayPath::joined(PgClient& c, Backend& b, bool sent_all) {
  const pool::BatchId id = id_of(c);
  pipeline_.handle_joined(b.lease, id, c.relay_.state().shape, sent_all);
  followers_[id] = c.shared_from_this();
}

void RelayPath::pull(PgClient& head, Backend& b) {
  if (!pipeline_.has_waiters()) return;  // the usual case: no view, no clock read
  DatabasePool& pool = head.session_->pool();
  const pool::TimePoint at = now();
  size_t left = 0;  // waiters that cannot go behind this batch: they keep their place
  for (;;) {
    // The places named are taken together and sent in one write: PostgreSQL
    // then reads them with one wake-up. (A taken one may leave the pool's
    // queue empty, and the train's limit higher, never lower.)
    pipeline_.pull_order(b.lease, view(pool), at, left, batches_scratch_);
    if (batches_scratch_.empty()) return;
    for (pool::BatchId w : batches_scratch_) {
      if (b.cancelling || b.relay_resending) break;
      const std::weak_ptr<PgClient>* waiter = waiters_.find(w);
      std::shared_ptr<PgClient> c = waiter ? waiter->lock() : nullptr;
      if (!c) {
        pipeline_.handle_wait_end(w);
        waiters_.erase(w);
        continue;
      }
      if (!c->relay_.has_state() || !c->relay_.state().plain || !c->session_->settings_match(b) ||
          !c->relay_.known_on(b)) {
        ++left;
        continue;
      }
      pipeline_.handle_wait_end(w);
      waiters_.erase(w);
      if (!c->session_->leave_wait_for_train()) continue;  // granted meanwhile, or cancelled
      if (!c->relay_.start(&b, true)) {                    // its statements were just checked
        send_taken(b);
        // Not relayable after all (the backend's socket): back to the pool's queue.
        const bool pipelined = c->relay_.train_wait_begin();
        c->session_->wait_backend(
            c->loop_.io.get_executor(),
            [c](std::variant<Backend*, AcquireError> got) { c->on_granted(std::move(got)); },
            pipelined);
        return;
      }
      taking_.push_back(std::move(c));
    }
    send_taken(b);
    if (b.cancelling || b.relay_resending || !pipeline_.has_room(b.lease, view(pool))) return;
  }
}

void RelayPath::send_taken(Backend& b) {
  if (taking_.empty()) return;
  outgoing_.clear();
  for (const auto& c : taking_) {
    PgRelay::State& R = c->relay_.state();
    outgoing_.push_back({&R.to_server, &R.sent});
  }
  // What a full socket leaves is sent in each batch's own turn, so nobody may
  // follow the first one not sent whole. (A broken connection is found by the
  // batch ahead.)
  relay_detail::send_rest_all(taking_.front()->relay_.state().fd, outgoing_, iov_);
  for (auto& c : taking_) {
    const PgRelay::State& R = c->relay_.state();
    c->relay_.sent_behind(b, R.sent == R.to_server.size());
  }
  taking_.clear();
}

void RelayPath::wait_begin(PgClient& c) {
  const pool::BatchId id = id_of(c);
  pipeline_.handle_wait_begin(id, key(c.session_->pool()));
  waiters_[id] = c.weak_from_this();
}

void RelayPath::wait_end(PgClient& c) {
  if (waiters_.empty() || !c.relay_.has_state()) return;
  const pool::BatchId id = id_of(c);
  if (!waiters_.erase(id)) return;
  pipeline_.handle_wait_end(id);
}

std::shared_ptr<PgClient> RelayPath::turn_end(PgClient& head, Backend& b, const pool::TurnReport& r,
                                              pool::TimePoint now, std::string_view why) {
  DatabasePool& pool = head.session_->pool();
  const auto next = pipeline_.handle_turn_end(b.lease, key(pool), r, view(pool), now);
  act(&pool, why);
  if (!next) return nullptr;
  std::shared_ptr<PgClient> c = std::move(*followers_.find(*next));
  followers_.erase(*next);
  return c;
}

bool RelayPath::has_followers(const Backend& b) const {
  return b.train == this && pipeline_.followers(b.lease) != 0;
}

pool::HeadFlush RelayPath::head_flush(const Backend& b, DatabasePool& pool, bool reading_ahead,
                                      size_t buffered) const {
  return pipeline_.head_flush(b.lease, view(pool), reading_ahead, buffered);
}

bool RelayPath::may_cancel(const Backend& b) const {
  return pipeline_.may_cancel(b.lease);
}

bool RelayPath::release(Backend& b, std::string_view why) {
  const bool clean = pipeline_.handle_released(b.lease);
  act(nullptr, why);
  backends_.erase(b.lease);
  b.train = nullptr;
  return clean;
}

void RelayPath::act(DatabasePool* pool, std::string_view why) {
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  if (!pipeline_.has_actions()) return;
  while (auto a = pipeline_.poll_action()) {
    if (auto* f = std::get_if<pool::Fail>(&*a)) {
      std::shared_ptr<PgClient>* follower = followers_.find(f->batch);
      if (!follower) continue;
      auto c = std::move(*follower);
      followers_.erase(f->batch);
      PgRelay::post_abandoned(std::move(c), std::string(why));
    } else if (auto* p = std::get_if<pool::Pause>(&*a)) {
      if (!pool) continue;
      pool->pause_pipeline(p->until);
      spdlog::info(
          "database {}: pipelining paused for {} s: a batch took {} ms while others ran",
          pool->config().name,
          std::chrono::duration_cast<std::chrono::seconds>(pipeline_.limits().slow_pause).count(),
          duration_cast<milliseconds>(p->took).count());
    } else if (auto* slow = std::get_if<pool::ShapeSlow>(&*a)) {
      if (!pool) continue;
      spdlog::info(
          "database {}: a batch took {} ms while others ran: no batch is sent behind its "
          "statements while they stay slow",
          pool->config().name, duration_cast<milliseconds>(slow->took).count());
    }
  }
}

}  // namespace wirepool::server
