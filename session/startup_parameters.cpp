#include "session/startup_parameters.hpp"

#include <algorithm>
#include <cctype>

namespace wirepool::server {

namespace {
std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}
std::string key(std::string_view name, std::string_view value) {
  std::string k = lower(name);
  k.push_back('\0');
  k.append(value);
  return k;
}
bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}
}  // namespace

void StartupParameters::note_defaults(const List& reported) {
  if (defaults_ && *defaults_ == reported) return;
  defaults_ = reported;
  learned_.clear();
}

std::optional<std::optional<std::string>> StartupParameters::known(std::string_view name,
                                                                   std::string_view value) const {
  // Every PostgreSQL version reports printable ASCII of under NAMEDATALEN bytes
  // as sent (others it truncates or rewrites differently by version).
  if (same_name(name, "application_name") && value.size() < 64 &&
      std::all_of(value.begin(), value.end(), [](char c) { return c >= 32 && c <= 126; })) {
    return std::optional<std::string>(std::string(value));
  }
  auto it = learned_.find(key(name, value));
  if (it == learned_.end()) return std::nullopt;
  return it->second;
}

std::optional<StartupParameters::List> StartupParameters::answer(const List& overrides) const {
  if (!defaults_) return std::nullopt;
  List out = *defaults_;
  for (const auto& [name, value] : overrides) {
    auto reported = known(name, value);
    if (!reported) return std::nullopt;
    if (!*reported) continue;
    auto at = std::find_if(out.begin(), out.end(),
                           [&](const auto& p) { return same_name(p.first, name); });
    if (at != out.end()) at->second = **reported;  // a fresh backend reports every such name
  }
  return out;
}

void StartupParameters::learn(const List& overrides, const List& reported) {
  for (const auto& [name, value] : overrides) {
    if (learned_.size() >= kMaxLearned) return;
    auto at = std::find_if(reported.begin(), reported.end(),
                           [&](const auto& p) { return same_name(p.first, name); });
    learned_[key(name, value)] =
        at == reported.end() ? std::nullopt : std::optional<std::string>(at->second);
  }
}

}  // namespace wirepool::server
