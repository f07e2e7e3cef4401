// Strict YAML value reading; see reader.hpp.

#include "config/reader.hpp"

#include <algorithm>
#include <charconv>
#include <map>

namespace wirepool::config {

namespace {

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "no value";
    default:
      return in_quotes(n.Scalar());
  }
}

/// A plain (unquoted, untagged) scalar: only these can be integers or booleans.
bool is_plain(const YAML::Node& n) {
  return n.Tag() == "?";
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

Location location_of(const YAML::Mark& m) {
  return {m.line < 0 ? 1 : m.line + 1, m.column < 0 ? 1 : m.column + 1};
}

Location location_of(const YAML::Node& node) {
  return location_of(node.Mark());
}

std::string one_of(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += " | ";
    out += n;
  }
  return out;
}

std::string in_quotes(std::string_view s) {
  return "\"" + std::string(s) + "\"";
}

std::string child_path(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

void Reader::problem(Location where, std::string message) {
  problems_.push_back(Problem{file_, where.line, where.column, std::move(message)});
}

bool Reader::read_map(const Entry& e, Fields fields) {
  return read_scalar_map(e, [&](const Entry& item) {
    const std::string& name = item.key.Scalar();
    for (const auto& f : fields) {
      if (f.name == name) return f.read(item);
    }
    const std::string where = e.path.empty() ? "the top level" : e.path;
    std::string message = "unknown key " + in_quotes(name) + " in " + where;
    std::vector<std::string_view> names;
    std::string_view near;
    for (const auto& f : fields) {
      names.push_back(f.name);
      if (name.size() > 2 && edit_distance(name, f.name) <= 2) near = f.name;
    }
    if (!near.empty()) {
      message += " (did you mean " + in_quotes(near) + "?)";
    } else {
      message += "; expected one of: " + one_of(names);
    }
    problem(location_of(item.key), message);
  });
}

bool Reader::read_scalar_map(const Entry& e, const std::function<void(const Entry&)>& item) {
  if (e.value.IsNull()) {
    problem(location_of(e.key), e.path + " has no value; expected a map");
    return false;
  }
  if (!e.value.IsMap()) {
    problem(location_of(e.value), e.path + ": expected a map, got " + describe(e.value));
    return false;
  }
  const std::string where = e.path.empty() ? "the top level" : e.path;
  std::map<std::string, int> seen;  // -> line
  for (auto it = e.value.begin(); it != e.value.end(); ++it) {
    const YAML::Node key = it->first;
    const Location key_at = location_of(key);
    if (!key.IsScalar()) {
      problem(key_at, "keys in " + where + " must be names, got " + describe(key));
      continue;
    }
    const std::string& name = key.Scalar();
    if (auto [first, fresh] = seen.emplace(name, key_at.line); !fresh) {
      problem(key_at, "duplicate key " + in_quotes(name) + " in " + where + " (first at line " +
                          std::to_string(first->second) + ")");
      continue;
    }
    item(Entry{key, it->second, child_path(e.path, name)});
  }
  return true;
}

bool Reader::read_list(const Entry& e, const std::function<void(const Entry&)>& item) {
  if (e.value.IsNull()) {
    problem(location_of(e.key), e.path + " has no value; expected a list");
    return false;
  }
  if (!e.value.IsSequence()) {
    problem(location_of(e.value), e.path + ": expected a list, got " + describe(e.value));
    return false;
  }
  size_t i = 0;
  for (auto it = e.value.begin(); it != e.value.end(); ++it, ++i) {
    item(Entry{*it, *it, e.path + "[" + std::to_string(i) + "]"});
  }
  return true;
}

bool Reader::expect_scalar(const Entry& e, std::string_view expected) {
  if (e.value.IsNull()) {
    // A missing value has no position of its own (yaml-cpp marks the next
    // token), so point at its key.
    problem(location_of(e.key), e.path + " has no value; expected " + std::string(expected));
    return false;
  }
  if (!e.value.IsScalar()) {
    problem(location_of(e.value),
            e.path + ": expected " + std::string(expected) + ", got " + describe(e.value));
    return false;
  }
  return true;
}

std::optional<std::string> Reader::read_string(const Entry& e) {
  if (!expect_scalar(e, "a string")) return std::nullopt;
  return e.value.Scalar();
}

std::optional<std::string> Reader::read_nonempty(const Entry& e) {
  auto s = read_string(e);
  if (s && s->empty()) {
    problem(location_of(e.value), e.path + " must not be empty");
    return std::nullopt;
  }
  return s;
}

std::optional<int64_t> Reader::read_int(const Entry& e, int64_t min, int64_t max) {
  if (!expect_scalar(e, "an integer")) return std::nullopt;
  const std::string& s = e.value.Scalar();
  const Location where = location_of(e.value);
  if (!is_plain(e.value)) {
    problem(where, e.path + ": expected an integer, got the string " + in_quotes(s) +
                       " (write it without quotes)");
    return std::nullopt;
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  const bool out_of_range = ec == std::errc::result_out_of_range;
  if (s.empty() || end != s.data() + s.size() || (ec != std::errc() && !out_of_range)) {
    problem(where, e.path + ": expected an integer, got " + in_quotes(s));
    return std::nullopt;
  }
  if (out_of_range || v < min || v > max) {
    problem(where, e.path + " must be between " + std::to_string(min) + " and " +
                       std::to_string(max) + ", got " + s);
    return std::nullopt;
  }
  return v;
}

std::optional<bool> Reader::read_bool(const Entry& e) {
  if (!expect_scalar(e, "true or false")) return std::nullopt;
  const std::string& s = e.value.Scalar();
  if (is_plain(e.value) && s == "true") return true;
  if (is_plain(e.value) && s == "false") return false;
  problem(location_of(e.value), e.path + ": expected true or false, got " + in_quotes(s));
  return std::nullopt;
}

std::optional<Duration> Reader::read_duration(const Entry& e) {
  if (!expect_scalar(e, "a duration")) return std::nullopt;
  const std::string& s = e.value.Scalar();
  auto d = parse_duration(s);
  if (!d) {
    problem(location_of(e.value), e.path + ": malformed duration " + in_quotes(s) +
                                      "; expected a whole number with a unit ms, s, m, h or d "
                                      "(250ms, 5s, 10m, 1h, 1d), or 0");
  }
  return d;
}

std::optional<Duration> Reader::read_nonzero_duration(const Entry& e, std::string_view why) {
  auto d = read_duration(e);
  if (d && d->count() == 0) {
    problem(location_of(e.value), e.path + " must be greater than 0: " + std::string(why));
    return std::nullopt;
  }
  return d;
}

std::optional<uint64_t> Reader::read_size(const Entry& e) {
  if (!expect_scalar(e, "a size")) return std::nullopt;
  const std::string& s = e.value.Scalar();
  auto n = parse_size(s);
  if (!n) {
    problem(location_of(e.value), e.path + ": malformed size " + in_quotes(s) +
                                      "; expected a whole number of bytes, optionally with a "
                                      "unit B, kB, KB, KiB, MB, MiB, GB or GiB (64MiB)");
  }
  return n;
}

std::optional<std::string> Reader::read_one_of(const Entry& e,
                                               const std::vector<std::string_view>& names) {
  if (!expect_scalar(e, "one of " + one_of(names))) return std::nullopt;
  const std::string& s = e.value.Scalar();
  if (std::find(names.begin(), names.end(), s) != names.end()) return s;
  problem(location_of(e.value),
          e.path + " must be one of " + one_of(names) + ", got " + in_quotes(s));
  return std::nullopt;
}

std::vector<std::string> Reader::read_pins(const Entry& e) {
  std::vector<std::string> pins;
  read_list(e, [&](const Entry& item) {
    auto s = read_string(item);
    if (!s) return;
    if (auto pin = normalize_pin(*s)) {
      pins.push_back(*pin);
    } else {
      problem(location_of(item.value),
              item.path + ": malformed pin " + in_quotes(*s) +
                  "; expected the SHA-256 of a public key as 64 hex digits, optionally with a "
                  "colon between each byte (AB:CD:...)");
    }
  });
  return pins;
}

}  // namespace wirepool::config
