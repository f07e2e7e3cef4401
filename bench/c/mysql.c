/* The seed's three phases written directly against libmysqlclient (MariaDB
 * Connector/C), with the mysql driver's strategy, as the yardstick for
 * bench/driver_bench.cpp:
 *   insert  N rows of (bigint, text, double): one server-side prepared
 *           statement (binary protocol), one transaction, each execution's
 *           affected row count read (the driver reports it: the client's
 *           command tag);
 *   scan    the text protocol, mysql_use_result (unbuffered), every value
 *           converted as the driver does (integer and double parsed);
 *   lookup  M primary-key reads through one prepared statement, rows fetched
 *           unbuffered into bound buffers.
 * The connection has the driver's options (utf8mb4, multi-statements,
 * found-rows, UTC time zone). Prints one JSON object like driver_bench.
 * The scan runs SCAN_PASSES times, its median time reported (bench_common.h).
 *
 * With MYSQL_RAW_NONBLOCK=1 the scan and the lookups use MariaDB's
 * non-blocking API instead (mysql_real_query_start/_cont,
 * mysql_fetch_row_start/_cont, mysql_stmt_execute_start/_cont, ...), each wait
 * a poll(2) on the socket, as a driver on the event loop would run: the
 * measurement behind the driver's blocking design (docs/mysql.md).
 *
 * Usage: mysql_raw HOST PORT USER DBNAME [ROWS [LOOKUPS]]; the password comes
 * from $WIREPOOL_BENCH_PASSWORD. */

#include <mysql.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"

static MYSQL* db;

static void die(const char* what) {
  fprintf(stderr, "mysql_raw: %s: %s\n", what, mysql_error(db));
  exit(1);
}

static void die_stmt(const char* what, MYSQL_STMT* s) {
  fprintf(stderr, "mysql_raw: %s: %s\n", what, mysql_stmt_error(s));
  exit(1);
}

static void run(const char* sql) {
  if (mysql_query(db, sql) != 0) die(sql);
}

