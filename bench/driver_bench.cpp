// The seed's three phases through the driver contract (backends/db.hpp), for
// any driver of this build:
//   insert  N rows of (bigint, text, double) through one prepared statement in
//           one transaction, each execution's affected row count read (as
//           the front end reads it for the command tag; bench/c/ too);
//   scan    every row back through one streaming reader (borrowed values),
//           5 times, the median time (as bench/c/ does);
//   lookup  M primary-key reads through one prepared statement;
//   batch   N rows into a second table through Statement::execute_batch, 1000
//           rows a call (the front end's largest batch), in one transaction:
//           parameter arrays on the odbc driver, a query per row elsewhere.
// Prints one JSON object: rows per second of each phase.
//
// Usage: driver_bench DRIVER CONNECTION [ROWS [LOOKUPS]]
//   The backend password comes from $WIREPOOL_BENCH_PASSWORD (as password_env
//   would pass it), a CA for TLS from $WIREPOOL_BENCH_CA.
// Statements use $N markers and portable SQL (DOUBLE PRECISION, VARCHAR), so the
// same program drives sqlite, postgresql, mysql and odbc; bench/c/ holds the raw
// C API programs it is compared with (bench/driver_vs_c.py runs both). Every
// call goes through db::call_blocking, so a non-blocking driver (postgresql)
// runs too: bench/odbc_vs_c.py compares ODBC's scan with libpq's.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "backends/db.hpp"

namespace {

using namespace wirepool;
using Clock = std::chrono::steady_clock;

// `what` is a C string, as the C programs' CHECK takes it: a std::string
// parameter made some builds construct one per checked call (~60 instructions
// of the harness, charged to the driver), depending on what GCC inlined.
[[noreturn, gnu::cold, gnu::noinline]] void die(const char* what, const db::Error& e) {
  std::fprintf(stderr, "driver_bench: %s: %s (SQLSTATE %s)\n", what, e.message.c_str(),
               e.sqlstate.c_str());
  std::exit(1);
}

template <class T>
T check(db::Result<T> r, const char* what) {
  if (!r.ok()) die(what, r.error());
  return std::move(r.value());
}
void check(db::Status s, const char* what) {
  if (!s.ok()) die(what, s.error());
}

db::Connection* g_conn = nullptr;

/// Calls f() until it stops answering would_block (a non-blocking driver).
template <class F>
auto blocking(F f) {
  return db::call_blocking(*g_conn->impl(), f);
}

/// Runs a statement to its end through blocking() (db::drain is for blocking
/// connections only).
db::Status run(db::Connection& c, std::string_view sql) {
  auto rows = blocking([&] { return c.query(sql); });
  if (!rows.ok()) return rows.take_error();
  std::vector<db::ValueView> row(rows->columns().size());
  for (;;) {
    auto more = blocking([&] { return rows->next_borrowed(row); });
    if (!more.ok()) return more.take_error();
    if (!more.value()) break;
  }
  return blocking([&] { return rows->close(); });
}

/// Scans per run, the median reported: one 20,000-row scan takes 15-30 ms,
/// short enough for one preemption on a shared machine to move it by 10%.
constexpr int kScanPasses = 5;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Makes `v` the text name of row i, about 20 bytes, different per row:
/// formatted with snprintf into the string `v` already holds, as the C
/// programs format theirs into a stack buffer, so that the harness costs the
/// same on both sides and the difference is the driver's.
void set_name(db::Value& v, int64_t i) {
  char buf[48];
  const int n =
      std::snprintf(buf, sizeof buf, "name-%lld-bench", static_cast<long long>(i * 7919 % 1000003));
  v.kind = db::Kind::Text;
  v.str.assign(buf, static_cast<size_t>(n));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: driver_bench DRIVER CONNECTION [ROWS [LOOKUPS]]\n");
    return 2;
  }
  const db::Driver* driver = db::find_driver(argv[1]);
  if (driver == nullptr) {
    std::fprintf(stderr, "driver_bench: no driver %s in this build\n", argv[1]);
    return 2;
  }
  const int64_t rows = argc > 3 ? std::atoll(argv[3]) : 20000;
  const int64_t lookups = argc > 4 ? std::atoll(argv[4]) : 5000;
  db::OpenOptions o;
  o.connection = argv[2];
  if (const char* p = std::getenv("WIREPOOL_BENCH_PASSWORD")) o.password = p;
  if (const char* ca = std::getenv("WIREPOOL_BENCH_CA")) o.tls_ca = ca;
  db::Connection c = check(driver->open(o), "open");
  g_conn = &c;

  check(run(c, "DROP TABLE IF EXISTS wp_bench"), "drop");
  // WIREPOOL_BENCH_TEXT=1: the name column is TEXT, which ODBC drivers
  // describe as unbounded (docs/odbc.md, "Block cursors").
  const char* text_env = std::getenv("WIREPOOL_BENCH_TEXT");
  const bool text_column = text_env != nullptr && std::string_view(text_env) == "1";
  const std::string create = std::string("CREATE TABLE wp_bench (id BIGINT PRIMARY KEY, name ") +
                             (text_column ? "TEXT" : "VARCHAR(64)") + ", score DOUBLE PRECISION)";
  check(run(c, create), "create");

