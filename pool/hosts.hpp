#pragma once
// Which backend host of a database is the primary: a pure state machine like
// pool.hpp (no I/O, no clock, no threads). The owner probes the hosts that
// take_due() names (in the background), feeds the answers to handle_probe(),
// reports failed session opens with handle_open_failed(), and asks primary()
// where to open a read-write connection and pick_reader() where to open a
// read-only one (a standby within max_lag). All transitions live in hosts.cpp.
//
// clang-format off
// Roles:
//   unknown ──probe: read-write, newest timeline──> primary
//      │    ──probe: read-only──────────────────> standby
//      │    ──probe: read-write, older timeline─> diverged (fenced)
//      │    ──probe: read-write, replica_only───> diverged (never written to)
//      └────  probe fails / open fails ─────────> banned (back-off, re-probed)
//   A primary or standby whose probe fails stays in its role (a missed probe,
//   re-probed after failover_interval) until failures_to_ban probes in a row
//   failed; a refused connection or a failed session open bans at once.
//   A standby takes reads while its last probe's lag is within max_lag, and
//   takes them again only once its lag is within readmit_lag (hysteresis);
//   each change of that is an event (reads_on / reads_off).
//
// Invariants (tests/unit/pool/hosts_test.cpp checks them on random sequences):
//  - at most one host is primary, and only one that answered read-write on the
//    newest timeline ever seen (max_timeline()): a server that comes back
//    read-write on an older timeline (a diverged old primary) is never primary;
//  - a banned host is not probed before its ban ends; its ban doubles from
//    ban_first with each failure in a row, up to ban_max, and is forgotten at
//    its next answer;
//  - every host that is not in flight has a due time: nothing is forgotten;
//  - pick_reader() names only a readable standby (or, with no bound, any
//    standby); a replica_only host is never primary and never moves max_timeline;
//  - a readable standby's lag is within max_lag; one that was not readable
//    becomes readable only with a lag within readmit_lag.
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
  /// A standby whose replay lag is above this takes no reads; 0 = no bound
  /// (a standby of unknown lag then takes reads too).
  std::chrono::steady_clock::duration max_lag{};
  /// A standby out of reads for its lag takes them again only when its lag is
  /// within this (<= max_lag), so a lag that hovers at the bound does not
  /// flap; 0 = 4/5 of max_lag.
  std::chrono::steady_clock::duration readmit_lag{};
  /// Failed probes in a row that ban a host whose last probe answered (a slow
  /// probe on a loaded machine is not a dead server); at least 1. A refused
  /// connection bans at once.
  uint32_t failures_to_ban = 2;
};

/// How pick_reader() spreads read-only connections over the readable standbys.
enum class Balance : uint8_t {
  least_connections,  ///< the one with the fewest open connections (ties: round robin)
  round_robin,        ///< the next one after the last picked
};
std::string_view to_string(Balance b);

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
  /// unreachable: the server refused the connection (nothing listens, or it
  /// is shutting down): banned at once, not counted as a missed probe.
  bool refused = false;
  /// The timeline the host writes on (read_write); 0 when unknown.
  uint32_t timeline = 0;
  /// read_only: how far its replay is behind (nullopt: unknown, e.g. not replicating).
  std::optional<std::chrono::milliseconds> lag;
  /// The WAL position: written (read_write) or replayed (read_only); 0 = unknown.
  uint64_t lsn = 0;
};