/* Waits for what a non-blocking call asked for; answers the status to resume with. */
static int wait_for(int status) {
  struct pollfd p;
  p.fd = (int)mysql_get_socket(db);
  p.events = (short)(((status & MYSQL_WAIT_READ) ? POLLIN : 0) |
                     ((status & MYSQL_WAIT_WRITE) ? POLLOUT : 0));
  p.revents = 0;
  int timeout = (status & MYSQL_WAIT_TIMEOUT) ? (int)mysql_get_timeout_value_ms(db) : -1;
  int rc = poll(&p, 1, timeout);
  if (rc == 0) return MYSQL_WAIT_TIMEOUT;
  int out = 0;
  if (p.revents & (POLLIN | POLLHUP | POLLERR)) out |= MYSQL_WAIT_READ;
  if (p.revents & POLLOUT) out |= MYSQL_WAIT_WRITE;
  return out;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: mysql_raw HOST PORT USER DBNAME [ROWS [LOOKUPS]]\n");
    return 2;
  }
  const long long rows = argc > 5 ? atoll(argv[5]) : 20000;
  const long long lookups = argc > 6 ? atoll(argv[6]) : 5000;
  const char* password = getenv("WIREPOOL_BENCH_PASSWORD");
  const int nonblock = getenv("MYSQL_RAW_NONBLOCK") && atoi(getenv("MYSQL_RAW_NONBLOCK")) != 0;
  db = mysql_init(NULL);
  if (nonblock) mysql_options(db, MYSQL_OPT_NONBLOCK, 0);
  /* The driver's options (backends/mysql/mysql_connection.cpp). */
  const unsigned connect_timeout = 10, write_timeout = 30, no_local = 0;
  const my_bool off = 0;
  mysql_options(db, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
  mysql_options(db, MYSQL_OPT_WRITE_TIMEOUT, &write_timeout);
  mysql_options(db, MYSQL_OPT_RECONNECT, &off);
  mysql_options(db, MYSQL_OPT_LOCAL_INFILE, &no_local);
  mysql_options(db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  mysql_options(db, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00'");
  if (!mysql_real_connect(db, argv[1], argv[3], password ? password : "", argv[4],
                          (unsigned)atoi(argv[2]), NULL,
                          CLIENT_MULTI_STATEMENTS | CLIENT_MULTI_RESULTS | CLIENT_FOUND_ROWS)) {
    die("connect");
  }
  run("DROP TABLE IF EXISTS wp_bench");
  run("CREATE TABLE wp_bench (id BIGINT PRIMARY KEY, name VARCHAR(64), score DOUBLE PRECISION)");

  /* insert */
  double t0 = now();
  run("START TRANSACTION");
  MYSQL_STMT* ins = mysql_stmt_init(db);
  const char* ins_sql = "INSERT INTO wp_bench VALUES (?, ?, ?)";
  if (mysql_stmt_prepare(ins, ins_sql, strlen(ins_sql)) != 0) die_stmt("prepare", ins);
  long long id = 0;
  char name[64];
  unsigned long name_len = 0;
  double score = 0;
  MYSQL_BIND b[3];
  memset(b, 0, sizeof b);
  b[0].buffer_type = MYSQL_TYPE_LONGLONG;
  b[0].buffer = &id;
  b[1].buffer_type = MYSQL_TYPE_STRING;
  b[1].buffer = name;
  b[1].buffer_length = sizeof name;
  b[1].length = &name_len;
  b[2].buffer_type = MYSQL_TYPE_DOUBLE;
  b[2].buffer = &score;
  for (long long i = 1; i <= rows; ++i) {
    id = i;
    name_len = (unsigned long)snprintf(name, sizeof name, "name-%lld-bench", i * 7919 % 1000003);
    score = (double)i * 0.5;
    /* The driver binds every execution (its values may be anywhere). */
    if (mysql_stmt_bind_param(ins, b) != 0) die_stmt("bind", ins);
    if (mysql_stmt_execute(ins) != 0) die_stmt("insert", ins);
    if (mysql_stmt_affected_rows(ins) != 1) die_stmt("insert count", ins);
  }
  mysql_stmt_close(ins);
  run("COMMIT");
  const double insert_s = now() - t0;

  /* scan, SCAN_PASSES times */
  double scan_times[SCAN_PASSES];
  double sum = 0;
  for (int pass = 0; pass < SCAN_PASSES; ++pass) {
    t0 = now();
    const char* scan_sql = "SELECT id, name, score FROM wp_bench";
    if (nonblock) {
      int err = 0;
      int st = mysql_real_query_start(&err, db, scan_sql, strlen(scan_sql));
      while (st != 0)
        st = mysql_real_query_cont(&err, db, wait_for(st));
      if (err != 0) die("scan");
    } else {
      run(scan_sql);
    }
    MYSQL_RES* res = mysql_use_result(db);
    if (res == NULL) die("use_result");
    long long scanned = 0;
    sum = 0;
    MYSQL_ROW r;
    for (;;) {
      if (nonblock) {
        int st = mysql_fetch_row_start(&r, res);
        while (st != 0)
          st = mysql_fetch_row_cont(&r, res, wait_for(st));
      } else {
        r = mysql_fetch_row(res);
      }
      if (r == NULL) break;
      unsigned long* len = mysql_fetch_lengths(res);
      char* end;
      long long v = strtoll(r[0], &end, 10);
      (void)v;
      sum += strtod(r[2], &end) + (double)len[1];
      ++scanned;
    }
    if (mysql_errno(db) != 0) die("scan");
    mysql_free_result(res);
    if (scan_pass_done("mysql_raw", scan_times, pass, t0, scanned, rows)) return 1;
  }
  const double scan_s = median_seconds(scan_times, SCAN_PASSES);

  /* lookup */
  t0 = now();
  MYSQL_STMT* get = mysql_stmt_init(db);
  const char* get_sql = "SELECT name, score FROM wp_bench WHERE id = ?";
  if (mysql_stmt_prepare(get, get_sql, strlen(get_sql)) != 0) die_stmt("prepare lookup", get);
  long long key = 0;
  MYSQL_BIND pb[1];
  memset(pb, 0, sizeof pb);
  pb[0].buffer_type = MYSQL_TYPE_LONGLONG;
  pb[0].buffer = &key;
  char out_name[256];
  unsigned long out_len = 0;
  double out_score = 0;
  my_bool nulls[2], errors[2];
  MYSQL_BIND rb[2];
  memset(rb, 0, sizeof rb);
  rb[0].buffer_type = MYSQL_TYPE_BLOB;
  rb[0].buffer = out_name;
  rb[0].buffer_length = sizeof out_name;
  rb[0].length = &out_len;
  rb[0].is_null = &nulls[0];
  rb[0].error = &errors[0];
  rb[1].buffer_type = MYSQL_TYPE_DOUBLE;
  rb[1].buffer = &out_score;
  rb[1].is_null = &nulls[1];
  rb[1].error = &errors[1];
  uint64_t x = 88172645463325252ULL; /* the same ids as driver_bench */
  long long found = 0;
  for (long long i = 0; i < lookups; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    key = (long long)(x % (uint64_t)rows) + 1;
    if (mysql_stmt_bind_param(get, pb) != 0) die_stmt("bind lookup", get);
    int rc = 0;
    if (nonblock) {
      int st = mysql_stmt_execute_start(&rc, get);
      while (st != 0)
        st = mysql_stmt_execute_cont(&rc, get, wait_for(st));
    } else {
      rc = mysql_stmt_execute(get);
    }
    if (rc != 0) die_stmt("lookup", get);
    if (mysql_stmt_bind_result(get, rb) != 0) die_stmt("bind result", get);
    for (;;) {
      if (nonblock) {
        int st = mysql_stmt_fetch_start(&rc, get);
        while (st != 0)
          st = mysql_stmt_fetch_cont(&rc, get, wait_for(st));
      } else {
        rc = mysql_stmt_fetch(get);
      }
      if (rc != 0 && rc != MYSQL_DATA_TRUNCATED) break;
      ++found;
    }
    if (rc == 1) die_stmt("fetch", get);
    if (nonblock) {
      my_bool fr = 0;
      int st = mysql_stmt_free_result_start(&fr, get);
      while (st != 0)
        st = mysql_stmt_free_result_cont(&fr, get, wait_for(st));
    } else {
      mysql_stmt_free_result(get);
    }
  }
  mysql_stmt_close(get);
  const double lookup_s = now() - t0;
  if (found != lookups) {
    fprintf(stderr, "mysql_raw: found %lld rows\n", found);
    return 1;
  }
  run("DROP TABLE wp_bench");
  mysql_close(db);
  printf(
      "{\"program\": \"c:mysql_raw%s\", \"rows\": %lld, \"lookups\": %lld, "
      "\"insert_rows_per_s\": %.0f, \"scan_rows_per_s\": %.0f, \"lookup_rows_per_s\": %.0f, "
      "\"checksum\": %.1f}\n",
      nonblock ? "_nonblock" : "", rows, lookups, (double)rows / insert_s, (double)rows / scan_s,
      (double)lookups / lookup_s, sum);
  return 0;
}
