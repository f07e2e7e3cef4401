#include "server/metrics.hpp"

#include <dirent.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

namespace wirepool::server {

namespace {
/// Shortest text that reads back as the same double ("0.0001", "30").
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // %.17g prints 0.0001 as 0.00010000000000000000479: try shorter forms first,
  // without an exponent where one is not needed ("30", not "3e+01").
  for (int p = 1; p <= 17; ++p) {
    char s[32];
    std::snprintf(s, sizeof s, "%.*g", p, v);
    if (std::strtod(s, nullptr) == v && (std::strchr(s, 'e') == nullptr || p == 17)) return s;
  }
  return buf;
}
}  // namespace

void Histogram::observe(std::chrono::nanoseconds d) {
  const double s = std::chrono::duration<double>(d).count();
  size_t i = 0;
  while (i < kBounds.size() && s > kBounds[i])
    ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(d.count() < 0 ? 0 : d.count()),
                    std::memory_order_relaxed);
}

void Histogram::render(std::string& out, std::string_view name, std::string_view labels) const {
  // _count is the sum of the buckets as read here, so that it equals the +Inf
  // bucket even while observations land during the scrape.
  const std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    std::string le = i < kBounds.size() ? number(kBounds[i]) : "+Inf";
    out += std::string(name) + "_bucket{" + std::string(labels) + sep + "le=\"" + le + "\"} " +
           std::to_string(cumulative) + "\n";
  }
  const double sum = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
  const std::string braces = labels.empty() ? "" : "{" + std::string(labels) + "}";
  out += std::string(name) + "_sum" + braces + " " + number(sum) + "\n";
  out += std::string(name) + "_count" + braces + " " + std::to_string(cumulative) + "\n";
}

uint64_t Histogram::count() const {
  uint64_t n = 0;
  for (const auto& b : buckets_)
    n += b.load(std::memory_order_relaxed);
  return n;
}

StatsTotals DatabaseMetrics::totals() const {
  StatsTotals t;
  t.xact_count = transactions.load(std::memory_order_relaxed);
  t.query_count = statements.load(std::memory_order_relaxed);
  t.received = bytes_in.load(std::memory_order_relaxed);
  t.sent = bytes_out.load(std::memory_order_relaxed);
  t.xact_us = transaction_us.load(std::memory_order_relaxed);
  t.query_us = statement_duration.sum_us();
  t.wait_us = acquire_wait.sum_us();
  t.wait_count = acquire_wait.count();
  return t;
}

void DatabaseMetrics::roll_period() {
  StatsTotals now = totals();
  std::lock_guard lock(period_mu_);
  period_start_ = period_end_;
  period_end_ = now;
}

std::pair<StatsTotals, StatsTotals> DatabaseMetrics::last_period() const {
  std::lock_guard lock(period_mu_);
  return {period_start_, period_end_};
}

std::string_view protocol_label(size_t index) {
  switch (index) {
    case 0:
      return "postgres";
    case 1:
      return "tds";
    default:
      return "http";
  }
}

std::string_view to_string(ErrorReason r) {
  switch (r) {
    case ErrorReason::auth_failed:
      return "auth_failed";
    case ErrorReason::pool_timeout:
      return "pool_timeout";
    case ErrorReason::backend_lost:
      return "backend_lost";
    case ErrorReason::protocol_error:
      return "protocol_error";
  }
  return "unknown";
}

std::string_view to_string(RefusedReason r) {
  switch (r) {
    case RefusedReason::allow_list:
      return "allow_list";
    case RefusedReason::pending:
      return "pending";
    case RefusedReason::pending_per_address:
      return "pending_per_address";
    case RefusedReason::displaced:
      return "displaced";
    case RefusedReason::descriptors:
      return "descriptors";
    case RefusedReason::throttled:
      return "throttled";
    case RefusedReason::auth_lookup:
      return "auth_lookup";
    case RefusedReason::waited:
      return "waited";
  }
  return "unknown";
}

void Metrics::sqlstate(std::string_view sqlstate) {
  std::string cls = sqlstate.size() >= 2 ? std::string(sqlstate.substr(0, 2)) : "XX";
  for (char& c : cls) {
    // SQLSTATEs are [0-9A-Z]; anything else is a driver's mistake, not a label.
    if (!((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'))) c = 'X';
  }
  std::lock_guard lock(mu_);
  ++classes_[cls];
}

std::map<std::string, uint64_t> Metrics::sqlstate_classes() const {
  std::lock_guard lock(mu_);
  return classes_;
}

void Metrics::set_config_hash(std::string hash) {
  std::lock_guard lock(mu_);
  config_hash_ = std::move(hash);
}

std::string Metrics::config_hash() const {
  std::lock_guard lock(mu_);
  return config_hash_;
}

Metrics& metrics() {
  static Metrics m;
  return m;
}

void metric_header(std::string& out, std::string_view name, std::string_view type,
                   std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

std::string label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

uint64_t process_rss_bytes() {
  // /proc/self/statm: size resident shared ... (in pages).
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(f >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

uint64_t process_open_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return 0;
  uint64_t n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n > 0 ? n - 1 : 0;  // the directory's own descriptor
}

std::string file_sha256(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1) return {};
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

}  // namespace wirepool::server
