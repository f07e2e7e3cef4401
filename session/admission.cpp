#include "session/admission.hpp"

#include <algorithm>
#include <cstring>

namespace wirepool::server {

AddressKey address_key(const boost::asio::ip::address& a) {
  AddressKey k{};
  if (a.is_v4() || (a.is_v6() && a.to_v6().is_v4_mapped())) {
    const auto b =
        a.is_v4()
            ? a.to_v4().to_bytes()
            : boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6()).to_bytes();
    k[0] = 4;
    std::memcpy(k.data() + 1, b.data(), 4);
  } else {
    const auto b = a.to_v6().to_bytes();
    k[0] = 6;
    std::memcpy(k.data() + 1, b.data(), 8);  // the /64
  }
  return k;
}

std::string to_string(const AddressKey& k) {
  if (k[0] == 4) {
    boost::asio::ip::address_v4::bytes_type b;
    std::memcpy(b.data(), k.data() + 1, 4);
    return boost::asio::ip::address_v4(b).to_string();
  }
  boost::asio::ip::address_v6::bytes_type b{};
  std::memcpy(b.data(), k.data() + 1, 8);
  return boost::asio::ip::address_v6(b).to_string() + "/64";
}

size_t AddressKeyHash::operator()(const AddressKey& k) const noexcept {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (uint8_t c : k)
    h = (h ^ c) * 1099511628211ull;
  return static_cast<size_t>(h);
}

// ---------------------------------------------------------------------------

Admission::Ticket::~Ticket() {
  admission_.release(*this);
}

void Admission::Ticket::on_displaced(std::function<void()> f) {
  std::unique_lock lock(admission_.mu_);
  if (logged_in_) return;
  if (it_->displaced) {
    lock.unlock();
    f();
    return;
  }
  it_->displace = std::move(f);
}

bool Admission::Ticket::promote(bool admin) {
  {
    std::lock_guard lock(admission_.mu_);
    if (logged_in_) return true;
    if (it_->displaced) return false;
    const auto& l = admission_.limits_;
    const int64_t room = l.max_clients + (admin ? l.admin_reserved : 0);
    if (admission_.clients_ >= room) return false;
    ++admission_.clients_;
    auto a = admission_.per_address_.find(it_->address);
    if (a != admission_.per_address_.end() && --a->second == 0) admission_.per_address_.erase(a);
    admission_.pending_.erase(it_);
    logged_in_ = true;
  }
  admission_.notify_room();
  return true;
}

void Admission::release(Ticket& t) {
  {
    std::lock_guard lock(mu_);
    if (t.logged_in_) {
      --clients_;
      return;
    }
    if (t.it_->displaced) {
      gone_.erase(t.it_);
      return;
    }
    auto a = per_address_.find(t.it_->address);
    if (a != per_address_.end() && --a->second == 0) per_address_.erase(a);
    pending_.erase(t.it_);
  }
  notify_room();
}

void Admission::notify_room() {
  bool anyone = false;
  {
    std::lock_guard lock(mu_);
    anyone = waiting_count_ > 0;
  }
  if (anyone && on_room_) on_room_();
}

std::list<Admission::Entry>::iterator Admission::victim(const AddressKey* address,
                                                        Clock::time_point now,
                                                        Clock::duration after) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (now - it->since < after) break;  // oldest first: the rest are younger
    if (!address || it->address == *address) return it;
  }
  return pending_.end();
}

Admission::TicketPtr Admission::add_pending(const AddressKey& key, Clock::time_point now) {
  pending_.push_back(Entry{key, now, nullptr, false});
  ++per_address_[key];
  return TicketPtr(new Ticket(*this, std::prev(pending_.end())));
}

void Admission::displace(std::list<Entry>::iterator out,
                         std::vector<std::function<void()>>& displace) {
  auto a = per_address_.find(out->address);
  if (a != per_address_.end() && --a->second == 0) per_address_.erase(a);
  out->displaced = true;
  if (out->displace) displace.push_back(std::move(out->displace));
  gone_.splice(gone_.end(), pending_, out);
  ++displaced_;
}

bool Admission::make_room(const AddressKey& key, Clock::time_point now, Refusal* why,
                          std::vector<std::function<void()>>& displaced, Clock::duration after) {
  auto from = per_address_.find(key);
  const int64_t here = from == per_address_.end() ? 0 : from->second;
  auto out = pending_.end();
  if (here >= limits_.max_pending_per_address) {
    out = victim(&key, now, after);
    if (out == pending_.end()) {
      if (why) *why = Refusal::pending_per_address;
      return false;
    }
  } else if (static_cast<int64_t>(pending_.size()) >= limits_.max_pending) {
    out = victim(nullptr, now, after);
    if (out == pending_.end()) {
      if (why) *why = Refusal::pending;
      return false;
    }
  }
  if (out != pending_.end()) displace(out, displaced);
  return true;
}

