#pragma once
// Which backend host of a database is the primary: a pure state machine like
// pool.hpp (no I/O, no clock, no threads). The owner probes the hosts that
// take_due() names (in the background), feeds the answers to handle_probe(),
// reports failed session opens with handle_open_failed(), and asks primary()
// where to open a read-write connection. All transitions live in hosts.cpp.
//
// clang-format off
// Roles:
//   unknown ──probe: read-write, newest timeline──> primary
//      │    ──probe: read-only──────────────────> standby
//      │    ──probe: read-write, older timeline─> diverged (fenced)
//      └────  probe fails / open fails ─────────> banned (back-off, re-probed)
//
// Invariants (tests/unit/pool/hosts_test.cpp checks them on random sequences):
//  - at most one host is primary, and only one that answered read-write on the
//    newest timeline ever seen (max_timeline()): a server that comes back
//    read-write on an older timeline (a diverged old primary) is never primary;
//  - a banned host is not probed before its ban ends; its ban doubles from
//    ban_first with each failure in a row, up to ban_max, and is forgotten at
//    its next answer;
//  - every host that is not in flight has a due time: nothing is forgotten.
// clang-format on

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace wirepool::pool {

struct HostsConfig {
  /// How often the primary and the standbys are re-probed while a primary is known.
  std::chrono::steady_clock::duration check_interval = std::chrono::seconds(1);
  /// How often hosts that are not banned are probed while no primary is known
  /// (a standby's promotion is seen within about this).
  std::chrono::steady_clock::duration failover_interval = std::chrono::milliseconds(200);
  /// The first ban of an unreachable host; doubled per failure in a row up to ban_max.
  std::chrono::steady_clock::duration ban_first = std::chrono::seconds(1);
  std::chrono::steady_clock::duration ban_max = std::chrono::seconds(30);
};

enum class HostRole : uint8_t {
  unknown,   ///< not probed yet
  primary,   ///< read-write on the newest timeline: sessions open here
  standby,   ///< answers read-only
  banned,    ///< refused, timed out or failed: not probed before its ban ends
  diverged,  ///< read-write on an older timeline than one already seen: fenced
};
std::string_view to_string(HostRole r);

/// What a probe found.
struct ProbeResult {
  enum class Kind : uint8_t { unreachable, read_write, read_only };
  Kind kind = Kind::unreachable;
  /// The timeline the host writes on (read_write); 0 when unknown.
  uint32_t timeline = 0;
};

/// Something the owner logs (and acts on: primary_changed moves the pools).
struct HostEvent {
  enum class Kind : uint8_t {
    banned,           ///< `host` banned for `ban`
    unbanned,         ///< `host` answered again after a ban
    primary_changed,  ///< `host` is the primary now (a promotion or the first one seen)
    primary_lost,     ///< `host` was the primary and is not any more
    diverged,         ///< `host` answered read-write on `timeline` < the newest seen
  };
  Kind kind;
  size_t host;
  std::chrono::steady_clock::duration ban{};
  uint32_t timeline = 0;
};
std::string_view to_string(HostEvent::Kind k);

class HostSet {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Duration = std::chrono::steady_clock::duration;

  /// Hosts 0..count-1, all unknown and due at once.
  HostSet(size_t count, HostsConfig config, TimePoint now);

  /// Where read-write sessions open, if a primary is known.
  std::optional<size_t> primary() const { return primary_; }
  /// The hosts due for a probe at `now`; they are in flight until their handle_probe.
  std::vector<size_t> take_due(TimePoint now);
  /// A probe of `host` ended (one take_due gave).
  void handle_probe(size_t host, ProbeResult result, TimePoint now);
  /// A session open to `host` failed for want of the server (refused, timed
  /// out, read-only): the host is banned and re-probed when the ban ends. A
  /// host that is not the primary any more (the open raced a change) is left alone.
  void handle_open_failed(size_t host, TimePoint now);
  /// When take_due next has something (nullopt: everything is in flight).
  std::optional<TimePoint> next_deadline() const;
  /// The events since the last call, oldest first.
  std::vector<HostEvent> take_events();

  struct HostState {
    HostRole role = HostRole::unknown;
    TimePoint due{};         ///< next probe (ban end for a banned host)
    bool in_flight = false;  ///< a probe is running
    uint32_t failures = 0;   ///< in a row
    Duration ban{};          ///< the current ban (banned, diverged)
    uint32_t timeline = 0;   ///< last read-write answer's
  };
  const HostState& state(size_t host) const { return hosts_.at(host); }
  size_t size() const { return hosts_.size(); }
  /// The newest timeline any host answered read-write on.
  uint32_t max_timeline() const { return max_timeline_; }
  const HostsConfig& config() const { return config_; }

 private:
  Duration recheck() const;
  void ban(size_t host, TimePoint now);
  void clear_primary(size_t host, TimePoint now);

  HostsConfig config_;
  std::vector<HostState> hosts_;
  std::optional<size_t> primary_;
  uint32_t max_timeline_ = 0;
  std::vector<HostEvent> events_;
};

}  // namespace wirepool::pool
