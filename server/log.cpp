#include "server/log.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>

namespace wirepool::server {

namespace {

constexpr char kHex[] = "0123456789abcdef";

/// Length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629:
/// no overlong forms, no surrogates, nothing above U+10FFFF), or 0.
size_t utf8_sequence(std::string_view s) {
  auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  auto cont = [&](size_t i) { return i < s.size() && (b(i) & 0xc0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xe0 && b(1) < 0xa0) return 0;   // overlong
    if (c == 0xed && b(1) >= 0xa0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xf0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xf4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

/// True for the code points a terminal or a log viewer may act on: C0, DEL,
/// C1 (U+0080-U+009F, where U+009B is CSI) and the line and paragraph
/// separators U+2028/U+2029.
bool needs_escape(std::string_view seq) {
  const auto c = static_cast<unsigned char>(seq[0]);
  if (seq.size() == 1) return c < 0x20 || c == 0x7f;
  if (seq.size() == 2) return c == 0xc2 && static_cast<unsigned char>(seq[1]) < 0xa0;
  return seq.size() == 3 && c == 0xe2 && seq[1] == '\x80' && (seq[2] == '\xa8' || seq[2] == '\xa9');
}

/// The code point of a 1-3 byte UTF-8 sequence.
unsigned code_point(std::string_view seq) {
  const auto b = [&](size_t i) {
    return static_cast<unsigned>(static_cast<unsigned char>(seq[i]));
  };
  if (seq.size() == 1) return b(0);
  if (seq.size() == 2) return (b(0) & 0x1f) << 6 | (b(1) & 0x3f);
  return (b(0) & 0x0f) << 12 | (b(1) & 0x3f) << 6 | (b(2) & 0x3f);
}

void append_hex_byte(std::string& out, unsigned char c) {
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

/// \n, \r and \t as both formats write them; false for other code points.
bool append_short_escape(std::string& out, unsigned cp) {
  switch (cp) {
    case '\n':
      out += "\\n";
      return true;
    case '\r':
      out += "\\r";
      return true;
    case '\t':
      out += "\\t";
      return true;
    default:
      return false;
  }
}

void append_u_escape(std::string& out, unsigned cp) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4)
    out += kHex[(cp >> shift) & 15];
}

/// Walks `s` and appends it to `out`: well-formed text as it is, the escapes
/// of the format for everything else.
template <typename Escape, typename Invalid>
void escape_into(std::string_view s, std::string& out, Escape&& escape, Invalid&& invalid) {
  out.reserve(out.size() + s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = utf8_sequence(s.substr(i));
    if (n == 0) {
      invalid(static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    const std::string_view seq = s.substr(i, n);
    if (!escape(seq)) out.append(seq);
    i += n;
  }
}

bool plain_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x7f;
  });
}

}  // namespace

void log_escape(std::string_view s, std::string& out) {
  escape_into(
      s, out,
      [&](std::string_view seq) {
        if (!needs_escape(seq)) return false;
        const unsigned cp = code_point(seq);
        if (append_short_escape(out, cp)) return true;
        if (cp < 0x80) {
          append_hex_byte(out, static_cast<unsigned char>(cp));
        } else {
          append_u_escape(out, cp);
        }
        return true;
      },
      [&](unsigned char c) { append_hex_byte(out, c); });
}

void json_escape(std::string_view s, std::string& out) {
  escape_into(
      s, out,
      [&](std::string_view seq) {
        if (seq.size() == 1 && (seq[0] == '"' || seq[0] == '\\')) {
          out += '\\';
          out += seq[0];
          return true;
        }
        if (!needs_escape(seq)) return false;
        const unsigned cp = code_point(seq);
        if (!append_short_escape(out, cp)) append_u_escape(out, cp);
        return true;
      },
      // JSON text is UTF-8: an invalid byte becomes the text \xNN, as in the
      // text format.
      [&](unsigned char c) {
        out += '\\';
        append_hex_byte(out, c);
      });
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

/// The text format: spdlog's pattern around the message with log_escape
/// applied, so that no message (and no client text inside one) can end its
/// line or reach a terminal as a control sequence.
class TextFormatter final : public spdlog::formatter {
 public:
  explicit TextFormatter(std::unique_ptr<spdlog::formatter> pattern)
      : pattern_(std::move(pattern)) {}

  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string_view payload(msg.payload.data(), msg.payload.size());
    if (plain_ascii(payload)) {
      pattern_->format(msg, dest);
      return;
    }
    std::string escaped;
    log_escape(payload, escaped);
    spdlog::details::log_msg copy = msg;
    copy.payload = spdlog::string_view_t(escaped.data(), escaped.size());
    pattern_->format(copy, dest);
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<TextFormatter>(pattern_->clone());
  }

 private:
  std::unique_ptr<spdlog::formatter> pattern_;
};

}  // namespace

void setup_logging(const std::string& level, config::LogFormat format) {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  if (format == config::LogFormat::json) {
    sink->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    sink->set_formatter(std::make_unique<TextFormatter>(
        std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ %v")));
  }
  auto logger = std::make_shared<spdlog::logger>("wirepool", sink);
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace wirepool::server