Admission::Arrival Admission::arrive(const boost::asio::ip::address& address, uint64_t token,
                                     Clock::time_point now) {
  const AddressKey key = address_key(address);
  std::vector<std::function<void()>> displaced;
  Arrival a;
  {
    std::lock_guard lock(mu_);
    auto mine = waiting_.find(key);
    const int64_t here = per_address_.count(key) ? per_address_.at(key) : 0;
    const bool room = here < limits_.max_pending_per_address &&
                      static_cast<int64_t>(pending_.size()) < limits_.max_pending;
    // With a waiting room, a connection goes straight in only to a free slot
    // with nobody of its address waiting before it.
    if (limits_.max_waiting == 0) {
      if (make_room(key, now, &a.why, displaced, kDisplaceAfter)) {
        a.why = Refusal::none;
        a.ticket = add_pending(key, now);
      }
    } else if (mine == waiting_.end() && room) {
      a.ticket = add_pending(key, now);
    } else {
      if (waiting_count_ >= limits_.max_waiting) {
        // Full: the address with the most waiting gives up its newest, if it
        // has more than this address would have with this one.
        const size_t own = mine == waiting_.end() ? 0 : mine->second.size();
        auto most = waiting_.end();
        for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
          if (most == waiting_.end() || it->second.size() > most->second.size()) most = it;
        }
        if (most != waiting_.end() && most->second.size() > own + 1) {
          a.evicted = most->second.back().token;
          most->second.pop_back();
          --waiting_count_;  // never empties it: it had more than one
        }
      }
      if (waiting_count_ < limits_.max_waiting) {
        if (mine == waiting_.end()) {
          mine = waiting_.try_emplace(key).first;
          turn_.push_back(key);
        }
        mine->second.push_back(Waiter{token, now + limits_.wait_timeout});
        ++waiting_count_;
        a.waiting = true;
        a.why = Refusal::none;
      } else if (make_room(key, now, &a.why, displaced, kDisplaceAfter)) {
        a.why = Refusal::none;  // the room is full: the rule without one
        a.ticket = add_pending(key, now);
      }
    }
  }
  for (auto& f : displaced)
    f();
  return a;
}

Admission::Turns Admission::turns(Clock::time_point now) {
  Turns out;
  std::vector<std::function<void()>> displaced;
  {
    std::lock_guard lock(mu_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      auto& q = it->second;
      while (!q.empty() && q.front().deadline <= now) {
        out.expired.push_back(q.front().token);
        q.pop_front();
        --waiting_count_;
      }
      it = q.empty() ? waiting_.erase(it) : std::next(it);
    }
    // One connection per address per turn, until no address can go in.
    size_t misses = 0;
    while (!turn_.empty() && misses < turn_.size()) {
      const AddressKey key = turn_.front();
      turn_.pop_front();
      auto q = waiting_.find(key);
      if (q == waiting_.end()) continue;  // emptied by the deadlines above
      if (!make_room(key, now, nullptr, displaced, kWaitingDisplaceAfter)) {
        turn_.push_back(key);
        ++misses;
        continue;
      }
      misses = 0;
      out.admitted.emplace_back(q->second.front().token, add_pending(key, now));
      q->second.pop_front();
      --waiting_count_;
      if (q->second.empty()) {
        waiting_.erase(q);
      } else {
        turn_.push_back(key);
      }
    }
  }
  for (auto& f : displaced)
    f();
  return out;
}

std::vector<uint64_t> Admission::clear_waiting() {
  std::lock_guard lock(mu_);
  std::vector<uint64_t> out;
  for (auto& [key, q] : waiting_) {
    for (const auto& w : q)
      out.push_back(w.token);
  }
  waiting_.clear();
  turn_.clear();
  waiting_count_ = 0;
  return out;
}

int64_t Admission::waiting() const {
  std::lock_guard lock(mu_);
  return waiting_count_;
}

bool Admission::has_room(bool admin) const {
  std::lock_guard lock(mu_);
  return clients_ < limits_.max_clients + (admin ? limits_.admin_reserved : 0);
}

int64_t Admission::pending() const {
  std::lock_guard lock(mu_);
  return static_cast<int64_t>(pending_.size());
}

int64_t Admission::clients() const {
  std::lock_guard lock(mu_);
  return clients_;
}

uint64_t Admission::displaced() const {
  std::lock_guard lock(mu_);
  return displaced_;
}

}  // namespace wirepool::server
