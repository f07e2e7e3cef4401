// Session settings kept by wirepool for backends without settings, and the
// SET / RESET / SHOW parser.
//
// Cases: built-in values a PostgreSQL 15 server reports; SET then SHOW; names
// are case-insensitive and keep PostgreSQL's spelling (DateStyle, TimeZone);
// RESET returns to the startup value, RESET ALL to all of them; read-only
// settings refuse SET after startup (55P02); client_encoding accepts only
// UTF8/SQL_ASCII spellings (22023); DateStyle must stay ISO; reported changes
// come once and only for GUC_REPORT names; SHOW ALL lists built-ins and
// overrides; SET LOCAL is undone at the end of the transaction; the version
// moves on every change; standard_conforming_strings off (any spelling, as a
// mirror of a PostgreSQL backend too) makes backslashes escape, and the flag
// follows RESET, the undo of SET LOCAL, RESET ALL and a copy.
// Parser: SET x TO / = values, lists, quoted strings with '' and E'' escapes,
// DEFAULT, SET LOCAL, SET SESSION, SET TIME ZONE, SET NAMES, SET SCHEMA, SET
// TRANSACTION ignored, SET ROLE / SESSION AUTHORIZATION and their RESET as
// settings, RESET/SHOW forms, malformed statements answer 42601, non-setting
// statements answer nullopt.

#include "session/settings.hpp"

#include <gtest/gtest.h>

namespace wirepool::server {
namespace {

TEST(Settings, BuiltInsAreWhatPostgreSQLReports) {
  Settings s;
  EXPECT_EQ(s.get("server_encoding"), "UTF8");
  EXPECT_EQ(s.get("client_encoding"), "UTF8");
  EXPECT_EQ(s.get("DateStyle"), "ISO, MDY");
  EXPECT_EQ(s.get("integer_datetimes"), "on");
  EXPECT_EQ(s.get("standard_conforming_strings"), "on");
  EXPECT_EQ(s.get("TimeZone"), "UTC");
  EXPECT_EQ(s.get("server_version")->rfind("15.0 (wirepool ", 0), 0u);
  EXPECT_FALSE(s.get("no_such_setting").has_value());
}

TEST(Settings, StandardConformingStringsOffMakesBackslashesEscape) {
  Settings own;  // wirepool's own settings keep it on
  EXPECT_FALSE(own.backslash_quotes());
  EXPECT_TRUE(own.set("standard_conforming_strings", "off"));
  EXPECT_FALSE(own.backslash_quotes());
  Settings mirror;  // a PostgreSQL backend's, as the client set them
  mirror.mirror_only();
  EXPECT_FALSE(mirror.backslash_quotes());
  ASSERT_FALSE(mirror.set("Standard_Conforming_Strings", "OFF"));
  EXPECT_TRUE(mirror.backslash_quotes());
  ASSERT_FALSE(mirror.set("standard_conforming_strings", "on"));
  EXPECT_FALSE(mirror.backslash_quotes());
  ASSERT_FALSE(mirror.set("standard_conforming_strings", "false"));
  EXPECT_TRUE(mirror.backslash_quotes());
}

TEST(Settings, BackslashQuotesFollowsResetAndTheEndOfSetLocal) {
  Settings s;
  s.mirror_only();
  ASSERT_FALSE(s.set("standard_conforming_strings", "off"));  // a startup parameter
  s.commit_startup();
  EXPECT_TRUE(s.backslash_quotes());
  ASSERT_FALSE(s.set("standard_conforming_strings", "on"));
  EXPECT_FALSE(s.backslash_quotes());
  ASSERT_FALSE(s.reset("standard_conforming_strings"));  // back to the startup value
  EXPECT_TRUE(s.backslash_quotes());
  ASSERT_FALSE(s.set_local("standard_conforming_strings", "on"));
  EXPECT_FALSE(s.backslash_quotes());
  s.end_transaction();  // SET LOCAL undone
  EXPECT_TRUE(s.backslash_quotes());
  ASSERT_FALSE(s.set("standard_conforming_strings", "on"));
  s.reset_all();
  EXPECT_TRUE(s.backslash_quotes());
  Settings other;
  other = s;  // a copy keeps the flag with the values
  EXPECT_TRUE(other.backslash_quotes());
}

TEST(Settings, NamesAreCaseInsensitive) {
  Settings s;
  EXPECT_FALSE(s.set("datestyle", "iso, dmy"));
  EXPECT_EQ(s.get("DATESTYLE"), "ISO, DMY");
  EXPECT_FALSE(s.set("TIMEZONE", "Europe/Paris"));
  EXPECT_EQ(s.get("TimeZone"), "Europe/Paris");
}

TEST(Settings, ResetReturnsToStartupValue) {
  Settings s;
  ASSERT_FALSE(s.set("application_name", "from-startup"));
  s.commit_startup();
  ASSERT_FALSE(s.set("application_name", "changed"));
  ASSERT_FALSE(s.set("search_path", "a, b"));
  EXPECT_EQ(s.get("application_name"), "changed");
  ASSERT_FALSE(s.reset("application_name"));
  EXPECT_EQ(s.get("application_name"), "from-startup");
  ASSERT_FALSE(s.reset("search_path"));
  EXPECT_EQ(s.get("search_path"), "\"$user\", public");
}

TEST(Settings, ResetAllRestoresEverything) {
  Settings s;
  ASSERT_FALSE(s.set("application_name", "start"));
  s.commit_startup();
  ASSERT_FALSE(s.set("application_name", "x"));
  ASSERT_FALSE(s.set("myapp.flag", "1"));
  s.reset_all();
  EXPECT_EQ(s.get("application_name"), "start");
  EXPECT_FALSE(s.get("myapp.flag").has_value());
}

TEST(Settings, ReadOnlySettingsRefuseSetAfterStartup) {
  Settings s;
  ASSERT_FALSE(s.set("session_authorization", "alice"));
  s.commit_startup();
  auto err = s.set("server_version", "16");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->sqlstate, "55P02");
  EXPECT_EQ(s.get("session_authorization"), "alice");
}

TEST(Settings, ClientEncodingOnlyUtf8) {
  Settings s;
  EXPECT_FALSE(s.set("client_encoding", "utf-8"));
  EXPECT_FALSE(s.set("client_encoding", "SQL_ASCII"));
  EXPECT_EQ(s.get("client_encoding"), "UTF8");
  auto err = s.set("client_encoding", "LATIN1");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->sqlstate, "22023");
}

