#pragma once
// Who may hold a connection: every client connection is counted from accept.
// Until it has logged in it is *pending* (TLS handshake, startup, SCRAM; an
// HTTP request too), capped globally and per source address; a logged-in
// client counts against max_clients, and admin users may use the
// admin_reserved_clients slots beyond it. When the pending cap is reached, a
// new connection takes the slot of the oldest pending one that has had at
// least kDisplaceAfter to log in (a slow or stuck connection makes way for a
// fresh one). A connection over a cap while that cannot be done waits in the
// waiting room instead (parked: only its socket, no TLS, no read) until a slot
// frees, FIFO per address and in turn across addresses, or until its deadline;
// the room is bounded (max_waiting), and beyond it the new connection is
// refused. docs/security.md, "Before authentication".

#include <boost/asio/ip/address.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

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
  /// The same for a connection in the waiting room (arrivals then wait
  /// instead of displacing): long enough that a slow client of a login storm
  /// on a busy host is not mistaken for a stuck one.
  static constexpr auto kWaitingDisplaceAfter = std::chrono::seconds(5);

  struct Limits {
    int64_t max_clients = 10000;
    int64_t admin_reserved = 3;
    int64_t max_pending = 1024;
    int64_t max_pending_per_address = 256;
    /// Connections that may wait for a pending slot (0: none wait, the
    /// limits refuse at once) and how long each may wait.
    int64_t max_waiting = 0;
    Clock::duration wait_timeout = std::chrono::seconds(30);
  };
  enum class Refusal : uint8_t { none, pending, pending_per_address };

  struct Entry;
  /// One connection's place: pending from arrive(), a client after promote(),
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

  /// What became of an arriving connection.
  struct Arrival {
    TicketPtr ticket;             ///< admitted: pending from now
    bool waiting = false;         ///< parked in the waiting room as its token
    Refusal why = Refusal::none;  ///< refused when neither
    /// A waiting connection of the address with the most waiting, turned away
    /// to make room for this one (the server closes it), else 0.
    uint64_t evicted = 0;
  };
  /// A connection accepted from `address`. Without a waiting room
  /// (max_waiting 0) it takes a free slot, or that of the oldest pending one
  /// older than kDisplaceAfter (its on_displaced runs), or is refused. With
  /// one, it takes a free slot when nobody of its address waits before it,
  /// else waits as `token` (non-zero, the caller's name for the socket) while
  /// the room has space; when the room is full, an address with fewer waiting
  /// takes the place of the newest connection of the address with the most,
  /// else the rule without a room applies.
  Arrival arrive(const boost::asio::ip::address& address, uint64_t token,
                 Clock::time_point now = Clock::now());
  /// The waiting room's moves at `now`: connections whose turn came (a slot
  /// is free, or one pending for kDisplaceAfter makes way), each with its
  /// ticket, and those whose wait_timeout passed.
  struct Turns {
    std::vector<std::pair<uint64_t, TicketPtr>> admitted;
    std::vector<uint64_t> expired;
  };
  Turns turns(Clock::time_point now = Clock::now());
  /// Every waiting connection's token, the room emptied (shutdown).
  std::vector<uint64_t> clear_waiting();
  /// Called (on the releasing thread, outside the lock) when a slot frees
  /// while connections wait: the caller then runs turns(). Set before use.
  void on_room(std::function<void()> f) { on_room_ = std::move(f); }
  int64_t waiting() const;

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
  /// A new pending entry and its ticket (the caller holds mu_).
  TicketPtr add_pending(const AddressKey& key, Clock::time_point now);
  /// Frees `out`'s slot (displaced); its callback goes to `displace`.
  void displace(std::list<Entry>::iterator out, std::vector<std::function<void()>>& displace);
  /// Whether `key` may take a slot now, making one with a displacement if
  /// needed (its callback goes to `displace`). The caller holds mu_.
  bool make_room(const AddressKey& key, Clock::time_point now, Refusal* why,
                 std::vector<std::function<void()>>& displace, Clock::duration after);
  void notify_room();
  /// The oldest pending entry (of `address`, when given) pending for `after`.
  std::list<Entry>::iterator victim(const AddressKey* address, Clock::time_point now,
                                    Clock::duration after);

  const Limits limits_;
  mutable std::mutex mu_;
  std::list<Entry> pending_;  ///< oldest first
  std::list<Entry> gone_;     ///< displaced entries whose tickets still live
  std::unordered_map<AddressKey, int64_t, AddressKeyHash> per_address_;
  int64_t clients_ = 0;
  uint64_t displaced_ = 0;
  /// The waiting room: tokens and deadlines by address, oldest first, and
  /// the addresses that have any, in turn order.
  struct Waiter {
    uint64_t token;
    Clock::time_point deadline;
  };
  std::unordered_map<AddressKey, std::list<Waiter>, AddressKeyHash> waiting_;  // ~48 B a waiter
  std::deque<AddressKey> turn_;
  int64_t waiting_count_ = 0;
  std::function<void()> on_room_;
};

}  // namespace wirepool::server
