// AuthCache and the meaning of auth_query's rows (users from the backend).
//
// Cases: a name's first asker starts the lookup and later askers wait until
// it completes (one lookup per name in flight); a verifier is served for its
// TTL and looked up again after; unknown and refused names live for the
// negative TTL, failures not at all; the cache holds at most `capacity` names,
// least recently used evicted first; clear() keeps lookups in flight. Rows: none
// = unknown, two = failed, NULL / md5 / plaintext / a malformed verifier =
// refused, a SCRAM verifier = found. Names: empty, 64 bytes, 10,000 bytes,
// control characters, invalid or overlong UTF-8 are not looked up.

#include <gtest/gtest.h>

#include "session/auth_query.hpp"

namespace wirepool::server {
namespace {

using std::chrono::seconds;
using Rows = std::vector<std::vector<std::optional<std::string>>>;

AuthResult found() {
  AuthResult r;
  r.answer = AuthAnswer::found;
  r.verifier = pg::scram::make_verifier("pw", "salt-salt-salt!!", 4096);
  return r;
}

AuthResult answer(AuthAnswer a) {
  AuthResult r;
  r.answer = a;
  return r;
}

TEST(AuthCache, OneLookupPerNameInFlightOthersWait) {
  AuthCache cache(10, seconds(60), seconds(5));
  const AuthCache::Clock::time_point t0{};
  EXPECT_EQ(cache.lookup("alice", t0).step, AuthCache::Step::start);
  EXPECT_EQ(cache.lookup("alice", t0).step, AuthCache::Step::wait);
  EXPECT_EQ(cache.lookup("bob", t0).step, AuthCache::Step::start);
  EXPECT_EQ(cache.in_flight(), 2u);
  cache.complete("alice", found(), t0);
  auto hit = cache.lookup("alice", t0 + seconds(1));
  ASSERT_EQ(hit.step, AuthCache::Step::hit);
  EXPECT_EQ(hit.result.answer, AuthAnswer::found);
  ASSERT_TRUE(hit.result.verifier);
  EXPECT_EQ(hit.result.verifier->iterations, 4096);
  EXPECT_EQ(cache.in_flight(), 1u);
}

TEST(AuthCache, VerifierLivesForTtlThenIsLookedUpAgain) {
  AuthCache cache(10, seconds(60), seconds(5));
  const AuthCache::Clock::time_point t0{};
  (void)cache.lookup("alice", t0);
  cache.complete("alice", found(), t0);
  EXPECT_EQ(cache.lookup("alice", t0 + seconds(59)).step, AuthCache::Step::hit);
  EXPECT_EQ(cache.lookup("alice", t0 + seconds(60)).step, AuthCache::Step::start);
  EXPECT_EQ(cache.size(), 0u);
}

TEST(AuthCache, NegativeAnswersLiveForNegativeTtlFailuresNotAtAll) {
  AuthCache cache(10, seconds(60), seconds(5));
  const AuthCache::Clock::time_point t0{};
  for (auto a : {AuthAnswer::unknown, AuthAnswer::refused}) {
    const std::string name(to_string(a));
    (void)cache.lookup(name, t0);
    cache.complete(name, answer(a), t0);
    auto hit = cache.lookup(name, t0 + seconds(4));
    ASSERT_EQ(hit.step, AuthCache::Step::hit) << name;
    EXPECT_EQ(hit.result.answer, a);
    EXPECT_EQ(cache.lookup(name, t0 + seconds(5)).step, AuthCache::Step::start) << name;
  }
  (void)cache.lookup("down", t0);
  cache.complete("down", answer(AuthAnswer::failed), t0);
  EXPECT_EQ(cache.lookup("down", t0).step, AuthCache::Step::start);
}

TEST(AuthCache, ZeroNegativeTtlCachesNoNegativeAnswer) {
  AuthCache cache(10, seconds(60), seconds(0));
  const AuthCache::Clock::time_point t0{};
  (void)cache.lookup("x", t0);
  cache.complete("x", answer(AuthAnswer::unknown), t0);
  EXPECT_EQ(cache.lookup("x", t0).step, AuthCache::Step::start);
}

TEST(AuthCache, HoldsAtMostCapacityNamesLeastRecentlyUsedEvicted) {
  AuthCache cache(3, seconds(60), seconds(60));
  const AuthCache::Clock::time_point t0{};
  for (const char* n : {"a", "b", "c"}) {
    (void)cache.lookup(n, t0);
    cache.complete(n, answer(AuthAnswer::unknown), t0);
  }
  EXPECT_EQ(cache.lookup("a", t0).step, AuthCache::Step::hit);  // a is now the most recent
  (void)cache.lookup("d", t0);
  cache.complete("d", answer(AuthAnswer::unknown), t0);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.lookup("b", t0).step, AuthCache::Step::start);  // evicted
  EXPECT_EQ(cache.lookup("a", t0).step, AuthCache::Step::hit);
  for (int i = 0; i < 10000; ++i) {
    const std::string n = "u" + std::to_string(i);
    (void)cache.lookup(n, t0);
    cache.complete(n, answer(AuthAnswer::unknown), t0);
  }
  EXPECT_EQ(cache.size(), 3u);
}

TEST(AuthCache, ClearForgetsAnswersButKeepsLookupsInFlight) {
  AuthCache cache(10, seconds(60), seconds(5));
  const AuthCache::Clock::time_point t0{};
  (void)cache.lookup("a", t0);
  cache.complete("a", found(), t0);
  (void)cache.lookup("b", t0);
  cache.clear();
  EXPECT_EQ(cache.lookup("a", t0).step, AuthCache::Step::start);
  EXPECT_EQ(cache.lookup("b", t0).step, AuthCache::Step::wait);
}

TEST(AuthRows, NoRowIsUnknownTwoRowsFail) {
  EXPECT_EQ(interpret_auth_rows({}).answer, AuthAnswer::unknown);
  Rows two{{"a", "x"}, {"a", "y"}};
  auto r = interpret_auth_rows(two);
  EXPECT_EQ(r.answer, AuthAnswer::failed);
  EXPECT_NE(r.reason.find("2 rows"), std::string::npos);
}

TEST(AuthRows, UnusablePasswordsAreRefused) {
  const Rows cases[] = {
      {{"a", std::nullopt}},
      {{"a", "md5" + std::string(32, 'f')}},
      {{"a", "plaintext-password"}},
      {{"a", "SCRAM-SHA-256$4096:bad$bad:bad"}},
  };
  for (const auto& rows : cases) {
    auto r = interpret_auth_rows(rows);
    EXPECT_EQ(r.answer, AuthAnswer::refused);
    EXPECT_FALSE(r.verifier);
    EXPECT_FALSE(r.reason.empty());
  }
  auto md5 = interpret_auth_rows({{{"a", "md5" + std::string(32, 'f')}}});
  EXPECT_NE(md5.reason.find("md5"), std::string::npos);
}

TEST(AuthRows, ScramVerifierIsFound) {
  const std::string v =
      "SCRAM-SHA-256$4096:c2FsdHNhbHRzYWx0$"
      "vMV0LaVgXJnV3yqzd7Aj3jEvKy2rTVDW0ydEl8b2m/g=:"
      "Mlq0sSe/5tPs5N2EIG+PqjgYGcytz7UIuU2K/xINDek=";
  auto r = interpret_auth_rows({{{"a", v}}});
  ASSERT_EQ(r.answer, AuthAnswer::found) << r.reason;
  ASSERT_TRUE(r.verifier);
  EXPECT_EQ(r.verifier->iterations, 4096);
  auto one_column = interpret_auth_rows({{{v}}});
  EXPECT_EQ(one_column.answer, AuthAnswer::found);
}

TEST(AuthName, OnlyShortPrintableUtf8NamesAreLookedUp) {
  EXPECT_TRUE(auth_name_acceptable("alice"));
  EXPECT_TRUE(auth_name_acceptable("j\xc3\xbcrgen"));  // ü
  EXPECT_TRUE(auth_name_acceptable(std::string(63, 'a')));
  EXPECT_FALSE(auth_name_acceptable(""));
  EXPECT_FALSE(auth_name_acceptable(std::string(64, 'a')));
  EXPECT_FALSE(auth_name_acceptable(std::string(10000, 'a')));
  EXPECT_FALSE(auth_name_acceptable(std::string("a\0b", 3)));
  EXPECT_FALSE(auth_name_acceptable("a\nb"));
  EXPECT_FALSE(auth_name_acceptable("\xff\xfe"));
  EXPECT_FALSE(auth_name_acceptable("\xc0\xaf"));      // overlong '/'
  EXPECT_FALSE(auth_name_acceptable("\xed\xa0\x80"));  // a surrogate
  EXPECT_FALSE(auth_name_acceptable("abc\xc3"));       // cut short
}

}  // namespace
}  // namespace wirepool::server
