#include "server/log.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>

namespace wirepool::server {

void json_escape(std::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (u < 0x20) {
          out += "\\u00";
          out += kHex[u >> 4];
          out += kHex[u & 15];
        } else {
          out += c;
        }
    }
  }
}

namespace {

/// One JSON object per line; spdlog's patterns cannot escape the payload.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    using namespace std::chrono;
    auto t = system_clock::to_time_t(msg.time);
    auto us = duration_cast<microseconds>(msg.time.time_since_epoch()).count() % 1000000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char ts[48];
    size_t n = std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(ts + n, sizeof ts - n, ".%06lldZ", static_cast<long long>(us));
    std::string line = "{\"ts\":\"";
    line += ts;
    line += "\",\"level\":\"";
    auto lv = spdlog::level::to_string_view(msg.level);
    line.append(lv.data(), lv.size());
    line += "\",\"thread\":";
    line += std::to_string(msg.thread_id);
    line += ",\"msg\":\"";
    json_escape(std::string_view(msg.payload.data(), msg.payload.size()), line);
    line += "\"}\n";
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

void setup_logging(const std::string& level, config::LogFormat format) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  if (format == config::LogFormat::json) {
    sink->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    sink->set_formatter(
        std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ %v"));
  }
  auto logger = std::make_shared<spdlog::logger>("wirepool", sink);
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace wirepool::server