/// Something the owner logs (and acts on: primary_changed moves the pools).
struct HostEvent {
  enum class Kind : uint8_t {
    banned,            ///< `host` banned for `ban`
    unbanned,          ///< `host` answered again after a ban
    primary_changed,   ///< `host` is the primary now (a promotion or the first one seen)
    primary_lost,      ///< `host` was the primary and is not any more
    diverged,          ///< `host` answered read-write on `timeline` < the newest seen
    writable_replica,  ///< a replica_only `host` answered read-write: kept out
    reads_on,          ///< `host` takes reads now (`lag`)
    reads_off,         ///< `host` takes no reads any more (`lag`; its role says why)
    probe_missed,      ///< a probe of a healthy `host` failed; it keeps its role for now
  };
  Kind kind;
  size_t host;
  std::chrono::steady_clock::duration ban{};
  uint32_t timeline = 0;
  std::optional<std::chrono::milliseconds> lag{};
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
  /// `host` only serves reads (a `replicas:` entry): never the primary.
  void set_replica_only(size_t host);
  /// A readable standby for a read-only connection, by `how` (nullopt: none).
  /// Counts nothing: the owner reports the connection with connection_opened.
  std::optional<size_t> pick_reader(Balance how);
  /// Whether `host` takes reads now (a standby within max_lag, readmitted
  /// within readmit_lag).
  bool readable(size_t host) const { return hosts_.at(host).readable; }
  /// Connections open (or opening) on `host`, for least_connections.
  void connection_opened(size_t host);
  void connection_closed(size_t host);
  /// Whether every host has answered or failed a probe once.
  bool all_probed() const;
  /// The hosts due for a probe at `now`; they are in flight until their handle_probe.
  std::vector<size_t> take_due(TimePoint now);
  /// A probe of `host` ended (one take_due gave).
  void handle_probe(size_t host, ProbeResult result, TimePoint now);
  /// A session open to `host` failed for want of the server (refused, timed
  /// out, read-only): the host is banned and re-probed when the ban ends. A
  /// host that is not the primary any more (the open raced a change) is left
  /// alone; with `for_reads`, a standby that failed a read-only open is banned too.
  void handle_open_failed(size_t host, TimePoint now, bool for_reads = false);
  /// When take_due next has something (nullopt: everything is in flight).
  std::optional<TimePoint> next_deadline() const;
  /// The events since the last call, oldest first.
  std::vector<HostEvent> take_events();

  struct HostState {
    HostRole role = HostRole::unknown;
    TimePoint due{};         ///< next probe (ban end for a banned host)
    bool in_flight = false;  ///< a probe is running
    uint32_t failures = 0;   ///< in a row
    uint32_t misses = 0;     ///< failed probes in a row while still in its role
    Duration ban{};          ///< the current ban (banned, diverged)
    uint32_t timeline = 0;   ///< last read-write answer's
    bool replica_only = false;
    bool readable = false;                         ///< takes reads (see readable())
    std::optional<std::chrono::milliseconds> lag;  ///< last read-only answer's
    uint64_t lsn = 0;                              ///< last answer's WAL position
    uint32_t connections = 0;                      ///< connection_opened - connection_closed
  };
  const HostState& state(size_t host) const { return hosts_.at(host); }
  size_t size() const { return hosts_.size(); }
  /// Bytes of WAL `host` (a standby) has not replayed yet, by the primary's
  /// last probe; nullopt when either position is unknown.
  std::optional<uint64_t> lag_bytes(size_t host) const;
  /// The newest timeline any host answered read-write on.
  uint32_t max_timeline() const { return max_timeline_; }
  const HostsConfig& config() const { return config_; }

 private:
  Duration recheck() const;
  void ban(size_t host, TimePoint now);
  void clear_primary(size_t host, TimePoint now);
  void apply_probe(size_t host, const ProbeResult& r, TimePoint now);
  Duration readmit_lag() const;
  /// Recomputes `host`'s readable flag and reports a change.
  void update_readable(size_t host);
  /// Fences `host` (diverged, a writable replica) with a back-off like a ban.
  void fence(size_t host, TimePoint now);

  HostsConfig config_;
  std::vector<HostState> hosts_;
  std::optional<size_t> primary_;
  uint32_t max_timeline_ = 0;
  size_t cursor_ = 0;  ///< pick_reader's round-robin position
  std::vector<HostEvent> events_;
};

}  // namespace wirepool::pool
