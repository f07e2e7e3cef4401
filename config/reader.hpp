#pragma once
// Strict reading of YAML values with located problems: the generic half of the
// loader, which knows YAML types but not the wirepool schema. Internal to config/.

#include <yaml-cpp/yaml.h>

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.hpp"

namespace wirepool::config {

/// A 1-based position in the file.
struct Location {
  int line = 1;
  int column = 1;
};

/// Where yaml-cpp put a node (its marks are 0-based; a node without one is 1:1).
Location location_of(const YAML::Node& node);
Location location_of(const YAML::Mark& mark);

/// One value being read: the key it was written under (the item itself for a
/// list item), the value, and its path for messages ("databases[0].pool.max").
struct Entry {
  YAML::Node key;
  YAML::Node value;
  std::string path;
};

/// Reads values and collects problems. Every read_* reports its own problem
/// and answers nullopt (or false), so callers keep the default and carry on:
/// all problems of a file are found in one pass.
class Reader {
 public:
  struct Field {
    std::string_view name;
    std::function<void(const Entry&)> read;
  };
  using Fields = std::initializer_list<Field>;

  explicit Reader(std::string file) : file_(std::move(file)) {}

  void problem(Location where, std::string message);
  std::vector<Problem>& problems() { return problems_; }

  /// A map whose keys must all be in `fields`; each is read by its handler. An
  /// unknown key (with a suggestion for a near miss) or a repeated key is a problem.
  bool read_map(const Entry& e, Fields fields);
  /// A map of arbitrary names to scalars (driver options); calls `item` per key.
  bool read_scalar_map(const Entry& e, const std::function<void(const Entry&)>& item);
  bool read_list(const Entry& e, const std::function<void(const Entry&)>& item);

  /// A scalar (not null, not a map or list); `expected` describes it in the message.
  bool expect_scalar(const Entry& e, std::string_view expected);
  std::optional<std::string> read_string(const Entry& e);
  std::optional<std::string> read_nonempty(const Entry& e);
  /// A plain decimal integer in [min, max]; a quoted "5" is a string, not an integer.
  std::optional<int64_t> read_int(const Entry& e, int64_t min, int64_t max);
  /// Exactly `true` or `false`, unquoted.
  std::optional<bool> read_bool(const Entry& e);
  std::optional<Duration> read_duration(const Entry& e);
  /// A duration other than 0, which is a problem: "must be greater than 0: `why`".
  std::optional<Duration> read_nonzero_duration(const Entry& e, std::string_view why);
  std::optional<uint64_t> read_size(const Entry& e);
  /// One of a fixed set of names.
  template <typename E>
  std::optional<E> read_choice(const Entry& e,
                               std::initializer_list<std::pair<std::string_view, E>> choices) {
    std::vector<std::string_view> names;
    for (const auto& choice : choices)
      names.push_back(choice.first);
    if (auto s = read_one_of(e, names)) {
      for (const auto& choice : choices) {
        if (choice.first == *s) return choice.second;
      }
    }
    return std::nullopt;
  }
  std::optional<std::string> read_one_of(const Entry& e,
                                         const std::vector<std::string_view>& names);
  /// A list of certificate pins, normalised.
  std::vector<std::string> read_pins(const Entry& e);

 private:
  std::string file_;
  std::vector<Problem> problems_;
};

/// "a | b | c".
std::string one_of(const std::vector<std::string_view>& names);
std::string in_quotes(std::string_view s);
/// "path.name", or "name" at the top level.
std::string child_path(const std::string& path, std::string_view name);

}  // namespace wirepool::config
