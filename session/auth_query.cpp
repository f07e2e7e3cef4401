#include "session/auth_query.hpp"

namespace wirepool::server {

std::string_view to_string(AuthAnswer a) {
  switch (a) {
    case AuthAnswer::found:
      return "found";
    case AuthAnswer::unknown:
      return "unknown";
    case AuthAnswer::refused:
      return "refused";
    case AuthAnswer::failed:
      return "failed";
  }
  return "?";
}

bool auth_name_acceptable(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  size_t i = 0;
  while (i < name.size()) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c < 0x20 || c == 0x7f) return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    // UTF-8: the lead byte's length, continuation bytes, no overlong forms,
    // no surrogates, nothing above U+10FFFF.
    size_t len = 0;
    uint32_t cp = 0;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > name.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(name[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0)) {
      return false;
    }
    i += len;
  }
  return true;
}

AuthResult interpret_auth_rows(const std::vector<std::vector<std::optional<std::string>>>& rows) {
  AuthResult r;
  if (rows.empty()) {
    r.answer = AuthAnswer::unknown;
    r.reason = "auth_query found no such role";
    return r;
  }
  if (rows.size() > 1) {
    r.answer = AuthAnswer::failed;
    r.reason = "auth_query returned " + std::to_string(rows.size()) + " rows, expected one";
    return r;
  }
  const auto& row = rows.front();
  if (row.empty()) {
    r.answer = AuthAnswer::failed;
    r.reason = "auth_query returned no column";
    return r;
  }
  const auto& passwd = row.size() >= 2 ? row[1] : row[0];
  r.answer = AuthAnswer::refused;
  if (!passwd) {
    r.reason = "the role has no password (NULL)";
  } else if (passwd->starts_with("md5") && passwd->size() == 35) {
    r.reason = "the role's password is an md5 hash; wirepool accepts SCRAM-SHA-256 verifiers only";
  } else if (passwd->starts_with("SCRAM-SHA-256$")) {
    if (auto v = pg::scram::parse_verifier(*passwd)) {
      r.answer = AuthAnswer::found;
      r.verifier = std::move(*v);
      r.reason.clear();
    } else {
      r.reason = "the role's SCRAM-SHA-256 verifier does not parse";
    }
  } else {
    r.reason =
        "the role's password is neither a SCRAM-SHA-256 verifier nor an md5 hash "
        "(plaintext?); wirepool accepts SCRAM-SHA-256 verifiers only";
  }
  return r;
}

AuthCache::AuthCache(size_t capacity, Clock::duration ttl, Clock::duration negative_ttl)
    : capacity_(capacity == 0 ? 1 : capacity), ttl_(ttl), negative_ttl_(negative_ttl) {}

AuthCache::Lookup AuthCache::lookup(const std::string& name, Clock::time_point now) {
  Lookup out;
  if (auto it = entries_.find(name); it != entries_.end()) {
    if (now < it->second.expires) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      out.step = Step::hit;
      out.result = it->second.result;
      return out;
    }
    lru_.erase(it->second.lru);
    entries_.erase(it);
  }
  out.step = in_flight_.insert(name).second ? Step::start : Step::wait;
  return out;
}

void AuthCache::complete(const std::string& name, const AuthResult& result, Clock::time_point now) {
  in_flight_.erase(name);
  if (result.answer == AuthAnswer::failed) return;
  const auto life = result.answer == AuthAnswer::found ? ttl_ : negative_ttl_;
  if (life <= Clock::duration::zero()) return;
  if (auto it = entries_.find(name); it != entries_.end()) {
    lru_.erase(it->second.lru);
    entries_.erase(it);
  }
  while (entries_.size() >= capacity_ && !lru_.empty()) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(name);
  entries_.emplace(name, Entry{result, now + life, lru_.begin()});
}

void AuthCache::clear() {
  entries_.clear();
  lru_.clear();
}

}  // namespace wirepool::server
