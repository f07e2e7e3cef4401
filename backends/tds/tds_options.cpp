#include "backends/tds/tds_options.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <span>

#include "config/config.hpp"

namespace wirepool::tdsdrv {

namespace {

constexpr std::string_view kConnectionKeys[] = {"host", "server",   "port", "database", "user",
                                                "uid",  "password", "pwd",  "app_name"};
constexpr std::string_view kOptionKeys[] = {"connect_timeout", "read_timeout", "packet_size"};

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// The canonical name of a connection key (ODBC spellings accepted).
std::string canonical(const std::string& key) {
  if (key == "server") return "host";
  if (key == "uid") return "user";
  if (key == "pwd") return "password";
  return key;
}

bool known(std::span<const std::string_view> keys, std::string_view k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

std::optional<uint32_t> parse_uint(std::string_view s, uint32_t max) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint32_t>(c - '0');
  }
  if (v > max) return std::nullopt;
  return v;
}

std::string normalize_pin(std::string_view pin) {
  std::string out;
  for (char c : pin) {
    if (c != ':') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

bool split_connection(std::string_view s, std::vector<std::pair<std::string, std::string>>& out,
                      std::string* error) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t eq = s.find('=', i);
    const size_t semi = s.find(';', i);
    if (eq == std::string_view::npos || (semi != std::string_view::npos && semi < eq)) {
      const std::string_view rest =
          trim(s.substr(i, semi == std::string_view::npos ? s.npos : semi - i));
      if (!rest.empty()) {
        *error = "expected key=value, got \"" + std::string(rest) + "\"";
        return false;
      }
      if (semi == std::string_view::npos) break;
      i = semi + 1;
      continue;
    }
    std::string key = lower(trim(s.substr(i, eq - i)));
    if (key.empty()) {
      *error = "a key=value pair without a key";
      return false;
    }
    size_t v = eq + 1;
    while (v < s.size() && is_space(s[v]))
      ++v;
    std::string value;
    if (v < s.size() && s[v] == '{') {
      // {braced}: "}}" is a literal "}", the value ends at a single "}".
      size_t j = v + 1;
      bool closed = false;
      while (j < s.size()) {
        if (s[j] == '}') {
          if (j + 1 < s.size() && s[j + 1] == '}') {
            value += '}';
            j += 2;
            continue;
          }
          closed = true;
          ++j;
          break;
        }
        value += s[j++];
      }
      if (!closed) {
        *error = "unterminated {braced} value of " + key;
        return false;
      }
      while (j < s.size() && is_space(s[j]))
        ++j;
      if (j < s.size() && s[j] != ';') {
        *error = "unexpected text after the {braced} value of " + key;
        return false;
      }
      i = j + 1;
    } else {
      const size_t end = s.find(';', v);
      value = std::string(trim(s.substr(v, end == std::string_view::npos ? s.npos : end - v)));
      i = end == std::string_view::npos ? s.size() : end + 1;
    }
    out.emplace_back(std::move(key), std::move(value));
  }
  return true;
}

std::vector<std::pair<std::string, std::string>> validate_options(const db::OpenOptions& o) {
  std::vector<std::pair<std::string, std::string>> problems;
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string error;
  if (!split_connection(o.connection, pairs, &error)) {
    problems.emplace_back("", "connection: " + error);
    return problems;
  }
  bool host = false, user = false;
  for (const auto& [k, v] : pairs) {
    if (!known(kConnectionKeys, k)) {
      problems.emplace_back("", "connection: unknown key \"" + k +
                                    "\" (host, port, database, user, password, "
                                    "app_name)");
      continue;
    }
    const std::string c = canonical(k);
    if (c == "host") host = !v.empty();
    if (c == "user") user = !v.empty();
    if (c == "port" && !parse_uint(v, 65535).value_or(0)) {
      problems.emplace_back("", "connection: port must be 1..65535, got \"" + v + "\"");
    }
  }
  if (!host) problems.emplace_back("", "connection: host is required");
  if (!user) problems.emplace_back("", "connection: user is required");
  for (const auto& [k, v] : o.options) {
    if (!known(kOptionKeys, k)) {
      problems.emplace_back(k, "unknown option \"" + k +
                                   "\" (the tds driver takes connect_timeout, read_timeout, "
                                   "packet_size)");
    } else if (k == "packet_size") {
      auto n = parse_uint(v, kMaxDriverPacketSize);
      if (!n || *n < 512) {
        problems.emplace_back(k,
                              "packet_size must be 512..16383 (a packet must fit one TLS "
                              "record), got \"" +
                                  v + "\"");
      }
    } else {
      auto d = config::parse_duration(v);
      if (!d || d->count() <= 0) {
        problems.emplace_back(k, k + " must be a positive duration (\"15s\"), got \"" + v + "\"");
      }
    }
  }
  // TDS 8.0 strict encryption: TLS 1.3 before the first TDS byte, the server
  // verified against tls.ca. There is no plaintext or unverified mode.
  if (o.tls_ca.empty()) {
    problems.emplace_back("",
                          "the tds driver needs tls.ca (strict encryption: the server "
                          "certificate is always verified)");
  }
  for (const auto& pin : o.tls_pins) {
    const std::string p = normalize_pin(pin);
    if (p.size() != 64 || !std::all_of(p.begin(), p.end(), [](char c) {
          return std::isxdigit(static_cast<unsigned char>(c)) != 0;
        })) {
      problems.emplace_back("", "tls.pin_sha256: \"" + pin + "\" is not 64 hex digits");
    }
  }
  return problems;
}

Options parse_options(const db::OpenOptions& o) {
  Options out;
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string error;
  (void)split_connection(o.connection, pairs, &error);
  for (const auto& [k, v] : pairs) {
    const std::string c = canonical(k);
    if (c == "host") out.host = v;
    if (c == "port") out.port = static_cast<uint16_t>(parse_uint(v, 65535).value_or(1433));
    if (c == "database") out.database = v;
    if (c == "user") out.user = v;
    if (c == "password") out.password = v;
    if (c == "app_name") out.app_name = v;
  }
  if (!o.password.empty()) out.password = o.password;
  if (!o.user.empty()) {
    // A user pool's own login (auth.mode passthrough): the client's name and password.
    out.user = o.user;
    out.password = o.password;
  }
  for (const auto& [k, v] : o.options) {
    if (k == "packet_size") {
      out.packet_size = parse_uint(v, kMaxDriverPacketSize).value_or(out.packet_size);
    } else if (auto d = config::parse_duration(v)) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
      if (k == "connect_timeout") out.connect_timeout = ms;
      if (k == "read_timeout") out.read_timeout = ms;
    }
  }
  out.tls_ca = o.tls_ca;
  out.tls_pins = o.tls_pins;
  out.max_value_size = o.max_value_size;
  return out;
}

std::string redact_connection(std::string_view connection) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string error;
  if (!split_connection(connection, pairs, &error)) return "***";
  std::string out;
  for (const auto& [k, v] : pairs) {
    if (!out.empty()) out += ";";
    const std::string c = canonical(k);
    out += k + "=" + (c == "password" ? std::string("***") : v);
  }
  return out;
}

}  // namespace wirepool::tdsdrv
