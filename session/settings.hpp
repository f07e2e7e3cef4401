#pragma once
// Client session settings (PostgreSQL GUCs) kept by wirepool for backends that
// have none (SQLite, MySQL, ODBC, TDS): startup parameters, SET / RESET / SHOW.
// A PostgreSQL application connects unconfigured: psql, PgJDBC (which sends
// extra_float_digits and application_name at startup) and node-postgres.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace wirepool::server {

/// A refused setting: SQLSTATE and message for the client.
struct SettingError {
  std::string sqlstate;
  std::string message;
};

class Settings {
 public:
  /// Built-in values a PostgreSQL 15 server would report (server_version etc.).
  Settings();
  Settings(const Settings& other);
  Settings& operator=(const Settings& other);
  Settings(Settings&&) noexcept = default;
  Settings& operator=(Settings&&) noexcept = default;
  ~Settings();
  /// For a PostgreSQL backend the settings are the backend's: this object only
  /// mirrors what the client set, to replay it on whichever backend serves it
  /// next, and does not judge values (the backend does).
  void mirror_only() { mirror_ = true; }
  bool is_mirror() const { return mirror_; }
  /// What the client set (startup parameters and SET), in order.
  std::vector<std::pair<std::string, std::string>> overrides() const;
  /// overrides() == `v`, without building it (order matters: a different
  /// order answers false, which only costs the caller its slow path).
  bool overrides_equal(const std::vector<std::pair<std::string, std::string>>& v) const;

  /// Sets a value as a startup parameter or SET would. Names are case-insensitive.
  std::optional<SettingError> set(std::string_view name, std::string_view value);
  /// RESET name: back to the startup value (or the built-in default).
  std::optional<SettingError> reset(std::string_view name);
  void reset_all();
  /// SET LOCAL: like set(), undone when the transaction ends.
  std::optional<SettingError> set_local(std::string_view name, std::string_view value);
  /// The transaction ended: undo its SET LOCALs. Cheap when there were none.
  void end_transaction();
  /// Makes the current values the ones RESET returns to (after the startup packet).
  void commit_startup();
  /// Bumped on every change, so callers can cache derived values.
  uint32_t version() const { return version_; }
  std::optional<std::string> get(std::string_view name) const;
  /// standard_conforming_strings is off: a backslash escapes in every '...'
  /// literal of the client's SQL (sql::split_statements). Kept up to date on
  /// every change, so the relay's check of each batch reads one flag.
  bool backslash_quotes() const { return backslash_quotes_; }
  /// Every setting, sorted by name (SHOW ALL).
  std::vector<std::pair<std::string, std::string>> all() const;

  /// Settings PostgreSQL reports with ParameterStatus (GUC_REPORT), in a fixed order.
  static const std::vector<std::string_view>& reported();
  /// Reported settings changed since the last call (for ParameterStatus after SET).
  std::vector<std::pair<std::string, std::string>> take_reported_changes();

 private:
  /// Name/value pairs packed in one string ("name\0value\0..."): a client
  /// usually overrides a handful of settings, and an idle client should cost
  /// little memory. Built-in values are shared, not copied per client.
  class Packed {
   public:
    std::optional<std::string_view> find(std::string_view name) const;
    void set(std::string_view name, std::string_view value);
    bool erase(std::string_view name);
    template <class F>
    void each(F f) const {
      size_t i = 0;
      while (i < data_.size()) {
        size_t a = data_.find('\0', i);
        size_t b = data_.find('\0', a + 1);
        f(std::string_view(data_).substr(i, a - i),
          std::string_view(data_).substr(a + 1, b - a - 1));
        i = b + 1;
      }
    }
    void clear() { data_.clear(); }

   private:
    std::string data_;
  };

  std::string current(const std::string& name) const;

  /// Copies the startup values out of overrides_ before the first change
  /// after startup (until then they are the same, and kept once).
  void keep_startup();
  /// Recomputes what is derived from overrides_ after they changed.
  void overrides_changed();

  /// What only a client that changes settings after its startup needs: made
  /// at its first change, so an idle client that only logged in holds none.
  struct Changes {
    Packed startup;       ///< overrides as of commit_startup(), once they differ
    std::string changed;  ///< reported names changed since the last take, "\0"-separated
    /// Values to restore when the transaction ends ("name\0had\0value\0", had = 0/1).
    std::string local_undo;
  };
  Changes& changes();
  /// Records that reported setting `name` changed (take_reported_changes).
  void note_changed(std::string_view name);

  Packed overrides_;  ///< values that differ from the built-ins
  std::unique_ptr<Changes> changes_;
  uint32_t version_ = 0;
  bool startup_is_current_ = false;
  bool backslash_quotes_ = false;  ///< standard_conforming_strings off (overrides_)
  bool started_ = false;
  bool mirror_ = false;
};

/// The commands the session layer answers itself for such backends.
struct SetCommand {
  std::string name;                  ///< lower-cased
  std::optional<std::string> value;  ///< nullopt = DEFAULT (same as RESET)
  bool local = false;                ///< SET LOCAL
};
struct ResetCommand {
  std::string name;  ///< lower-cased; "all" for RESET ALL
};
struct ShowCommand {
  std::string name;  ///< lower-cased; "all" for SHOW ALL
};
/// SET TRANSACTION / SET CONSTRAINTS / SET SESSION CHARACTERISTICS: accepted, no effect.
struct IgnoredSet {};
using SettingCommand = std::variant<SetCommand, ResetCommand, ShowCommand, IgnoredSet>;

/// Parses SET / RESET / SHOW in PostgreSQL syntax ("SET search_path TO a, b",
/// "SET TIME ZONE 'UTC'", "SET SESSION x = 1", "SET NAMES 'UTF8'"). nullopt when
/// `stmt` is not one of them; a SettingError (42601) when it is but is malformed.
std::optional<std::variant<SettingCommand, SettingError>> parse_setting_command(
    std::string_view stmt);

}  // namespace wirepool::server
