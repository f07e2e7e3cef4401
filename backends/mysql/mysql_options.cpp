#include "backends/mysql/mysql_options.hpp"

#include <charconv>

namespace wirepool::mysql {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

struct Pair {
  std::string key;
  std::string value;
  size_t value_begin = 0;  // raw offsets of the value in the text (for redaction)
  size_t value_end = 0;
};

/// libpq's key = value grammar. Answers false (with `error`) on a key without '='.
bool split_pairs(std::string_view s, std::vector<Pair>& out, std::string& error) {
  size_t i = 0;
  for (;;) {
    while (i < s.size() && is_space(s[i]))
      ++i;
    if (i >= s.size()) return true;
    const size_t k0 = i;
    while (i < s.size() && s[i] != '=' && !is_space(s[i]))
      ++i;
    Pair p;
    p.key.assign(s.substr(k0, i - k0));
    while (i < s.size() && is_space(s[i]))
      ++i;
    if (i >= s.size() || s[i] != '=' || p.key.empty()) {
      error = "missing \"=\" after \"" + p.key + "\"";
      return false;
    }
    ++i;
    while (i < s.size() && is_space(s[i]))
      ++i;
    p.value_begin = i;
    if (i < s.size() && s[i] == '\'') {
      ++i;
      bool closed = false;
      while (i < s.size()) {
        if (s[i] == '\\' && i + 1 < s.size()) {
          p.value.push_back(s[i + 1]);
          i += 2;
        } else if (s[i] == '\'') {
          ++i;
          closed = true;
          break;
        } else {
          p.value.push_back(s[i++]);
        }
      }
      if (!closed) {
        error = "unterminated quoted value of \"" + p.key + "\"";
        return false;
      }
    } else {
      while (i < s.size() && !is_space(s[i])) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        p.value.push_back(s[i++]);
      }
    }
    p.value_end = i;
    out.push_back(std::move(p));
  }
}

bool parse_unsigned(const std::string& s, unsigned max, unsigned& out) {
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || v > max) return false;
  out = v;
  return true;
}

}  // namespace

ConnectInfo parse_connection(std::string_view text,
                             std::vector<std::pair<std::string, std::string>>* problems) {
  ConnectInfo info;
  std::vector<Pair> pairs;
  std::string error;
  auto problem = [&](std::string message) {
    if (problems) problems->emplace_back("connection", std::move(message));
  };
  if (!split_pairs(text, pairs, error)) {
    problem("invalid mysql connection string: " + error);
    return info;
  }
  for (const Pair& p : pairs) {
    const std::string& k = p.key;
    if (k == "host") {
      info.host = p.value;
    } else if (k == "port") {
      if (!parse_unsigned(p.value, 65535, info.port) || info.port == 0) {
        problem("port must be a number from 1 to 65535, got \"" + p.value + "\"");
      }
    } else if (k == "user") {
      info.user = p.value;
    } else if (k == "password") {
      info.password = p.value;
    } else if (k == "dbname") {
      info.dbname = p.value;
    } else if (k == "socket") {
      info.socket = p.value;
    } else if (k == "connect_timeout") {
      if (!parse_unsigned(p.value, 3600, info.connect_timeout) || info.connect_timeout == 0) {
        problem("connect_timeout must be a number of seconds from 1 to 3600, got \"" + p.value +
                "\"");
      }
    } else if (k.rfind("ssl", 0) == 0 || k.rfind("tls", 0) == 0) {
      problem("connection sets " + k + ": TLS to the backend comes from the database entry's " +
              "tls block");
    } else {
      problem("unknown key \"" + k +
              "\" in the mysql connection string (host, port, user, password, dbname, socket, "
              "connect_timeout)");
    }
  }
  return info;
}

std::vector<std::pair<std::string, std::string>> validate_options(const db::OpenOptions& o) {
  std::vector<std::pair<std::string, std::string>> problems;
  for (const auto& [key, value] : o.options) {
    problems.emplace_back(key, "unknown option \"" + key + "\": the mysql driver takes no options");
  }
  (void)parse_connection(o.connection, &problems);
  return problems;
}

ConnectInfo connect_info(const db::OpenOptions& o) {
  ConnectInfo info = parse_connection(o.connection, nullptr);
  if (!o.password.empty()) info.password = o.password;
  if (!o.user.empty()) {
    // A user pool's own login (auth.mode passthrough): the client's name and password.
    info.user = o.user;
    info.password = o.password;
  }
  info.tls_ca = o.tls_ca;
  info.max_value_size = o.max_value_size;
  // One host of several (the host monitor's choice) replaces the connection's.
  if (!o.host.empty()) {
    info.host = o.host;
    info.socket.clear();
    if (o.port > 0) info.port = static_cast<unsigned>(o.port);
  }
  info.read_write = o.read_write;
  return info;
}

std::string redact_connection(std::string_view text) {
  std::vector<Pair> pairs;
  std::string error;
  (void)split_pairs(text, pairs, error);
  std::string out;
  size_t copied = 0;
  for (const Pair& p : pairs) {
    if (p.key != "password") continue;
    out.append(text.substr(copied, p.value_begin - copied)).append("***");
    copied = p.value_end;
  }
  if (!error.empty() && out.empty() && text.find("password") != std::string_view::npos) {
    return "***";  // unparsable and may hold a secret
  }
  out.append(text.substr(copied));
  return out;
}

}  // namespace wirepool::mysql