TEST(Settings, DateStyleMustStayIso) {
  Settings s;
  EXPECT_FALSE(s.set("DateStyle", "ISO"));
  EXPECT_EQ(s.get("DateStyle"), "ISO, MDY");
  auto err = s.set("DateStyle", "German");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->sqlstate, "22023");
  EXPECT_TRUE(s.set("DateStyle", "SQL, DMY"));
}

TEST(Settings, ReportedChangesComeOnceAndOnlyForReportedNames) {
  Settings s;
  s.commit_startup();
  ASSERT_FALSE(s.set("application_name", "a"));
  ASSERT_FALSE(s.set("application_name", "b"));
  ASSERT_FALSE(s.set("search_path", "x"));  // not GUC_REPORT
  auto changes = s.take_reported_changes();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].first, "application_name");
  EXPECT_EQ(changes[0].second, "b");
  EXPECT_TRUE(s.take_reported_changes().empty());
  ASSERT_FALSE(s.set("application_name", "b"));  // no change, nothing reported
  EXPECT_TRUE(s.take_reported_changes().empty());
}

TEST(Settings, ShowAllListsBuiltInsAndOverrides) {
  Settings s;
  ASSERT_FALSE(s.set("myapp.mode", "fast"));
  auto all = s.all();
  bool custom = false, builtin = false;
  for (auto& [n, v] : all) {
    custom = custom || (n == "myapp.mode" && v == "fast");
    builtin = builtin || (n == "TimeZone" && v == "UTC");
  }
  EXPECT_TRUE(custom);
  EXPECT_TRUE(builtin);
}

TEST(Settings, SetLocalIsUndoneWhenTheTransactionEnds) {
  Settings s;
  ASSERT_FALSE(s.set("application_name", "app"));
  s.commit_startup();
  ASSERT_FALSE(s.set_local("application_name", "inside"));
  ASSERT_FALSE(s.set_local("application_name", "again"));
  ASSERT_FALSE(s.set_local("search_path", "tmp"));
  EXPECT_EQ(s.get("application_name"), "again");
  (void)s.take_reported_changes();
  s.end_transaction();
  EXPECT_EQ(s.get("application_name"), "app");
  EXPECT_EQ(s.get("search_path"), "\"$user\", public");
  auto changes = s.take_reported_changes();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].second, "app");
  s.end_transaction();  // nothing left to undo
  EXPECT_EQ(s.get("application_name"), "app");
}

TEST(Settings, VersionMovesOnEveryChange) {
  Settings s;
  auto v0 = s.version();
  ASSERT_FALSE(s.set("statement_timeout", "5s"));
  EXPECT_NE(s.version(), v0);
  auto v1 = s.version();
  ASSERT_FALSE(s.reset("statement_timeout"));
  EXPECT_NE(s.version(), v1);
}

// ---- parser

SetCommand parse_set(std::string_view stmt) {
  auto r = parse_setting_command(stmt);
  EXPECT_TRUE(r.has_value()) << stmt;
  auto* cmd = std::get_if<SettingCommand>(&*r);
  EXPECT_NE(cmd, nullptr) << stmt;
  auto* set = std::get_if<SetCommand>(cmd);
  EXPECT_NE(set, nullptr) << stmt;
  return *set;
}

