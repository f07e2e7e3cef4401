#pragma once
// A log line that may repeat at a high rate (a refused connection, accept
// failing with EMFILE): the first one is written, later ones are counted and
// summed up in one line per interval.

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace wirepool::server {

class LogLimiter {
 public:
  explicit LogLimiter(std::chrono::steady_clock::duration interval = std::chrono::seconds(10))
      : interval_(interval) {}

  /// Logs `line` at warning level, or counts it when a line went out less
  /// than an interval ago; the next line that goes out says how many were
  /// held back ("(and N more like it in the last 10 s)").
  void warn(const std::string& line) { log(spdlog::level::warn, line); }

  /// The same at `level`.
  void log(spdlog::level::level_enum level, const std::string& line) {
    const auto now = std::chrono::steady_clock::now();
    uint64_t held = 0;
    {
      std::lock_guard lock(mu_);
      if (logged_ && now - last_ < interval_) {
        ++held_;
        return;
      }
      held = held_;
      held_ = 0;
      last_ = now;
      logged_ = true;
    }
    if (held > 0) {
      spdlog::log(level, "{} (and {} more like it in the last {} s)", line, held,
                  std::chrono::duration_cast<std::chrono::seconds>(interval_).count());
    } else {
      spdlog::log(level, "{}", line);
    }
  }

 private:
  const std::chrono::steady_clock::duration interval_;
  std::mutex mu_;
  std::chrono::steady_clock::time_point last_{};
  uint64_t held_ = 0;
  bool logged_ = false;
};

}  // namespace wirepool::server
