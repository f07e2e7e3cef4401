#include "session/settings.hpp"

#include <algorithm>
#include <cctype>

#include "wirepool_version.hpp"

namespace wirepool::server {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

/// Canonical spelling for the names PostgreSQL reports in mixed case.
std::string canonical_name(std::string_view name) {
  std::string n = lower(name);
  if (n == "datestyle") return "DateStyle";
  if (n == "timezone") return "TimeZone";
  if (n == "intervalstyle") return "IntervalStyle";
  return n;
}

std::string squash(std::string_view s) {  // "UTF-8" -> "utf8"
  std::string out;
  for (char c : s) {
    if (c == '-' || c == '_' || c == ' ') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

const std::map<std::string, std::string>& builtins() {
  static const std::map<std::string, std::string> m = {
      {"application_name", ""},
      {"client_encoding", "UTF8"},
      {"DateStyle", "ISO, MDY"},
      {"default_transaction_read_only", "off"},
      {"extra_float_digits", "1"},
      {"idle_in_transaction_session_timeout", "0"},
      {"in_hot_standby", "off"},
      {"integer_datetimes", "on"},
      {"IntervalStyle", "postgres"},
      {"is_superuser", "off"},
      {"lock_timeout", "0"},
      {"max_identifier_length", "63"},
      {"search_path", "\"$user\", public"},
      {"server_encoding", "UTF8"},
      {"server_version", "15.0 (wirepool " WIREPOOL_VERSION ")"},
      {"server_version_num", "150000"},
      {"session_authorization", ""},
      {"standard_conforming_strings", "on"},
      {"statement_timeout", "0"},
      {"TimeZone", "UTC"},
      {"transaction_isolation", "serializable"},
  };
  return m;
}

bool read_only(const std::string& n) {
  return n == "server_version" || n == "server_version_num" || n == "server_encoding" ||
         n == "integer_datetimes" || n == "max_identifier_length" || n == "is_superuser" ||
         n == "in_hot_standby" || n == "session_authorization";
}

}  // namespace

// ---- Packed

std::optional<std::string_view> Settings::Packed::find(std::string_view name) const {
  std::optional<std::string_view> out;
  each([&](std::string_view n, std::string_view v) {
    if (n == name) out = v;
  });
  return out;
}

void Settings::Packed::set(std::string_view name, std::string_view value) {
  erase(name);
  data_.append(name);
  data_ += '\0';
  data_.append(value);
  data_ += '\0';
}

bool Settings::Packed::erase(std::string_view name) {
  size_t i = 0;
  while (i < data_.size()) {
    size_t a = data_.find('\0', i);
    size_t b = data_.find('\0', a + 1);
    if (std::string_view(data_).substr(i, a - i) == name) {
      data_.erase(i, b + 1 - i);
      return true;
    }
    i = b + 1;
  }
  return false;
}

// ---- Settings

Settings::Settings() = default;
Settings::~Settings() = default;

Settings::Settings(const Settings& other)
    : overrides_(other.overrides_),
      changes_(other.changes_ ? std::make_unique<Changes>(*other.changes_) : nullptr),
      version_(other.version_),
      startup_is_current_(other.startup_is_current_),
      backslash_quotes_(other.backslash_quotes_),
      started_(other.started_),
      mirror_(other.mirror_) {}

Settings& Settings::operator=(const Settings& other) {
  if (this != &other) *this = Settings(other);
  return *this;
}

Settings::Changes& Settings::changes() {
  if (!changes_) changes_ = std::make_unique<Changes>();
  return *changes_;
}

void Settings::note_changed(std::string_view name) {
  std::string& c = changes().changed;
  c.append(name);
  c += '\0';
}

std::string Settings::current(const std::string& name) const {
  if (auto v = overrides_.find(name)) return std::string(*v);
  if (auto b = builtins().find(name); b != builtins().end()) return b->second;
  return {};
}

namespace {
bool is_known(const std::string& name) {
  return builtins().count(name) > 0;
}
}  // namespace

std::optional<SettingError> Settings::set(std::string_view raw_name, std::string_view value) {
  std::string name = canonical_name(raw_name);
  if (name.empty()) return SettingError{"42601", "empty configuration parameter name"};
  if (read_only(name) && started_) {
    return SettingError{"55P02", "parameter \"" + name + "\" cannot be changed"};
  }
  std::string v(value);
  if (mirror_) {
    // The backend has judged it already (or will, at replay).
  } else if (name == "client_encoding") {
    std::string s = squash(value);
    if (s != "utf8" && s != "unicode" && s != "sqlascii") {
      return SettingError{
          "22023", "wirepool speaks UTF8 only: client_encoding \"" + v + "\" is not supported"};
    }
    v = "UTF8";
  } else if (name == "DateStyle") {
    // Values are printed in ISO format; the order part only affects input.
    std::string s = lower(value);
    if (s.find("iso") == std::string::npos || s.find("sql") != std::string::npos ||
        s.find("postgres") != std::string::npos || s.find("german") != std::string::npos) {
      return SettingError{"22023", "wirepool prints dates in ISO format only: DateStyle \"" + v +
                                       "\" is not supported"};
    }
    v = s.find("dmy") != std::string::npos   ? "ISO, DMY"
        : s.find("ymd") != std::string::npos ? "ISO, YMD"
                                             : "ISO, MDY";
  } else if (name == "standard_conforming_strings") {
    std::string s = lower(value);
    if (s != "on" && s != "true" && s != "1") {
      return SettingError{"22023", "standard_conforming_strings can only be on"};
    }
    v = "on";
  } else if (name == "extra_float_digits") {
    // Floats are always printed shortest-exact (as PostgreSQL 12+ does for >= 1).
    bool ok = !v.empty();
    for (size_t i = 0; i < v.size(); ++i) {
      if (!(std::isdigit(static_cast<unsigned char>(v[i])) || (i == 0 && v[i] == '-'))) ok = false;
    }
    if (!ok) {
      return SettingError{"22023",
                          "invalid value for parameter \"extra_float_digits\": \"" + v + "\""};
    }
  }
  if (current(name) == v && (overrides_.find(name) || is_known(name))) return std::nullopt;
  keep_startup();
  ++version_;
  auto b = builtins().find(name);
  if (b != builtins().end() && b->second == v) {
    overrides_.erase(name);
  } else {
    overrides_.set(name, v);
  }
  overrides_changed();
  note_changed(name);
  return std::nullopt;
}

std::optional<SettingError> Settings::reset(std::string_view raw_name) {
  std::string name = canonical_name(raw_name);
  if (read_only(name)) return SettingError{"55P02", "parameter \"" + name + "\" cannot be changed"};
  keep_startup();
  std::string before = current(name);
  bool had = overrides_.find(name).has_value();
  if (auto s = changes_ ? changes_->startup.find(name) : std::nullopt) {
    overrides_.set(name, *s);
  } else {
    overrides_.erase(name);
  }
  overrides_changed();
  if (current(name) != before || had != overrides_.find(name).has_value()) {
    note_changed(name);
    ++version_;
  }
  return std::nullopt;
}

std::optional<SettingError> Settings::set_local(std::string_view raw_name, std::string_view value) {
  std::string name = canonical_name(raw_name);
  // Remember the value before the transaction's first SET LOCAL of this name.
  bool saved = false;
  size_t i = 0;
  std::string& local_undo = changes().local_undo;
  while (i < local_undo.size()) {
    size_t a = local_undo.find('\0', i);
    size_t b = local_undo.find('\0', a + 1);
    size_t c = local_undo.find('\0', b + 1);
    saved = saved || std::string_view(local_undo).substr(i, a - i) == name;
    i = c + 1;
  }
  auto before = overrides_.find(name);
  std::string undo =
      name + '\0' + (before ? "1" : "0") + '\0' + std::string(before.value_or("")) + '\0';
  auto err = set(name, value);
  if (!err && !saved) changes().local_undo += undo;
  return err;
}

void Settings::end_transaction() {
  if (!changes_ || changes_->local_undo.empty()) return;
  // Moved out: note_changed() may append to changes_ meanwhile.
  const std::string undo = std::move(changes_->local_undo);
  changes_->local_undo.clear();
  size_t i = 0;
  while (i < undo.size()) {
    size_t a = undo.find('\0', i);
    size_t b = undo.find('\0', a + 1);
    size_t c = undo.find('\0', b + 1);
    std::string name = undo.substr(i, a - i);
    bool had = undo[a + 1] == '1';
    std::string value = undo.substr(b + 1, c - b - 1);
    if (current(name) != (had ? value : (builtins().count(name) ? builtins().at(name) : ""))) {
      note_changed(name);
    }
    if (had) {
      overrides_.set(name, value);
    } else {
      overrides_.erase(name);
    }
    ++version_;
    i = c + 1;
  }
  overrides_changed();
}

void Settings::reset_all() {
  keep_startup();
  ++version_;
  std::vector<std::string> names;
  overrides_.each([&](std::string_view n, std::string_view) { names.emplace_back(n); });
  if (changes_) {
    changes_->startup.each([&](std::string_view n, std::string_view) { names.emplace_back(n); });
  }
  for (const auto& n : names) {
    if (!read_only(n)) (void)reset(n);
  }
}

void Settings::commit_startup() {
  // The startup values are overrides_ now, and nothing is left to report.
  if (changes_ && changes_->local_undo.empty()) changes_.reset();
  if (changes_) {
    changes_->startup.clear();
    changes_->changed.clear();
  }
  startup_is_current_ = true;
  started_ = true;
}

void Settings::keep_startup() {
  if (!startup_is_current_) return;
  changes().startup = overrides_;
  startup_is_current_ = false;
}

std::optional<std::string> Settings::get(std::string_view name) const {
  std::string n = canonical_name(name);
  if (auto v = overrides_.find(n)) return std::string(*v);
  if (auto b = builtins().find(n); b != builtins().end()) return b->second;
  return std::nullopt;
}

void Settings::overrides_changed() {
  auto v = overrides_.find("standard_conforming_strings");
  const std::string l = v ? lower(*v) : std::string();
  backslash_quotes_ = l == "off" || l == "false" || l == "no" || l == "0";
}

std::vector<std::pair<std::string, std::string>> Settings::overrides() const {
  std::vector<std::pair<std::string, std::string>> out;
  overrides_.each([&](std::string_view n, std::string_view v) { out.emplace_back(n, v); });
  return out;
}

bool Settings::overrides_equal(const std::vector<std::pair<std::string, std::string>>& v) const {
  size_t i = 0;
  bool same = true;
  overrides_.each([&](std::string_view n, std::string_view val) {
    same = same && i < v.size() && v[i].first == n && v[i].second == val;
    ++i;
  });
  return same && i == v.size();
}

std::vector<std::pair<std::string, std::string>> Settings::all() const {
  std::map<std::string, std::string> m = builtins();
  overrides_.each([&](std::string_view n, std::string_view v) { m[std::string(n)] = v; });
  return {m.begin(), m.end()};
}

const std::vector<std::string_view>& Settings::reported() {
  static const std::vector<std::string_view> r = {"application_name",
                                                  "client_encoding",
                                                  "DateStyle",
                                                  "default_transaction_read_only",
                                                  "in_hot_standby",
                                                  "integer_datetimes",
                                                  "IntervalStyle",
                                                  "is_superuser",
                                                  "server_encoding",
                                                  "server_version",
                                                  "session_authorization",
                                                  "standard_conforming_strings",
                                                  "TimeZone"};
  return r;
}

std::vector<std::pair<std::string, std::string>> Settings::take_reported_changes() {
  std::vector<std::pair<std::string, std::string>> out;
  if (!changes_) return out;
  const std::string& changed = changes_->changed;
  size_t i = 0;
  while (i < changed.size()) {
    size_t e = changed.find('\0', i);
    std::string name = changed.substr(i, e - i);
    i = e + 1;
    const auto& rep = reported();
    if (std::find(rep.begin(), rep.end(), name) == rep.end()) continue;
    bool seen = false;
    for (auto& [n, v] : out)
      seen = seen || n == name;
    if (!seen) out.emplace_back(name, current(name));
  }
  changes_->changed.clear();
  changes_->changed.shrink_to_fit();
  return out;
}

// ---------------------------------------------------------------------------
// SET / RESET / SHOW parsing

namespace {

struct Token {
  enum Type { word, quoted_ident, string, number, punct, end } type;
  std::string text;  // word: as written; string/quoted: content
};

class Tokenizer {
 public:
  explicit Tokenizer(std::string_view s) : s_(s) {}
  Token next() {
    skip();
    if (i_ >= s_.size()) return {Token::end, ""};
    char c = s_[i_];
    if (c == '\'' || ((c == 'E' || c == 'e') && i_ + 1 < s_.size() && s_[i_ + 1] == '\'')) {
      bool escapes = c != '\'';
      if (escapes) ++i_;
      ++i_;
      std::string out;
      while (i_ < s_.size()) {
        char d = s_[i_++];
        if (d == '\'') {
          if (i_ < s_.size() && s_[i_] == '\'') {
            out += '\'';
            ++i_;
            continue;
          }
          return {Token::string, out};
        }
        if (escapes && d == '\\' && i_ < s_.size()) d = s_[i_++];
        out += d;
      }
      bad_ = true;
      return {Token::end, ""};
    }
    if (c == '"') {
      ++i_;
      std::string out;
      while (i_ < s_.size()) {
        char d = s_[i_++];
        if (d == '"') {
          if (i_ < s_.size() && s_[i_] == '"') {
            out += '"';
            ++i_;
            continue;
          }
          return {Token::quoted_ident, out};
        }
        out += d;
      }
      bad_ = true;
      return {Token::end, ""};
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' ||
        (c == '.' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))) {
      size_t start = i_++;
      while (i_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.')) {
        ++i_;
      }
      return {Token::number, std::string(s_.substr(start, i_ - start))};
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
        static_cast<unsigned char>(c) >= 0x80) {
      size_t start = i_++;
      while (i_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' || s_[i_] == '$' ||
              s_[i_] == '.' || static_cast<unsigned char>(s_[i_]) >= 0x80)) {
        ++i_;
      }
      return {Token::word, std::string(s_.substr(start, i_ - start))};
    }
    ++i_;
    return {Token::punct, std::string(1, c)};
  }
  bool bad() const { return bad_; }

 private:
  void skip() {
    for (;;) {
      while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])))
        ++i_;
      if (s_.substr(i_, 2) == "--") {
        while (i_ < s_.size() && s_[i_] != '\n')
          ++i_;
      } else if (s_.substr(i_, 2) == "/*") {
        auto e = s_.find("*/", i_ + 2);
        i_ = e == std::string_view::npos ? s_.size() : e + 2;
      } else if (i_ < s_.size() && s_[i_] == ';') {
        ++i_;
      } else {
        return;
      }
    }
  }
  std::string_view s_;
  size_t i_ = 0;
  bool bad_ = false;
};

