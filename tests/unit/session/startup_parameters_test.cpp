// StartupParameters: what a login reports without a backend.
//
// Cases: nothing is answered before a backend reported its defaults; no
// startup settings answer the defaults; a setting seen accepted answers the
// value the backend reported for it (normalized, not the client's spelling),
// names compared without case; an unseen setting or value is not answered;
// printable ASCII application_name under 64 bytes is answered as sent, others
// are not; settings the backend does not report are accepted without changing
// the list; new defaults forget what was learned; the learned table is capped.

#include <gtest/gtest.h>

#include "session/startup_parameters.hpp"

namespace wirepool::server {
namespace {

using List = StartupParameters::List;

const List kDefaults = {{"application_name", ""},
                        {"DateStyle", "ISO, MDY"},
                        {"standard_conforming_strings", "on"},
                        {"TimeZone", "Etc/UTC"}};

TEST(StartupParameters, NothingBeforeABackendOpened) {
  StartupParameters p;
  EXPECT_FALSE(p.answer({}).has_value());
}

TEST(StartupParameters, NoSettingsGetTheDefaults) {
  StartupParameters p;
  p.note_defaults(kDefaults);
  EXPECT_EQ(p.answer({}), kDefaults);
}

TEST(StartupParameters, LearnedSettingsAnswerTheReportedValue) {
  StartupParameters p;
  p.note_defaults(kDefaults);
  const List overrides = {{"datestyle", "german"}, {"timezone", "utc"}};
  EXPECT_FALSE(p.answer(overrides).has_value());
  List reported = kDefaults;
  reported[1].second = "German, DMY";
  reported[3].second = "UTC";
  p.learn(overrides, reported);
  EXPECT_EQ(p.answer(overrides), reported);
  // One of them alone, in another order with the other: each is known.
  List one = kDefaults;
  one[3].second = "UTC";
  EXPECT_EQ(p.answer({{"TimeZone", "utc"}}), one);
  EXPECT_FALSE(p.answer({{"timezone", "UTC"}}).has_value()) << "another spelling is unseen";
  EXPECT_FALSE(p.answer({{"timezone", "utc"}, {"intervalstyle", "iso_8601"}}).has_value());
}

TEST(StartupParameters, ApplicationNameIsReportedAsSentWhenPrintable) {
  StartupParameters p;
  p.note_defaults(kDefaults);
  List want = kDefaults;
  want[0].second = "worker-17";
  EXPECT_EQ(p.answer({{"application_name", "worker-17"}}), want);
  EXPECT_FALSE(p.answer({{"application_name", "caf\xc3\xa9"}}).has_value());
  EXPECT_FALSE(p.answer({{"application_name", "a\nb"}}).has_value());
  EXPECT_FALSE(p.answer({{"application_name", std::string(64, 'x')}}).has_value());
  EXPECT_TRUE(p.answer({{"application_name", std::string(63, 'x')}}).has_value());
}

TEST(StartupParameters, UnreportedSettingsAreAcceptedAsIs) {
  StartupParameters p;
  p.note_defaults(kDefaults);
  p.learn({{"statement_timeout", "5s"}}, kDefaults);
  EXPECT_EQ(p.answer({{"statement_timeout", "5s"}}), kDefaults);
  EXPECT_FALSE(p.answer({{"statement_timeout", "6s"}}).has_value());
}

TEST(StartupParameters, NewDefaultsForgetWhatWasLearned) {
  StartupParameters p;
  p.note_defaults(kDefaults);
  p.learn({{"extra_float_digits", "3"}}, kDefaults);
  p.note_defaults(kDefaults);  // the same list again: kept
  EXPECT_EQ(p.learned(), 1u);
  List changed = kDefaults;
  changed[1].second = "SQL, DMY";  // ALTER ROLE … SET DateStyle, then a new backend
  p.note_defaults(changed);
  EXPECT_EQ(p.learned(), 0u);
  EXPECT_FALSE(p.answer({{"extra_float_digits", "3"}}).has_value());
  EXPECT_EQ(p.answer({}), changed);
}

TEST(StartupParameters, TheTableIsCapped) {
  StartupParameters p;
  p.note_defaults(kDefaults);
  for (size_t i = 0; i < StartupParameters::kMaxLearned + 10; ++i) {
    p.learn({{"search_path", "s" + std::to_string(i)}}, kDefaults);
  }
  EXPECT_EQ(p.learned(), StartupParameters::kMaxLearned);
  EXPECT_FALSE(p.answer({{"search_path", "s1030"}}).has_value());
  EXPECT_TRUE(p.answer({{"search_path", "s0"}}).has_value());
}

}  // namespace
}  // namespace wirepool::server
