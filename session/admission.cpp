#include "session/admission.hpp"

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
  return true;
}

void Admission::release(Ticket& t) {
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

std::list<Admission::Entry>::iterator Admission::victim(const AddressKey* address,
                                                        Clock::time_point now) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (now - it->since < kDisplaceAfter) break;  // oldest first: the rest are younger
    if (!address || it->address == *address) return it;
  }
  return pending_.end();
}

Admission::TicketPtr Admission::admit(const boost::asio::ip::address& address, Refusal* why,
                                      Clock::time_point now) {
  const AddressKey key = address_key(address);
  std::function<void()> displace;
  TicketPtr ticket;
  {
    std::lock_guard lock(mu_);
    auto from = per_address_.find(key);
    const int64_t here = from == per_address_.end() ? 0 : from->second;
    auto out = pending_.end();
    if (here >= limits_.max_pending_per_address) {
      out = victim(&key, now);
      if (out == pending_.end()) {
        if (why) *why = Refusal::pending_per_address;
        return nullptr;
      }
    } else if (static_cast<int64_t>(pending_.size()) >= limits_.max_pending) {
      out = victim(nullptr, now);
      if (out == pending_.end()) {
        if (why) *why = Refusal::pending;
        return nullptr;
      }
    }
    if (out != pending_.end()) {
      auto a = per_address_.find(out->address);
      if (a != per_address_.end() && --a->second == 0) per_address_.erase(a);
      out->displaced = true;
      displace = std::move(out->displace);
      gone_.splice(gone_.end(), pending_, out);
      ++displaced_;
    }
    pending_.push_back(Entry{key, now, nullptr, false});
    ++per_address_[key];
    ticket.reset(new Ticket(*this, std::prev(pending_.end())));
  }
  if (why) *why = Refusal::none;
  if (displace) displace();
  return ticket;
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