  // insert
  auto t0 = Clock::now();
  {
    db::Transaction tx = check(blocking([&] { return c.begin(); }), "begin");
    db::Statement ins =
        check(blocking([&] { return tx.prepare("INSERT INTO wp_bench VALUES ($1, $2, $3)"); }),
              "prepare");
    std::vector<db::Param> p(3);
    for (int64_t i = 1; i <= rows; ++i) {
      p[0].value = db::Value::int64(i);
      set_name(p[1].value, i);
      p[2].value = db::Value::float64(static_cast<double>(i) * 0.5);
      db::Rows r = check(blocking([&] { return ins.query(p); }), "insert");
      if (const int64_t n = r.command().affected; n != 1) {
        std::fprintf(stderr, "driver_bench: an insert counted %lld rows\n",
                     static_cast<long long>(n));
        return 1;
      }
      check(blocking([&] { return r.close(); }), "insert done");
    }
    check(blocking([&] { return ins.close(); }), "close insert");
    check(blocking([&] { return tx.commit(); }), "commit");
  }
  const double insert_s = seconds_since(t0);

  // scan, kScanPasses times (bench/c/bench_common.h: SCAN_PASSES), the median
  std::vector<double> scan_times;
  double sum = 0;
  for (int pass = 0; pass < kScanPasses; ++pass) {
    t0 = Clock::now();
    int64_t scanned = 0;
    sum = 0;
    {
      db::Rows r =
          check(blocking([&] { return c.query("SELECT id, name, score FROM wp_bench"); }), "scan");
      std::vector<db::ValueView> row(3);
      while (check(blocking([&] { return r.next_borrowed(row); }), "scan row")) {
        ++scanned;
        sum += row[2].f64 + static_cast<double>(row[1].str.size());
      }
      check(blocking([&] { return r.close(); }), "close scan");
    }
    scan_times.push_back(seconds_since(t0));
    if (scanned != rows) {
      std::fprintf(stderr, "driver_bench: scanned %lld rows, expected %lld\n",
                   static_cast<long long>(scanned), static_cast<long long>(rows));
      return 1;
    }
  }
  std::sort(scan_times.begin(), scan_times.end());
  const double scan_s = scan_times[scan_times.size() / 2];

  // lookup
  t0 = Clock::now();
  int64_t found = 0;
  {
    db::Statement get =
        check(blocking([&] { return c.prepare("SELECT name, score FROM wp_bench WHERE id = $1"); }),
              "prepare lookup");
    std::vector<db::Param> p(1);
    std::vector<db::ValueView> row(2);
    uint64_t x = 88172645463325252ULL;  // xorshift: the same ids in every program
    for (int64_t i = 0; i < lookups; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      p[0].value = db::Value::int64(static_cast<int64_t>(x % static_cast<uint64_t>(rows)) + 1);
      db::Rows r = check(blocking([&] { return get.query(p); }), "lookup");
      while (check(blocking([&] { return r.next_borrowed(row); }), "lookup row"))
        ++found;
      check(blocking([&] { return r.close(); }), "close lookup");
    }
    check(blocking([&] { return get.close(); }), "close statement");
  }
  const double lookup_s = seconds_since(t0);
  if (found != lookups) {
    std::fprintf(stderr, "driver_bench: found %lld rows, expected %lld\n",
                 static_cast<long long>(found), static_cast<long long>(lookups));
    return 1;
  }
  // batch (blocking drivers: execute_batch is a blocking call; -1 for the others)
  double batch_s = -1;
  if (c.capabilities().blocking) {
    check(run(c, "DROP TABLE IF EXISTS wp_bench_b"), "drop batch table");
    check(run(c, create.substr(0, create.find(" (")) + "_b" + create.substr(create.find(" ("))),
          "create batch table");
    t0 = Clock::now();
    {
      db::Transaction tx = check(blocking([&] { return c.begin(); }), "begin");
      db::Statement ins =
          check(blocking([&] { return tx.prepare("INSERT INTO wp_bench_b VALUES ($1, $2, $3)"); }),
                "prepare batch");
      constexpr int64_t kBatch = 1000;
      std::vector<std::vector<db::Param>> params(kBatch, std::vector<db::Param>(3));
      std::vector<db::Params> spans;
      for (int64_t first = 1; first <= rows; first += kBatch) {
        const int64_t n = std::min(kBatch, rows - first + 1);
        spans.clear();
        for (int64_t k = 0; k < n; ++k) {
          auto& p = params[static_cast<size_t>(k)];
          const int64_t i = first + k;
          p[0].value = db::Value::int64(i);
          set_name(p[1].value, i);
          p[2].value = db::Value::float64(static_cast<double>(i) * 0.5);
          spans.emplace_back(p);
        }
        auto done = check(ins.execute_batch(spans), "batch");
        if (done.total != n) {
          std::fprintf(stderr, "driver_bench: a batch of %lld inserted %lld\n",
                       static_cast<long long>(n), static_cast<long long>(done.total));
          return 1;
        }
      }
      check(blocking([&] { return ins.close(); }), "close batch");
      check(blocking([&] { return tx.commit(); }), "commit batch");
    }
    batch_s = seconds_since(t0);
    check(run(c, "DROP TABLE wp_bench_b"), "drop batch table");
  }

  check(run(c, "DROP TABLE wp_bench"), "drop");
  check(blocking([&] { return c.close(); }), "close");
  std::printf(
      "{\"program\": \"driver:%s\", \"rows\": %lld, \"lookups\": %lld, \"insert_rows_per_s\": "
      "%.0f, \"scan_rows_per_s\": %.0f, \"lookup_rows_per_s\": %.0f, \"batch_rows_per_s\": "
      "%.0f, \"checksum\": %.1f}\n",
      argv[1], static_cast<long long>(rows), static_cast<long long>(lookups),
      static_cast<double>(rows) / insert_s, static_cast<double>(rows) / scan_s,
      static_cast<double>(lookups) / lookup_s,
      batch_s > 0 ? static_cast<double>(rows) / batch_s : -1.0, sum);
  return 0;
}