bool is_word(const Token& t, std::string_view w) {
  return t.type == Token::word && lower(t.text) == w;
}

SettingError syntax(std::string_view stmt) {
  return SettingError{"42601", "syntax error in \"" + std::string(stmt.substr(0, 200)) + "\""};
}

}  // namespace

std::optional<std::variant<SettingCommand, SettingError>> parse_setting_command(
    std::string_view stmt) {
  Tokenizer tz(stmt);
  Token first = tz.next();
  if (first.type != Token::word) return std::nullopt;
  std::string verb = lower(first.text);
  if (verb != "set" && verb != "reset" && verb != "show") return std::nullopt;

  // The name: word(s) or a quoted identifier; multi-word forms are mapped.
  Token t = tz.next();
  if (verb == "set") {
    SetCommand cmd;
    if (is_word(t, "session")) {
      t = tz.next();
      if (is_word(t, "characteristics")) return SettingCommand{IgnoredSet{}};
      if (is_word(t, "authorization")) {
        // Followed like a setting on PostgreSQL backends (the session layer
        // refuses it for others, which have no roles).
        cmd.name = "session_authorization";
        t = tz.next();
        if (is_word(t, "default")) return SettingCommand{cmd};
        if (t.type != Token::word && t.type != Token::string && t.type != Token::quoted_ident) {
          return syntax(stmt);
        }
        cmd.value = t.type == Token::word ? lower(t.text) : t.text;
        if (tz.next().type != Token::end || tz.bad()) return syntax(stmt);
        return SettingCommand{cmd};
      }
    } else if (is_word(t, "local")) {
      cmd.local = true;
      t = tz.next();
    }
    if (is_word(t, "transaction") || is_word(t, "constraints")) {
      return SettingCommand{IgnoredSet{}};
    }
    if (is_word(t, "role")) {
      // SET ROLE x | NONE: the setting "role" (current_setting('role') reads it back).
      cmd.name = "role";
      t = tz.next();
      if (t.type != Token::word && t.type != Token::string && t.type != Token::quoted_ident) {
        return syntax(stmt);
      }
      cmd.value = t.type == Token::word ? lower(t.text) : t.text;
      if (tz.next().type != Token::end || tz.bad()) return syntax(stmt);
      return SettingCommand{cmd};
    }
    Token value_start;
    if (is_word(t, "time")) {
      Token z = tz.next();
      if (!is_word(z, "zone")) return syntax(stmt);
      cmd.name = "timezone";
      value_start = tz.next();
      if (is_word(value_start, "local") || is_word(value_start, "default")) {
        return SettingCommand{cmd};
      }
    } else if (is_word(t, "schema")) {
      cmd.name = "search_path";
      value_start = tz.next();
    } else if (is_word(t, "names")) {
      cmd.name = "client_encoding";
      value_start = tz.next();
      if (value_start.type == Token::end || is_word(value_start, "default")) {
        return SettingCommand{cmd};
      }
    } else if (t.type == Token::word || t.type == Token::quoted_ident) {
      cmd.name = t.type == Token::word ? lower(t.text) : t.text;
      Token op = tz.next();
      if (!(is_word(op, "to") || (op.type == Token::punct && op.text == "="))) return syntax(stmt);
      value_start = tz.next();
      if (is_word(value_start, "default")) {
        if (tz.next().type != Token::end) return syntax(stmt);
        return SettingCommand{cmd};
      }
    } else {
      return syntax(stmt);
    }
    // value [, value ...]
    std::string value;
    Token v = value_start;
    for (;;) {
      if (v.type == Token::word) {
        value += lower(v.text);
      } else if (v.type == Token::string || v.type == Token::quoted_ident ||
                 v.type == Token::number) {
        value += v.text;
      } else {
        return syntax(stmt);
      }
      Token sep = tz.next();
      if (sep.type == Token::end) break;
      if (sep.type != Token::punct || sep.text != ",") return syntax(stmt);
      value += ", ";
      v = tz.next();
    }
    if (tz.bad()) return syntax(stmt);
    cmd.value = value;
    return SettingCommand{cmd};
  }

  // RESET / SHOW
  std::string name;
  if (is_word(t, "time")) {
    if (!is_word(tz.next(), "zone")) return syntax(stmt);
    name = "timezone";
  } else if (verb == "show" && is_word(t, "transaction")) {
    if (!is_word(tz.next(), "isolation") || !is_word(tz.next(), "level")) return syntax(stmt);
    name = "transaction_isolation";
  } else if (is_word(t, "session") && verb == "reset") {
    if (!is_word(tz.next(), "authorization")) return syntax(stmt);
    name = "session_authorization";
  } else if (t.type == Token::word) {
    name = lower(t.text);
  } else if (t.type == Token::quoted_ident) {
    name = t.text;
  } else {
    return syntax(stmt);
  }
  if (tz.next().type != Token::end || tz.bad()) return syntax(stmt);
  if (verb == "reset") return SettingCommand{ResetCommand{name}};
  return SettingCommand{ShowCommand{name}};
}

}  // namespace wirepool::server
