// Scan rate of the SQL Server driver next to the PostgreSQL driver, same
// machine, same rows: a 100,000-row SELECT read through the contract
// (Rows::next_borrowed), best of ROUNDS.
//   tds: driver `tds` -> wirepool's TDS 8.0 front end (TLS 1.3) -> PostgreSQL
//        driver -> PostgreSQL (so it pays for a second hop through wirepool)
//   pg:  driver `postgresql` -> PostgreSQL (TLS 1.3)
// Also prints the TLS record sizes the TDS driver wrote and read.
// A measurement, not a test (bench/tds_scan.py starts the servers).
//
// usage: bench_tds_scan TDS_HOST TDS_PORT TDS_CA TDS_PIN PG_CONNINFO PG_PASSWORD PG_CA [ROUNDS]

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/db.hpp"
#include "backends/tds/tds_transport.hpp"

using namespace wirepool;

namespace {

constexpr const char* kSql =
    "SELECT g AS id, 'row number ' || g AS label, g * 0.5 AS half FROM generate_series(1, 100000) "
    "g";

double scan(db::Connection& c, bool non_blocking, int64_t* rows_out) {
  const auto t0 = std::chrono::steady_clock::now();
  auto q =
      non_blocking ? db::call_blocking(*c.impl(), [&] { return c.query(kSql); }) : c.query(kSql);
  if (!q.ok()) {
    std::fprintf(stderr, "query: %s\n", q.error().message.c_str());
    return 0;
  }
  std::vector<db::ValueView> row(q->columns().size());
  int64_t n = 0;
  for (;;) {
    auto more = non_blocking ? db::call_blocking(*c.impl(), [&] { return q->next_borrowed(row); })
                             : q->next_borrowed(row);
    if (!more.ok()) {
      std::fprintf(stderr, "next: %s\n", more.error().message.c_str());
      return 0;
    }
    if (!more.value()) break;
    ++n;
  }
  (void)(non_blocking ? db::call_blocking(*c.impl(), [&] { return q->close(); }) : q->close());
  *rows_out = n;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr,
                 "usage: %s TDS_HOST TDS_PORT TDS_CA TDS_PIN PG_CONNINFO PG_PASSWORD PG_CA "
                 "[ROUNDS]\n",
                 argv[0]);
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);  // as wirepool itself: a vanished peer is an error, not a signal
  const int rounds = argc > 8 ? std::atoi(argv[8]) : 5;
  db::OpenOptions t;
  t.connection = std::string("host=") + argv[1] + ";port=" + argv[2] +
                 ";user=alice;database=pgapp;password=wonderland";
  t.tls_ca = argv[3];
  t.tls_pins = {argv[4]};
  db::OpenOptions p;
  p.connection = argv[5];
  p.password = argv[6];
  p.tls_ca = argv[7];
  auto tc = db::find_driver("tds")->open(t);
  auto pc = db::find_driver("postgresql")->open(p);
  if (!tc.ok() || !pc.ok()) {
    std::fprintf(stderr, "open: %s %s\n", tc.ok() ? "" : tc.error().message.c_str(),
                 pc.ok() ? "" : pc.error().message.c_str());
    return 1;
  }
  double best_tds = 1e9, best_pg = 1e9;
  int64_t rows_tds = 0, rows_pg = 0;
  const auto before = tdsdrv::record_stats();
  for (int r = 0; r < rounds; ++r) {  // alternated, best of each
    const double a = scan(tc.value(), false, &rows_tds);
    const double b = scan(pc.value(), true, &rows_pg);
    if (a > 0 && a < best_tds) best_tds = a;
    if (b > 0 && b < best_pg) best_pg = b;
  }
  const auto after = tdsdrv::record_stats();
  std::printf(
      "{\"rows\": %lld, \"rounds\": %d, \"tds_rows_per_s\": %.0f, \"pg_rows_per_s\": %.0f, "
      "\"tds_vs_pg\": %.3f, \"tds_records_read\": %llu, \"tds_record_read_max\": %llu, "
      "\"tds_mean_record_read\": %.0f, \"tds_records_written\": %llu, "
      "\"tds_record_written_max\": %llu, \"tds_packets_written\": %llu}\n",
      static_cast<long long>(rows_tds), rounds, rows_tds / best_tds, rows_pg / best_pg,
      (rows_tds / best_tds) / (rows_pg / best_pg),
      static_cast<unsigned long long>(after.records_read - before.records_read),
      static_cast<unsigned long long>(after.record_read_max),
      static_cast<double>(after.record_read_bytes - before.record_read_bytes) /
          static_cast<double>(std::max<uint64_t>(1, after.records_read - before.records_read)),
      static_cast<unsigned long long>(after.records_written - before.records_written),
      static_cast<unsigned long long>(after.record_written_max),
      static_cast<unsigned long long>(after.packets_written - before.packets_written));
  (void)tc->close();
  (void)db::call_blocking(*pc->impl(), [&] { return pc->close(); });
  return 0;
}
