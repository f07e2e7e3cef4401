#pragma once
// Who may hold a connection: every client connection is counted from accept.
// Until it has logged in it is *pending* (TLS handshake, startup, SCRAM; an
// HTTP request too), capped globally and per source address; a logged-in
// client counts against max_clients, and admin users may use the
// admin_reserved_clients slots beyond it. When the pending cap is reached, a
// new connection takes the slot of the oldest pending one that has had at
// least kDisplaceAfter to log in (a slow or stuck connection makes way for a
// fresh one); when none is that old, the new connection is refused.
// docs/security.md, "Before authentication".

#include <boost/asio/ip/address.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace wirepool::server {

/// A source address as the limits count it: an IPv4 address (IPv4-mapped IPv6
/// too), or the /64 network of an IPv6 address (one host usually has a whole
/// /64 to pick addresses from).
using AddressKey = std::array<uint8_t, 9>;
AddressKey address_key(const boost::asio::ip::address& a);
/// The key as text ("10.1.2.3", "2001:db8:0:1::/64").
std::string to_string(const AddressKey& k);

struct AddressKeyHash {
  size_t operator()(const AddressKey& k) const noexcept;
};

class Admission {
 public:
  using Clock = std::chrono::steady_clock;
  /// How long a pending connection may take before a newer one may take its slot.
  static constexpr auto kDisplaceAfter = std::chrono::seconds(1);

  struct Limits {
    int64_t max_clients = 10000;
    int64_t admin_reserved = 3;
    int64_t max_pending = 1024;
    int64_t max_pending_per_address = 256;
  };
  enum class Refusal : uint8_t { none, pending, pending_per_address };

  struct Entry;
  /// One connection's place: pending from admit(), a client after promote(),
  /// given back when destroyed. Owned by the connection (its loop thread).
  class Ticket {
   public:
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    /// What to do when a newer connection takes this one's slot (called on
    /// the admitting thread; it must post to the connection's own loop). Runs
    /// at once if that happened already.
    void on_displaced(std::function<void()> f);
    /// Pending -> logged in; false (the ticket stays pending) when there is no
    /// room: max_clients for others, max_clients + admin_reserved for admins.
    bool promote(bool admin);
    bool logged_in() const { return logged_in_; }

   private:
    friend class Admission;
    Ticket(Admission& a, std::list<Entry>::iterator it) : admission_(a), it_(it) {}
    Admission& admission_;
    std::list<Entry>::iterator it_;
    bool logged_in_ = false;
  };
  using TicketPtr = std::unique_ptr<Ticket>;

  explicit Admission(Limits limits) : limits_(limits) {}

  /// A connection accepted from `address`: its ticket, or nullptr and `why`.
  /// May displace an older pending connection (its on_displaced runs).
  TicketPtr admit(const boost::asio::ip::address& address, Refusal* why,
                  Clock::time_point now = Clock::now());
  /// Whether a client of this kind could log in now (checked before its
  /// credentials are, so that a full server refuses before the exchange).
  bool has_room(bool admin) const;

  const Limits& limits() const { return limits_; }
  int64_t pending() const;
  int64_t clients() const;
  /// Pending connections that made way for newer ones, since start.
  uint64_t displaced() const;

  struct Entry {
    AddressKey address;
    Clock::time_point since;
    std::function<void()> displace;
    bool displaced = false;  ///< moved to gone_: counts nothing any more
  };

 private:
  void release(Ticket& t);
  /// The oldest pending entry (of `address`, when given) old enough to make way.
  std::list<Entry>::iterator victim(const AddressKey* address, Clock::time_point now);

  const Limits limits_;
  mutable std::mutex mu_;
  std::list<Entry> pending_;  ///< oldest first
  std::list<Entry> gone_;     ///< displaced entries whose tickets still live
  std::unordered_map<AddressKey, int64_t, AddressKeyHash> per_address_;
  int64_t clients_ = 0;
  uint64_t displaced_ = 0;
};

}  // namespace wirepool::server
