// The public face of config/: enum names, lookups, problems, and load() /
// load_string(), which hand the text to the loader (loader.cpp) and throw
// ConfigError once with every problem found, in file order.

#include "config/config.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <tuple>

#include "config/loader.hpp"

namespace wirepool::config {

namespace fs = std::filesystem;

std::string_view to_string(Protocol p) {
  switch (p) {
    case Protocol::postgres:
      return "postgres";
    case Protocol::tds:
      return "tds";
    case Protocol::http:
      return "http";
  }
  return "?";
}

std::string_view to_string(TlsMode m) {
  switch (m) {
    case TlsMode::off:
      return "off";
    case TlsMode::optional:
      return "optional";
    case TlsMode::required:
      return "required";
  }
  return "?";
}

std::string_view to_string(PoolMode m) {
  switch (m) {
    case PoolMode::session:
      return "session";
    case PoolMode::transaction:
      return "transaction";
    case PoolMode::statement:
      return "statement";
  }
  return "?";
}

std::string_view to_string(LogFormat f) {
  switch (f) {
    case LogFormat::text:
      return "text";
    case LogFormat::json:
      return "json";
  }
  return "?";
}

const Database* Config::find_database(std::string_view name) const {
  for (const auto& db : databases) {
    if (db.name == name) return &db;
  }
  return nullptr;
}

const User* Config::find_user(std::string_view name) const {
  for (const auto& user : users) {
    if (user.name == name) return &user;
  }
  return nullptr;
}

std::string Problem::to_string() const {
  // Line 0: the problem is with the file as a whole (it cannot be read).
  if (line == 0) return file + ": " + message;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
}

namespace {

std::string join_lines(const std::vector<Problem>& problems) {
  std::string out;
  for (const auto& p : problems) {
    if (!out.empty()) out += '\n';
    out += p.to_string();
  }
  return out;
}

}  // namespace

ConfigError::ConfigError(std::vector<Problem> problems)
    : std::runtime_error(join_lines(problems)), problems_(std::move(problems)) {}

Config load_string(std::string_view yaml, const std::string& name, DatabaseValidator validator) {
  // A name without a directory part is relative to the current directory.
  std::error_code ec;
  const fs::path file =
      (name.empty() ? fs::current_path(ec) / "config.yaml" : fs::absolute(name, ec))
          .lexically_normal();
  Config config;
  config.path = file.string();
  std::vector<Problem> problems = load_into(config, yaml, name, file.parent_path(), validator);
  if (!problems.empty()) {
    std::stable_sort(problems.begin(), problems.end(), [](const Problem& a, const Problem& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    throw ConfigError(std::move(problems));
  }
  return config;
}

Config load(const std::string& path, DatabaseValidator validator) {
  auto unreadable = [&](const std::string& why) {
    return ConfigError({Problem{path, 0, 0, "cannot read the configuration: " + why}});
  };
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec) throw unreadable(ec.message());
  if (fs::is_directory(status)) throw unreadable("it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) throw unreadable("cannot open it");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw unreadable("read error");
  return load_string(text, path, validator);
}

}  // namespace wirepool::config
