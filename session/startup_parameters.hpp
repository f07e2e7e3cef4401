#pragma once
// What a PostgreSQL backend reports at login (ParameterStatus), remembered per
// pool so a login need not lease a backend: the values a fresh backend reports,
// and for each startup setting a client sent, the value the backend reported
// for it once it accepted it (PgBouncer keeps the server's welcome the same way).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace wirepool::server {

class StartupParameters {
 public:
  using List = std::vector<std::pair<std::string, std::string>>;
  /// Settings remembered beyond this many are not kept (a lease answers them).
  static constexpr size_t kMaxLearned = 1024;

  /// What a backend reported as it opened. A different list than before (a
  /// reconnect, ALTER ROLE … SET, a new server) forgets everything learned.
  void note_defaults(const List& reported);
  /// The ParameterStatus list for a client that set `overrides` at startup, or
  /// nullopt when some setting has not been seen accepted (the caller leases).
  std::optional<List> answer(const List& overrides) const;
  /// A backend accepted `overrides` and then reported `reported`.
  void learn(const List& overrides, const List& reported);
  size_t learned() const { return learned_.size(); }

 private:
  /// The value a backend reports for `name` set to `value`, when that is known
  /// without asking one: nullopt = not known; an empty optional inside = the
  /// setting is accepted and not reported.
  std::optional<std::optional<std::string>> known(std::string_view name,
                                                  std::string_view value) const;

  std::optional<List> defaults_;
  /// "name\0value" (name lower-cased) -> the reported value, or nullopt when
  /// the backend reports nothing for it.
  std::unordered_map<std::string, std::optional<std::string>> learned_;
};

}  // namespace wirepool::server
