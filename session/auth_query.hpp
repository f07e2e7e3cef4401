#pragma once
// Users from the backend (auth_user + auth_query, docs/security.md): what an
// auth_query answer means, and the cache of answers with one lookup per name
// in flight. Pure: no I/O, no clock (time is an argument), no threads; the
// server runs the lookups (server/auth_lookup.hpp) and locks around the cache.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "protocol/pg/scram.hpp"

namespace wirepool::server {

/// What one lookup found.
enum class AuthAnswer : uint8_t {
  found,    ///< a SCRAM-SHA-256 verifier: the client logs in with it
  unknown,  ///< no such role (no row)
  refused,  ///< a row wirepool cannot use (NULL, md5, plaintext): a wrong password to the client
  failed,   ///< the lookup itself failed (error, timeout, connection down): not cached
};
std::string_view to_string(AuthAnswer a);

struct AuthResult {
  AuthAnswer answer = AuthAnswer::failed;
  std::optional<pg::scram::Verifier> verifier;  ///< with `found`
  /// For the log (never a secret): why the row was refused, or the failure.
  std::string reason;
  /// With `failed`: the lookup timed out or the connection is down (08006),
  /// rather than the query failing (28000).
  bool connection = false;
};

/// Whether `name` may be looked up at all: 1 to 63 bytes (PostgreSQL's
/// NAMEDATALEN - 1), valid UTF-8, no control characters. Other names are
/// answered `unknown` without a query.
bool auth_name_acceptable(std::string_view name);

/// The meaning of auth_query's rows for `name`: each row's columns as text
/// (nullopt = NULL); the password is the second column (or the first, when
/// there is one). No row: unknown; two rows or more: failed; NULL, an md5 hash
/// or plaintext: refused (wirepool checks SCRAM proofs only).
AuthResult interpret_auth_rows(const std::vector<std::vector<std::optional<std::string>>>& rows);

/// Answers cached per name: a verifier for `ttl`, unknown and refused names
/// for `negative_ttl`, failures not at all. At most `capacity` names: the
/// least recently used goes first. A name being looked up is "in flight": the
/// next askers wait for that lookup rather than starting another.
class AuthCache {
 public:
  using Clock = std::chrono::steady_clock;
  AuthCache(size_t capacity, Clock::duration ttl, Clock::duration negative_ttl);

  enum class Step : uint8_t { hit, start, wait };
  struct Lookup {
    Step step = Step::start;
    AuthResult result;  ///< with `hit`
  };
  /// A hit (fresh answer), `start` (the caller runs the lookup and calls
  /// complete()), or `wait` (one is in flight: the caller waits for complete()).
  Lookup lookup(const std::string& name, Clock::time_point now);
  /// Records a lookup's result; the name is no longer in flight.
  void complete(const std::string& name, const AuthResult& result, Clock::time_point now);
  /// Forgets every answer (reload); lookups in flight stay in flight.
  void clear();

  size_t size() const { return entries_.size(); }
  size_t in_flight() const { return in_flight_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    AuthResult result;
    Clock::time_point expires;
    std::list<std::string>::iterator lru;
  };
  size_t capacity_;
  Clock::duration ttl_, negative_ttl_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> lru_;  ///< most recent first
  std::unordered_set<std::string> in_flight_;
};

}  // namespace wirepool::server
