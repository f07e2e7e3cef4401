#pragma once
// Logging setup (spdlog, text or JSON lines). Connection strings are redacted
// by their driver's own parser (db::Driver::redact).

#include <string>
#include <string_view>

#include "config/config.hpp"

namespace wirepool::server {

/// Installs the default logger: stderr, the configured level and format.
/// JSON lines are {"ts":..., "level":..., "msg":...} with the message escaped.
void setup_logging(const std::string& level, config::LogFormat format);

/// Escapes `s` for inclusion in a JSON string.
void json_escape(std::string_view s, std::string& out);

}  // namespace wirepool::server
