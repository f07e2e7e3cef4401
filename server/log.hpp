#pragma once
// Logging setup (spdlog, text or JSON lines). Connection strings are redacted
// by their driver's own parser (db::Driver::redact).

#include <string>
#include <string_view>

#include "config/config.hpp"

namespace wirepool::server {

/// Installs the default logger: stderr, the configured level and format.
/// JSON lines are {"ts":..., "level":..., "msg":...} with the message escaped;
/// text lines have the message passed through log_escape.
void setup_logging(const std::string& level, config::LogFormat format);

/// Appends `s` for a text log line: control characters (C0, DEL, C1,
/// U+2028/U+2029) become \n \r \t \xNN or \uNNNN, and each byte that is not
/// part of well-formed UTF-8 becomes \xNN. Every text line goes through it.
void log_escape(std::string_view s, std::string& out);

/// Appends `s` escaped for inclusion in a JSON string: quotes, backslashes and
/// the same control characters as log_escape as JSON escapes; a byte that is not
/// well-formed UTF-8 as the text \xNN, so the line stays valid JSON.
void json_escape(std::string_view s, std::string& out);

}  // namespace wirepool::server
