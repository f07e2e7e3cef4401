#pragma once
// Logging setup (spdlog, text or JSON lines) and redaction of secrets.

#include <string>
#include <string_view>

#include "config/config.hpp"

namespace wirepool::server {

/// Installs the default logger: stderr, the configured level and format.
/// JSON lines are {"ts":..., "level":..., "msg":...} with the message escaped.
void setup_logging(const std::string& level, config::LogFormat format);

/// `key=value` connection strings (libpq conninfo, ODBC, TDS) with the values
/// of password-like keys replaced by "***"; URIs lose their password part.
std::string redact_secrets(std::string_view connection);

/// Escapes `s` for inclusion in a JSON string.
void json_escape(std::string_view s, std::string& out);

}  // namespace wirepool::server
