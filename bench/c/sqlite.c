/* The seed's three phases written directly against SQLite's C API, with the
 * sqlite driver's strategy, as the yardstick for bench/driver_bench.cpp:
 *   insert  N rows of (bigint, text, double) through one prepared statement in
 *           one transaction, each execution's affected row count read (the
 *           driver reports it: the client's command tag, INSERT 0 1);
 *   scan    every row back through one statement, each value read as the
 *           driver reads it (sqlite3_column_type, then the typed getter);
 *   lookup  M primary-key reads through one prepared statement.
 * The connection has the driver's settings: WAL, extended result codes, a busy
 * timeout, foreign keys on. Prints one JSON object like driver_bench.
 * The scan runs SCAN_PASSES times, its median time reported (bench_common.h).
 *
 * Usage: sqlite FILE [ROWS [LOOKUPS]] */

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"

static sqlite3* db;

static void die(const char* what) {
  fprintf(stderr, "sqlite: %s: %s\n", what, sqlite3_errmsg(db));
  exit(1);
}

static void exec(const char* sql) {
  if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) die(sql);
}

/* A name of about 20 bytes, different per row (driver_bench's name_of). */
static int name_of(int64_t i, char* buf, size_t size) {
  return snprintf(buf, size, "name-%lld-bench", (long long)(i * 7919 % 1000003));
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: sqlite FILE [ROWS [LOOKUPS]]\n");
    return 2;
  }
  const int64_t rows = argc > 2 ? atoll(argv[2]) : 100000;
  const int64_t lookups = argc > 3 ? atoll(argv[3]) : 20000;
  if (sqlite3_open_v2(argv[1], &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK)
    die("open");
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, 5000);
  exec("PRAGMA foreign_keys=ON");
  exec("PRAGMA journal_mode=WAL");
  exec("DROP TABLE IF EXISTS wp_bench");
  exec("CREATE TABLE wp_bench (id BIGINT PRIMARY KEY, name VARCHAR(64), score DOUBLE PRECISION)");

  /* insert */
  double t0 = now();
  exec("BEGIN");
  sqlite3_stmt* ins;
  if (sqlite3_prepare_v2(db, "INSERT INTO wp_bench VALUES (?1, ?2, ?3)", -1, &ins, NULL) !=
      SQLITE_OK)
    die("prepare insert");
  char name[64];
  for (int64_t i = 1; i <= rows; ++i) {
    int n = name_of(i, name, sizeof name);
    sqlite3_bind_int64(ins, 1, i);
    sqlite3_bind_text(ins, 2, name, n, SQLITE_TRANSIENT);
    sqlite3_bind_double(ins, 3, (double)i * 0.5);
    if (sqlite3_step(ins) != SQLITE_DONE) die("insert");
    if (sqlite3_changes(db) != 1) die("insert count");
    sqlite3_reset(ins);
    sqlite3_clear_bindings(ins);
  }
  sqlite3_finalize(ins);
  exec("COMMIT");
  const double insert_s = now() - t0;

  /* scan, SCAN_PASSES times */
  double scan_times[SCAN_PASSES];
  double sum = 0;
  int rc;
  for (int pass = 0; pass < SCAN_PASSES; ++pass) {
    t0 = now();
    int64_t scanned = 0;
    sum = 0;
    sqlite3_stmt* scan;
    if (sqlite3_prepare_v2(db, "SELECT id, name, score FROM wp_bench", -1, &scan, NULL) !=
        SQLITE_OK)
      die("prepare scan");
    while ((rc = sqlite3_step(scan)) == SQLITE_ROW) {
      ++scanned;
      int64_t id = 0;
      double score = 0;
      int len = 0;
      if (sqlite3_column_type(scan, 0) == SQLITE_INTEGER) id = sqlite3_column_int64(scan, 0);
      if (sqlite3_column_type(scan, 1) == SQLITE_TEXT) {
        (void)sqlite3_column_text(scan, 1);
        len = sqlite3_column_bytes(scan, 1);
      }
      if (sqlite3_column_type(scan, 2) == SQLITE_FLOAT) score = sqlite3_column_double(scan, 2);
      (void)id;
      sum += score + (double)len;
    }
    if (rc != SQLITE_DONE) die("scan");
    sqlite3_finalize(scan);
    if (scan_pass_done("sqlite", scan_times, pass, t0, scanned, rows)) return 1;
  }
  const double scan_s = median_seconds(scan_times, SCAN_PASSES);

  /* lookup */
  t0 = now();
  int64_t found = 0;
  sqlite3_stmt* get;
  if (sqlite3_prepare_v2(db, "SELECT name, score FROM wp_bench WHERE id = ?1", -1, &get, NULL) !=
      SQLITE_OK)
    die("prepare lookup");
  uint64_t x = 88172645463325252ULL; /* xorshift: the same ids in every program */
  for (int64_t i = 0; i < lookups; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    sqlite3_bind_int64(get, 1, (int64_t)(x % (uint64_t)rows) + 1);
    while ((rc = sqlite3_step(get)) == SQLITE_ROW) {
      (void)sqlite3_column_text(get, 0);
      (void)sqlite3_column_double(get, 1);
      ++found;
    }
    if (rc != SQLITE_DONE) die("lookup");
    sqlite3_reset(get);
  }
  sqlite3_finalize(get);
  const double lookup_s = now() - t0;
  if (found != lookups) {
    fprintf(stderr, "sqlite: found %lld rows, expected %lld\n", (long long)found,
            (long long)lookups);
    return 1;
  }
  exec("DROP TABLE wp_bench");
  sqlite3_close(db);
  printf(
      "{\"program\": \"c:sqlite\", \"rows\": %lld, \"lookups\": %lld, \"insert_rows_per_s\": "
      "%.0f, \"scan_rows_per_s\": %.0f, \"lookup_rows_per_s\": %.0f, \"checksum\": %.1f}\n",
      (long long)rows, (long long)lookups, (double)rows / insert_s, (double)rows / scan_s,
      (double)lookups / lookup_s, sum);
  return 0;
}
