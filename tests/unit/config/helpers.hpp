#pragma once
// Helpers shared by the configuration tests: load text and look at its problems.

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace wirepool::config::testing {

/// The name under which test texts are loaded: messages start with it, and a
/// relative state_dir starts in its directory.
inline const std::string kFile = "/etc/wirepool/wirepool.yaml";

/// The two lines that make any text a complete configuration; appended after a
/// test's own lines, so they do not shift the lines a test asserts.
inline const std::string kTail =
    "databases: [{name: demo, driver: sqlite, connection: demo.db}]\n"
    "users: [{name: demo, password: demo}]\n";

/// The problems load_string() reports for `yaml`; fails the test if it loads.
inline std::vector<Problem> problems_of(std::string_view yaml,
                                        DatabaseValidator validator = nullptr) {
  try {
    load_string(yaml, kFile, validator);
  } catch (const ConfigError& e) {
    return e.problems();
  }
  ADD_FAILURE() << "loaded without a problem:\n" << yaml;
  return {};
}

inline std::string list(const std::vector<Problem>& problems) {
  std::string out;
  for (const auto& p : problems)
    out += "  " + p.to_string() + "\n";
  return out;
}

/// `problems` has one at line:column whose message contains `text`.
inline ::testing::AssertionResult has_problem(const std::vector<Problem>& problems, int line,
                                              int column, std::string_view text) {
  for (const auto& p : problems) {
    if (p.line == line && p.column == column && p.message.find(text) != std::string::npos) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure()
         << "no problem at " << line << ":" << column << " containing \"" << text << "\" among:\n"
         << list(problems);
}

/// Loading `yaml` reports exactly one problem, at line:column, containing `text`.
inline ::testing::AssertionResult one_problem(std::string_view yaml, int line, int column,
                                              std::string_view text) {
  const std::vector<Problem> problems = problems_of(yaml);
  if (problems.size() != 1) {
    return ::testing::AssertionFailure() << "expected one problem, got " << problems.size() << ":\n"
                                         << list(problems);
  }
  return has_problem(problems, line, column, text);
}

}  // namespace wirepool::config::testing
