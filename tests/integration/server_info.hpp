#pragma once
// The info.json a throwaway test server writes (tests/fixtures/pgserver.py,
// mariadbserver.py, tdsserver.py), as every integration suite reads it: its
// host, port, user, password and TLS files. Strings and numbers; an object one
// level deep reads as "object.key" ("tls.ca"); an array of strings as one
// string, its elements joined with ','. A suite whose variable is unset or
// whose file is missing gets an empty ServerInfo and skips (ok() is false).

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace wirepool::it {

/// Reads the fields of an info.json text.
inline std::map<std::string, std::string> parse_info(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::string prefix;
  size_t i = 0;
  for (;;) {
    const size_t quote = text.find('"', i);
    const size_t close = text.find('}', i);
    if (!prefix.empty() && close < quote) {  // the end of a nested object
      prefix.clear();
      i = close + 1;
      continue;
    }
    i = quote;
    if (i == std::string::npos) break;
    const size_t kend = text.find('"', i + 1);
    if (kend == std::string::npos) break;
    const std::string key = prefix + text.substr(i + 1, kend - i - 1);
    size_t j = text.find_first_not_of(" \t\n", kend + 1);
    if (j == std::string::npos || text[j] != ':') {
      i = kend + 1;
      continue;
    }
    j = text.find_first_not_of(" \t\n", j + 1);
    if (j == std::string::npos) break;
    if (text[j] == '{') {
      prefix = key + ".";
      i = j + 1;
    } else if (text[j] == '"') {
      const size_t vend = text.find('"', j + 1);
      fields[key] = text.substr(j + 1, vend - j - 1);
      i = vend + 1;
    } else if (text[j] == '[') {  // an array of strings: joined with ','
      const size_t end = text.find(']', j);
      std::string joined;
      for (size_t q = text.find('"', j); q < end; q = text.find('"', q + 1)) {
        const size_t qend = text.find('"', q + 1);
        if (!joined.empty()) joined += ',';
        joined += text.substr(q + 1, qend - q - 1);
        q = qend;
      }
      fields[key] = joined;
      i = end + 1;
    } else {
      const size_t vend = text.find_first_of(",}\n", j);
      fields[key] = text.substr(j, vend - j);
      i = vend;
    }
  }
  return fields;
}

/// The info.json named by the environment variable `env`, read once per call.
inline std::map<std::string, std::string> read_info(const char* env) {
  const char* path = std::getenv(env);
  if (path == nullptr) return {};
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_info(ss.str());
}

class ServerInfo {
 public:
  ServerInfo() = default;
  explicit ServerInfo(std::map<std::string, std::string> fields) : fields_(std::move(fields)) {}
  std::string str(const std::string& key) const {
    auto it = fields_.find(key);
    return it == fields_.end() ? std::string() : it->second;
  }
  bool ok() const { return !fields_.empty(); }

 protected:
  std::map<std::string, std::string> fields_;
};

}  // namespace wirepool::it