TEST(SettingParser, SetForms) {
  struct Case {
    std::string_view stmt, name, value;
  } cases[] = {
      {"SET application_name = 'x'", "application_name", "x"},
      {"set Application_Name to psql", "application_name", "psql"},
      {"SET search_path TO a, \"B\", 'c d'", "search_path", "a, B, c d"},
      {"SET statement_timeout = 5000", "statement_timeout", "5000"},
      {"SET extra_float_digits = -3", "extra_float_digits", "-3"},
      {"SET SESSION DateStyle = 'ISO, DMY'", "datestyle", "ISO, DMY"},
      {"SET TIME ZONE 'Europe/Paris'", "timezone", "Europe/Paris"},
      {"SET NAMES 'UTF8'", "client_encoding", "UTF8"},
      {"SET SCHEMA 'app'", "search_path", "app"},
      {"SET x = 'it''s'", "x", "it's"},
      {"SET x = E'a\\'b'", "x", "a'b"},
      {"SET myapp.flag = on;", "myapp.flag", "on"},
      {"  /* c */ SET x = 1 -- trailing", "x", "1"},
  };
  for (const auto& c : cases) {
    auto cmd = parse_set(c.stmt);
    EXPECT_EQ(cmd.name, c.name) << c.stmt;
    ASSERT_TRUE(cmd.value.has_value()) << c.stmt;
    EXPECT_EQ(*cmd.value, c.value) << c.stmt;
  }
}

TEST(SettingParser, SetDefaultAndLocal) {
  auto d = parse_set("SET search_path TO DEFAULT");
  EXPECT_FALSE(d.value.has_value());
  auto l = parse_set("SET LOCAL statement_timeout = 10");
  EXPECT_TRUE(l.local);
  auto tz = parse_set("SET TIME ZONE LOCAL");
  EXPECT_EQ(tz.name, "timezone");
  EXPECT_FALSE(tz.value.has_value());
}

TEST(SettingParser, IgnoredAndRefusedForms) {
  for (auto stmt :
       {"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
        "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", "SET CONSTRAINTS ALL DEFERRED"}) {
    auto r = parse_setting_command(stmt);
    ASSERT_TRUE(r) << stmt;
    auto* cmd = std::get_if<SettingCommand>(&*r);
    ASSERT_TRUE(cmd) << stmt;
    EXPECT_TRUE(std::holds_alternative<IgnoredSet>(*cmd)) << stmt;
  }
  // Roles are settings to follow on PostgreSQL backends (the session layer
  // refuses them for others).
  auto set_of = [](std::string_view stmt) -> std::string {
    auto r = parse_setting_command(stmt);
    auto* cmd = r ? std::get_if<SettingCommand>(&*r) : nullptr;
    auto* set = cmd ? std::get_if<SetCommand>(cmd) : nullptr;
    return set ? set->name + "=" + set->value.value_or("DEFAULT") : "?";
  };
  EXPECT_EQ(set_of("SET ROLE Admin"), "role=admin");
  EXPECT_EQ(set_of("set role 'Mixed'"), "role=Mixed");
  EXPECT_EQ(set_of("SET ROLE NONE"), "role=none");
  EXPECT_EQ(set_of("SET SESSION AUTHORIZATION bob"), "session_authorization=bob");
  EXPECT_EQ(set_of("SET SESSION AUTHORIZATION DEFAULT"), "session_authorization=DEFAULT");
}

TEST(SettingParser, ResetAndShowForms) {
  auto name_of = [](std::string_view stmt) -> std::string {
    auto r = parse_setting_command(stmt);
    auto& cmd = std::get<SettingCommand>(*r);
    if (auto* reset = std::get_if<ResetCommand>(&cmd)) return "reset:" + reset->name;
    if (auto* show = std::get_if<ShowCommand>(&cmd)) return "show:" + show->name;
    return "?";
  };
  EXPECT_EQ(name_of("RESET ALL"), "reset:all");
  EXPECT_EQ(name_of("reset Search_Path"), "reset:search_path");
  EXPECT_EQ(name_of("RESET TIME ZONE"), "reset:timezone");
  EXPECT_EQ(name_of("SHOW ALL"), "show:all");
  EXPECT_EQ(name_of("SHOW server_version;"), "show:server_version");
  EXPECT_EQ(name_of("SHOW TRANSACTION ISOLATION LEVEL"), "show:transaction_isolation");
  EXPECT_EQ(name_of("SHOW TIME ZONE"), "show:timezone");
  EXPECT_EQ(name_of("RESET ROLE"), "reset:role");
  EXPECT_EQ(name_of("RESET SESSION AUTHORIZATION"), "reset:session_authorization");
}

TEST(SettingParser, MalformedIsSyntaxError) {
  for (auto stmt : {"SET", "SET x", "SET x = ", "SET x = 1 2", "SET x = 'unterminated", "SHOW",
                    "SHOW a b", "RESET", "SET = 1"}) {
    auto r = parse_setting_command(stmt);
    ASSERT_TRUE(r) << stmt;
    auto* err = std::get_if<SettingError>(&*r);
    ASSERT_TRUE(err) << stmt;
    EXPECT_EQ(err->sqlstate, "42601") << stmt;
  }
}

TEST(SettingParser, OtherStatementsAreNotSettings) {
  for (auto stmt : {"SELECT 1", "INSERT INTO t VALUES (1)", "SETTLE", "", "-- SET x = 1"}) {
    EXPECT_FALSE(parse_setting_command(stmt).has_value()) << stmt;
  }
}

}  // namespace
}  // namespace wirepool::server
