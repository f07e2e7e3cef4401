#include "backends/sqlite/sqlite_options.hpp"

#include <climits>
#include <filesystem>
#include <optional>

#include "config/config.hpp"

namespace wirepool::sqlite {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return out;
}

std::optional<bool> parse_switch(std::string_view v) {
  const std::string l = lower(v);
  if (l == "on" || l == "true") return true;
  if (l == "off" || l == "false") return false;
  return std::nullopt;
}

std::string join_path(const std::string& base, const std::string& rel) {
  if (base.empty() || rel.empty() || rel.front() == '/') return rel;
  return (std::filesystem::path(base) / rel).lexically_normal().string();
}

/// Percent-encodes what would end a URI path early.
std::string uri_escape_path(std::string_view p) {
  std::string out;
  for (char c : p) {
    if (c == '%' || c == '?' || c == '#') {
      static constexpr char kHex[] = "0123456789ABCDEF";
      out += '%';
      out += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
      out += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

std::string uri_unescape(std::string_view p) {
  std::string out;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '%' && i + 2 < p.size()) {
      auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      const int hi = hex(p[i + 1]), lo = hex(p[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += p[i];
  }
  return out;
}

constexpr const char* kKnown = "begin, busy_timeout, foreign_keys, seed_sql";

}  // namespace

std::vector<std::pair<std::string, std::string>> validate_options(const db::OpenOptions& o) {
  std::vector<std::pair<std::string, std::string>> problems;
  if (o.connection.empty()) {
    problems.emplace_back(
        "connection", "the sqlite driver needs a database file path, \":memory:\" or a file: URI");
  }
  for (const auto& [key, value] : o.options) {
    if (key == "busy_timeout") {
      const auto d = config::parse_duration(value);
      if (!d || d->count() < 0 || d->count() > INT_MAX) {
        problems.emplace_back(
            key,
            "busy_timeout must be a duration such as \"250ms\" or \"5s\", not \"" + value + "\"");
      }
    } else if (key == "begin") {
      const std::string l = lower(value);
      if (l != "immediate" && l != "deferred") {
        problems.emplace_back(key,
                              "begin must be \"immediate\" or \"deferred\", not \"" + value + "\"");
      }
    } else if (key == "foreign_keys") {
      if (!parse_switch(value)) {
        problems.emplace_back(key, "foreign_keys must be \"on\" or \"off\", not \"" + value + "\"");
      }
    } else if (key == "seed_sql") {
      if (value.empty()) problems.emplace_back(key, "seed_sql must name a file of SQL");
    } else {
      problems.emplace_back(
          key, "unknown option \"" + key + "\" for the sqlite driver (known: " + kKnown + ")");
    }
  }
  return problems;
}

Options parse_options(const db::OpenOptions& o) {
  Options out;
  out.max_value_size = o.max_value_size;
  for (const auto& [key, value] : o.options) {
    if (key == "busy_timeout") {
      if (auto d = config::parse_duration(value)) out.busy_timeout = *d;
    } else if (key == "begin") {
      out.begin_immediate = lower(value) != "deferred";
    } else if (key == "foreign_keys") {
      out.foreign_keys = parse_switch(value).value_or(true);
    } else if (key == "seed_sql") {
      out.seed_sql = join_path(o.base_dir, value);
    }
  }
  return out;
}

Target resolve_target(const std::string& connection, const std::string& base_dir) {
  Target t;
  if (connection == ":memory:") {
    t.open_name = connection;
    t.memory = true;
    return t;
  }
  if (connection.rfind("file:", 0) != 0) {
    t.open_name = join_path(base_dir, connection);
    t.file = t.open_name;
    return t;
  }
  // file: URI. The path ends at '?' or '#'; "file://host/path" has an authority.
  const size_t end = connection.find_first_of("?#", 5);
  std::string path = connection.substr(5, end == std::string::npos ? std::string::npos : end - 5);
  const std::string rest = end == std::string::npos ? std::string() : connection.substr(end);
  const std::string query = rest.empty() || rest[0] != '?' ? std::string() : rest.substr(1);
  for (size_t i = 0; i <= query.size();) {
    const size_t amp = query.find('&', i);
    const std::string param =
        query.substr(i, amp == std::string::npos ? std::string::npos : amp - i);
    if (param == "mode=memory") t.memory = true;
    if (amp == std::string::npos) break;
    i = amp + 1;
  }
  if (path == ":memory:") t.memory = true;
  if (path.rfind("//", 0) == 0) {  // authority: "file:///abs" or "file://localhost/abs"
    const size_t slash = path.find('/', 2);
    path = slash == std::string::npos ? std::string() : path.substr(slash);
    t.open_name = connection;
  } else if (!t.memory && !path.empty() && path.front() != '/' && !base_dir.empty()) {
    path = join_path(base_dir, uri_unescape(path));
    t.open_name = "file:" + uri_escape_path(path) + rest;
    path = uri_escape_path(path);
  } else {
    t.open_name = connection;
  }
  if (!t.memory) t.file = uri_unescape(path);
  return t;
}

}  // namespace wirepool::sqlite
