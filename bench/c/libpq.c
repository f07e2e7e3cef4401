/* The seed's three phases written directly against libpq, with the postgresql
 * driver's strategy, as the yardstick for bench/driver_bench.cpp:
 *   insert  N rows of (bigint, text, double) through one prepared statement in
 *           one transaction, parameters in binary, each execution's affected
 *           row count read (the driver reports it: the client's command tag);
 *   scan    every row back in single-row mode, results in binary, int8 and
 *           float8 decoded;
 *   lookup  M primary-key reads through one prepared statement, single-row
 *           mode, binary results.
 * Prints one JSON object like driver_bench.
 * The scan runs SCAN_PASSES times, its median time reported (bench_common.h).
 *
 * Usage: libpq CONNINFO [ROWS [LOOKUPS]]; the password comes from
 * $WIREPOOL_BENCH_PASSWORD. */

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"

static PGconn* db;

static void die(const char* what) {
  fprintf(stderr, "libpq: %s: %s\n", what, PQerrorMessage(db));
  exit(1);
}

static void exec(const char* sql) {
  PGresult* r = PQexec(db, sql);
  if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) die(sql);
  PQclear(r);
}

static int name_of(int64_t i, char* buf, size_t size) {
  return snprintf(buf, size, "name-%lld-bench", (long long)(i * 7919 % 1000003));
}

static void put_be64(char* out, uint64_t v) {
  for (int k = 7; k >= 0; --k) {
    out[k] = (char)(v & 0xff);
    v >>= 8;
  }
}

static uint64_t get_be64(const char* in) {
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k)
    v = (v << 8) | (unsigned char)in[k];
  return v;
}

static double get_f8(const char* in) {
  uint64_t u = get_be64(in);
  double d;
  memcpy(&d, &u, 8);
  return d;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: libpq CONNINFO [ROWS [LOOKUPS]]\n");
    return 2;
  }
  const int64_t rows = argc > 2 ? atoll(argv[2]) : 20000;
  const int64_t lookups = argc > 3 ? atoll(argv[3]) : 5000;
  const char* pw = getenv("WIREPOOL_BENCH_PASSWORD");
  const char* keys[] = {"dbname", "password", NULL};
  const char* vals[] = {argv[1], pw ? pw : "", NULL};
  db = PQconnectdbParams(keys, vals, 1);
  if (PQstatus(db) != CONNECTION_OK) die("connect");
  exec("DROP TABLE IF EXISTS wp_bench");
  exec("CREATE TABLE wp_bench (id BIGINT PRIMARY KEY, name VARCHAR(64), score DOUBLE PRECISION)");

  /* insert */
  double t0 = now();
  exec("BEGIN");
  const Oid types[3] = {20, 25, 701};
  PGresult* r = PQprepare(db, "ins", "INSERT INTO wp_bench VALUES ($1, $2, $3)", 3, types);
  if (PQresultStatus(r) != PGRES_COMMAND_OK) die("prepare insert");
  PQclear(r);
  char id_be[8], score_be[8], name[64];
  const char* values[3] = {id_be, name, score_be};
  int lengths[3] = {8, 0, 8};
  const int formats[3] = {1, 1, 1};
  for (int64_t i = 1; i <= rows; ++i) {
    put_be64(id_be, (uint64_t)i);
    lengths[1] = name_of(i, name, sizeof name);
    double score = (double)i * 0.5;
    uint64_t u;
    memcpy(&u, &score, 8);
    put_be64(score_be, u);
    r = PQexecPrepared(db, "ins", 3, values, lengths, formats, 1);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) die("insert");
    if (atoll(PQcmdTuples(r)) != 1) die("insert count");
    PQclear(r);
  }
  exec("COMMIT");
  const double insert_s = now() - t0;

  /* scan, SCAN_PASSES times */
  double scan_times[SCAN_PASSES];
  double sum = 0;
  for (int pass = 0; pass < SCAN_PASSES; ++pass) {
    t0 = now();
    int64_t scanned = 0;
    sum = 0;
    if (!PQsendQueryParams(db, "SELECT id, name, score FROM wp_bench", 0, NULL, NULL, NULL, NULL,
                           1))
      die("scan");
    if (!PQsetSingleRowMode(db)) die("single-row mode");
    while ((r = PQgetResult(db)) != NULL) {
      ExecStatusType st = PQresultStatus(r);
      if (st == PGRES_SINGLE_TUPLE) {
        ++scanned;
        int64_t id = (int64_t)get_be64(PQgetvalue(r, 0, 0));
        (void)id;
        sum += get_f8(PQgetvalue(r, 0, 2)) + (double)PQgetlength(r, 0, 1);
      } else if (st != PGRES_TUPLES_OK) {
        die("scan row");
      }
      PQclear(r);
    }
    if (scan_pass_done("libpq", scan_times, pass, t0, scanned, rows)) return 1;
  }
  const double scan_s = median_seconds(scan_times, SCAN_PASSES);

  /* lookup */
  t0 = now();
  int64_t found = 0;
  const Oid id_type[1] = {20};
  r = PQprepare(db, "get", "SELECT name, score FROM wp_bench WHERE id = $1", 1, id_type);
  if (PQresultStatus(r) != PGRES_COMMAND_OK) die("prepare lookup");
  PQclear(r);
  const char* get_values[1] = {id_be};
  const int get_lengths[1] = {8};
  const int get_formats[1] = {1};
  uint64_t x = 88172645463325252ULL; /* xorshift: the same ids in every program */
  for (int64_t i = 0; i < lookups; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    put_be64(id_be, x % (uint64_t)rows + 1);
    if (!PQsendQueryPrepared(db, "get", 1, get_values, get_lengths, get_formats, 1)) die("lookup");
    if (!PQsetSingleRowMode(db)) die("single-row mode");
    while ((r = PQgetResult(db)) != NULL) {
      ExecStatusType st = PQresultStatus(r);
      if (st == PGRES_SINGLE_TUPLE) {
        (void)get_f8(PQgetvalue(r, 0, 1));
        ++found;
      } else if (st != PGRES_TUPLES_OK) {
        die("lookup row");
      }
      PQclear(r);
    }
  }
  const double lookup_s = now() - t0;
  if (found != lookups) {
    fprintf(stderr, "libpq: found %lld rows, expected %lld\n", (long long)found,
            (long long)lookups);
    return 1;
  }
  exec("DROP TABLE wp_bench");
  PQfinish(db);
  printf(
      "{\"program\": \"c:libpq\", \"rows\": %lld, \"lookups\": %lld, \"insert_rows_per_s\": "
      "%.0f, \"scan_rows_per_s\": %.0f, \"lookup_rows_per_s\": %.0f, \"checksum\": %.1f}\n",
      (long long)rows, (long long)lookups, (double)rows / insert_s, (double)rows / scan_s,
      (double)lookups / lookup_s, sum);
  return 0;
}
