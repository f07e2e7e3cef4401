/* The seed's three phases written directly against the ODBC API (unixODBC),
 * with the odbc driver's strategy, as the floor the driver is measured against:
 *   - wide (W) entry points for statement text (narrow ones with UTF-8 text
 *     for a driver that has no W ones, as the driver does: Debian's SQLite ODBC);
 *   - insert: N rows of (bigint, text, double) through one prepared statement
 *     with bound parameters (text as SQL_C_WCHAR), autocommit off, one SQLEndTran,
 *     each execution's count read with SQLRowCount (the driver reports it:
 *     the client's command tag, INSERT 0 1);
 *   - scan: one SELECT read with a block cursor, columns bound column-wise into
 *     a row array of 256 KiB / row width rows, text converted UTF-16 -> UTF-8;
 *   - lookup: M primary-key reads through one prepared statement, its result
 *     columns bound once;
 *   - batch: N rows into a second table as parameter arrays of 1000 rows,
 *     bound column-wise, autocommit off, one SQLEndTran: each array under a
 *     SAVEPOINT except on psqlODBC, and each row's count read with
 *     SQLMoreResults where the driver reports SQL_PARC_BATCH, as the driver
 *     does.
 * Prints one JSON object with rows per second of each phase (driver_bench's form).
 * The scan runs SCAN_PASSES times, its median time reported (bench_common.h).
 *
 * The process starts (and joins) one thread first, as wirepool's executor and
 * driver_bench's login thread make theirs multi-threaded: glibc skips the
 * atomic operations of every mutex (SQLite's, the driver manager's) while a
 * process has never had a second thread, which made this program ~10% faster
 * than any real server could be against the in-process SQLite ODBC driver.
 * WIREPOOL_BENCH_SINGLE_THREAD=1 leaves it single-threaded.
 *
 * Usage: odbc_raw CONNECTION [ROWS [LOOKUPS]]   (password from $WIREPOOL_BENCH_PASSWORD) */

#include <pthread.h>
#include <sql.h>
#include <sqlext.h>
#include <sqlucode.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"

static SQLHDBC dbc;
static int narrow;

static void die(const char* what, SQLSMALLINT type, SQLHANDLE h) {
  SQLCHAR state[6] = {0}, msg[512] = {0};
  SQLINTEGER native = 0;
  SQLSMALLINT len = 0;
  if (h) SQLGetDiagRec(type, h, 1, state, &native, msg, sizeof msg, &len);
  fprintf(stderr, "odbc_raw: %s: %s %s\n", what, state, msg);
  exit(1);
}
#define CHECK(rc, what, type, h)                \
  do {                                          \
    if (!SQL_SUCCEEDED(rc)) die(what, type, h); \
  } while (0)

/* ASCII statement text to UTF-16 (the statements here are ASCII). */
static SQLWCHAR* w(const char* s, SQLWCHAR* buf) {
  size_t i = 0;
  for (; s[i]; ++i)
    buf[i] = (SQLWCHAR)(unsigned char)s[i];
  buf[i] = 0;
  return buf;
}

static SQLRETURN exec_direct(SQLHSTMT h, const char* sql) {
  SQLWCHAR buf[512];
  if (narrow) return SQLExecDirect(h, (SQLCHAR*)sql, SQL_NTS);
  return SQLExecDirectW(h, w(sql, buf), SQL_NTS);
}
static SQLRETURN prepare(SQLHSTMT h, const char* sql) {
  SQLWCHAR buf[512];
  if (narrow) return SQLPrepare(h, (SQLCHAR*)sql, SQL_NTS);
  return SQLPrepareW(h, w(sql, buf), SQL_NTS);
}

/* UTF-16 -> UTF-8 (the driver's conversion of every text cell). */
static size_t to_utf8(const SQLWCHAR* u, size_t n, char* out) {
  size_t o = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t cp = u[i];
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < n && u[i + 1] >= 0xdc00 && u[i + 1] <= 0xdfff) {
      cp = 0x10000 + ((cp - 0xd800) << 10) + (u[i + 1] - 0xdc00);
      ++i;
    }
    if (cp < 0x80) {
      out[o++] = (char)cp;
    } else if (cp < 0x800) {
      out[o++] = (char)(0xc0 | (cp >> 6));
      out[o++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out[o++] = (char)(0xe0 | (cp >> 12));
      out[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
      out[o++] = (char)(0x80 | (cp & 0x3f));
    } else {
      out[o++] = (char)(0xf0 | (cp >> 18));
      out[o++] = (char)(0x80 | ((cp >> 12) & 0x3f));
      out[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
      out[o++] = (char)(0x80 | (cp & 0x3f));
    }
  }
  return o;
}

#define NAME_UNITS (64 * 2 + 1) /* VARCHAR(64): a non-BMP character takes two units */

static void* nothing(void* arg) {
  return arg;
}

int main(int argc, char** argv) {
  if (!getenv("WIREPOOL_BENCH_SINGLE_THREAD")) {
    pthread_t t;
    if (pthread_create(&t, NULL, nothing, NULL) == 0) pthread_join(t, NULL);
  }
  if (argc < 2) {
    fprintf(stderr, "usage: odbc_raw CONNECTION [ROWS [LOOKUPS]]\n");
    return 2;
  }
  const long long rows = argc > 2 ? atoll(argv[2]) : 20000;
  const long long lookups = argc > 3 ? atoll(argv[3]) : 5000;
  char conn[2048];
  const char* pw = getenv("WIREPOOL_BENCH_PASSWORD");
  snprintf(conn, sizeof conn, "%s%s%s%s", argv[1], pw ? ";PWD={" : "", pw ? pw : "", pw ? "}" : "");

  SQLHENV env;
  SQLAllocHandle(SQL_HANDLE_ENV, SQL_NULL_HANDLE, &env);
  SQLSetEnvAttr(env, SQL_ATTR_ODBC_VERSION, (SQLPOINTER)SQL_OV_ODBC3, 0);
  SQLAllocHandle(SQL_HANDLE_DBC, env, &dbc);
  SQLWCHAR wconn[2048];
  CHECK(SQLDriverConnectW(dbc, NULL, w(conn, wconn), SQL_NTS, NULL, 0, NULL, SQL_DRIVER_NOPROMPT),
        "connect", SQL_HANDLE_DBC, dbc);
  /* The driver's probe: does the driver manager narrow UTF-16 on its way? */
  {
    SQLWCHAR probe[] = {'S', 'E', 'L', 'E', 'C', 'T', ' ', '\'', 0xe9, 0x20ac, '\'', 0};
    SQLWCHAR out[64];
    SQLINTEGER out_len = 0;
    if (SQL_SUCCEEDED(SQLNativeSqlW(dbc, probe, 11, out, 64, &out_len))) {
      narrow = out_len != 11 || memcmp(out, probe, 11 * sizeof(SQLWCHAR)) != 0;
    }
  }

  SQLHSTMT st;
  SQLAllocHandle(SQL_HANDLE_STMT, dbc, &st);
  exec_direct(st, "DROP TABLE IF EXISTS wp_bench");
  CHECK(exec_direct(st,
                    "CREATE TABLE wp_bench (id BIGINT PRIMARY KEY, name VARCHAR(64), score "
                    "DOUBLE PRECISION)"),
        "create", SQL_HANDLE_STMT, st);
  SQLFreeStmt(st, SQL_CLOSE);

  /* insert */
  double t0 = now();
  CHECK(SQLSetConnectAttr(dbc, SQL_ATTR_AUTOCOMMIT, (SQLPOINTER)SQL_AUTOCOMMIT_OFF, 0),
        "autocommit", SQL_HANDLE_DBC, dbc);
  {
    SQLHSTMT ins;
    SQLAllocHandle(SQL_HANDLE_STMT, dbc, &ins);
    CHECK(prepare(ins, "INSERT INTO wp_bench VALUES (?, ?, ?)"), "prepare", SQL_HANDLE_STMT, ins);
    SQLBIGINT id = 0;
    SQLWCHAR name[NAME_UNITS];
    double score = 0;
    SQLLEN name_len = 0;
    SQLLEN fixed = 0;
    SQLBindParameter(ins, 1, SQL_PARAM_INPUT, SQL_C_SBIGINT, SQL_BIGINT, 19, 0, &id, 0, &fixed);
    SQLBindParameter(ins, 2, SQL_PARAM_INPUT, SQL_C_WCHAR, SQL_WVARCHAR, 64, 0, name, sizeof name,
                     &name_len);
    SQLBindParameter(ins, 3, SQL_PARAM_INPUT, SQL_C_DOUBLE, SQL_DOUBLE, 15, 0, &score, 0, &fixed);
    for (long long i = 1; i <= rows; ++i) {
      char text[64];
      int n = snprintf(text, sizeof text, "name-%lld-bench", i * 7919 % 1000003);
      for (int k = 0; k < n; ++k)
        name[k] = (SQLWCHAR)text[k];
      name_len = (SQLLEN)n * (SQLLEN)sizeof(SQLWCHAR);
      id = i;
      score = (double)i * 0.5;
      SQLRETURN rc = SQLExecute(ins);
      if (rc != SQL_NO_DATA) CHECK(rc, "insert", SQL_HANDLE_STMT, ins);
      SQLLEN count = 0;
      if (rc == SQL_NO_DATA || !SQL_SUCCEEDED(SQLRowCount(ins, &count)) || count != 1) {
        fprintf(stderr, "odbc_raw: an insert counted %lld rows\n", (long long)count);
        return 1;
      }
    }
    SQLFreeHandle(SQL_HANDLE_STMT, ins);
  }
  CHECK(SQLEndTran(SQL_HANDLE_DBC, dbc, SQL_COMMIT), "commit", SQL_HANDLE_DBC, dbc);
  SQLSetConnectAttr(dbc, SQL_ATTR_AUTOCOMMIT, (SQLPOINTER)SQL_AUTOCOMMIT_ON, 0);
  const double insert_s = now() - t0;

  /* The row array: 256 KiB / (bound width + indicators), as the driver sizes it. */
  const size_t row_bytes = (8 + sizeof(SQLLEN)) + (NAME_UNITS + 1) * sizeof(SQLWCHAR) +
                           sizeof(SQLLEN) + (8 + sizeof(SQLLEN));
  size_t rowset = (256 * 1024) / row_bytes;
  if (rowset < 1) rowset = 1;
  /* The lookup's row (name, score) is narrower: its array has more rows. */
  const size_t lookup_rowset =
      (256 * 1024) / ((NAME_UNITS + 1) * sizeof(SQLWCHAR) + sizeof(SQLLEN) + (8 + sizeof(SQLLEN)));
  const size_t rows_alloc = lookup_rowset > rowset ? lookup_rowset : rowset;
  SQLBIGINT* ids = malloc(rows_alloc * sizeof(SQLBIGINT));
  SQLWCHAR* names = malloc(rows_alloc * (NAME_UNITS + 1) * sizeof(SQLWCHAR));
  double* scores = malloc(rows_alloc * sizeof(double));
  SQLLEN *id_ind = malloc(rows_alloc * sizeof(SQLLEN)),
         *name_ind = malloc(rows_alloc * sizeof(SQLLEN)),
         *score_ind = malloc(rows_alloc * sizeof(SQLLEN));
  char utf8[4 * NAME_UNITS];
  SQLULEN fetched = 0;

  /* scan, SCAN_PASSES times */
  double scan_times[SCAN_PASSES];
  double sum = 0;
  for (int pass = 0; pass < SCAN_PASSES; ++pass) {
    t0 = now();
    long long scanned = 0;
    sum = 0;
    {
      SQLHSTMT sc;
      SQLAllocHandle(SQL_HANDLE_STMT, dbc, &sc);
      CHECK(exec_direct(sc, "SELECT id, name, score FROM wp_bench"), "scan", SQL_HANDLE_STMT, sc);
      SQLSetStmtAttr(sc, SQL_ATTR_ROW_BIND_TYPE, (SQLPOINTER)SQL_BIND_BY_COLUMN, 0);
      SQLSetStmtAttr(sc, SQL_ATTR_ROW_ARRAY_SIZE, (SQLPOINTER)rowset, 0);
      SQLSetStmtAttr(sc, SQL_ATTR_ROWS_FETCHED_PTR, &fetched, 0);
      SQLBindCol(sc, 1, SQL_C_SBIGINT, ids, 8, id_ind);
      SQLBindCol(sc, 2, SQL_C_WCHAR, names, (NAME_UNITS + 1) * sizeof(SQLWCHAR), name_ind);
      SQLBindCol(sc, 3, SQL_C_DOUBLE, scores, 8, score_ind);
      SQLRETURN rc;
      while ((rc = SQLFetch(sc)) != SQL_NO_DATA) {
        CHECK(rc, "fetch", SQL_HANDLE_STMT, sc);
        for (SQLULEN r = 0; r < fetched; ++r) {
          size_t len =
              to_utf8(names + r * (NAME_UNITS + 1), (size_t)name_ind[r] / sizeof(SQLWCHAR), utf8);
          sum += scores[r] + (double)len;
          ++scanned;
        }
      }
      SQLFreeHandle(SQL_HANDLE_STMT, sc);
    }
    if (scan_pass_done("odbc_raw", scan_times, pass, t0, scanned, rows)) return 1;
  }
  const double scan_s = median_seconds(scan_times, SCAN_PASSES);

  /* lookup */
  t0 = now();
  long long found = 0;
  {
    SQLHSTMT get;
    SQLAllocHandle(SQL_HANDLE_STMT, dbc, &get);
    CHECK(prepare(get, "SELECT name, score FROM wp_bench WHERE id = ?"), "prepare lookup",
          SQL_HANDLE_STMT, get);
    SQLBIGINT key = 0;
    SQLLEN fixed = 0;
    SQLBindParameter(get, 1, SQL_PARAM_INPUT, SQL_C_SBIGINT, SQL_BIGINT, 19, 0, &key, 0, &fixed);
    SQLSetStmtAttr(get, SQL_ATTR_ROW_BIND_TYPE, (SQLPOINTER)SQL_BIND_BY_COLUMN, 0);
    SQLSetStmtAttr(get, SQL_ATTR_ROW_ARRAY_SIZE, (SQLPOINTER)lookup_rowset, 0);
    SQLSetStmtAttr(get, SQL_ATTR_ROWS_FETCHED_PTR, &fetched, 0);
    SQLBindCol(get, 1, SQL_C_WCHAR, names, (NAME_UNITS + 1) * sizeof(SQLWCHAR), name_ind);
    SQLBindCol(get, 2, SQL_C_DOUBLE, scores, 8, score_ind);
    uint64_t x = 88172645463325252ULL; /* xorshift: the same ids as driver_bench */
    for (long long i = 0; i < lookups; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      key = (SQLBIGINT)(x % (uint64_t)rows) + 1;
      CHECK(SQLExecute(get), "lookup", SQL_HANDLE_STMT, get);
      SQLRETURN rc;
      while ((rc = SQLFetch(get)) != SQL_NO_DATA) {
        CHECK(rc, "lookup fetch", SQL_HANDLE_STMT, get);
        for (SQLULEN r = 0; r < fetched; ++r) {
          (void)to_utf8(names + r * (NAME_UNITS + 1), (size_t)name_ind[r] / sizeof(SQLWCHAR), utf8);
          ++found;
        }
      }
      SQLFreeStmt(get, SQL_CLOSE);
    }
    SQLFreeHandle(SQL_HANDLE_STMT, get);
  }
  const double lookup_s = now() - t0;
  if (found != lookups) {
    fprintf(stderr, "odbc_raw: found %lld rows, expected %lld\n", found, lookups);
    return 1;
  }
  /* batch */
  exec_direct(st, "DROP TABLE IF EXISTS wp_bench_b");
  CHECK(exec_direct(st,
                    "CREATE TABLE wp_bench_b (id BIGINT PRIMARY KEY, name VARCHAR(64), score "
                    "DOUBLE PRECISION)"),
        "create batch table", SQL_HANDLE_STMT, st);
  SQLFreeStmt(st, SQL_CLOSE);
  char dbms[64] = "";
  SQLGetInfo(dbc, SQL_DBMS_NAME, dbms, sizeof dbms, NULL);
  const int psqlodbc = strcmp(dbms, "PostgreSQL") == 0;
  SQLUINTEGER parc = 0;
  SQLGetInfo(dbc, SQL_PARAM_ARRAY_ROW_COUNTS, &parc, sizeof parc, NULL);
  t0 = now();
  CHECK(SQLSetConnectAttr(dbc, SQL_ATTR_AUTOCOMMIT, (SQLPOINTER)SQL_AUTOCOMMIT_OFF, 0),
        "autocommit", SQL_HANDLE_DBC, dbc);
  {
    enum { BATCH = 1000 };
    SQLHSTMT ins;
    SQLAllocHandle(SQL_HANDLE_STMT, dbc, &ins);
    CHECK(prepare(ins, "INSERT INTO wp_bench_b VALUES (?, ?, ?)"), "prepare batch", SQL_HANDLE_STMT,
          ins);
    SQLBIGINT* ids = malloc(BATCH * sizeof(SQLBIGINT));
    SQLWCHAR* bnames = malloc((size_t)BATCH * NAME_UNITS * sizeof(SQLWCHAR));
    double* bscores = malloc(BATCH * sizeof(double));
    SQLLEN* zero = calloc(BATCH, sizeof(SQLLEN));
    SQLLEN* lens = malloc(BATCH * sizeof(SQLLEN));
    SQLUSMALLINT* status = malloc(BATCH * sizeof(SQLUSMALLINT));
    SQLULEN processed = 0;
    SQLSetStmtAttr(ins, SQL_ATTR_PARAM_BIND_TYPE, (SQLPOINTER)SQL_PARAM_BIND_BY_COLUMN, 0);
    SQLSetStmtAttr(ins, SQL_ATTR_PARAM_STATUS_PTR, status, 0);
    SQLSetStmtAttr(ins, SQL_ATTR_PARAMS_PROCESSED_PTR, &processed, 0);
    for (long long first = 1; first <= rows; first += BATCH) {
      const long long n = rows - first + 1 < BATCH ? rows - first + 1 : BATCH;
      for (long long k = 0; k < n; ++k) {
        const long long i = first + k;
        char text[64];
        int len = snprintf(text, sizeof text, "name-%lld-bench", i * 7919 % 1000003);
        for (int c = 0; c < len; ++c)
          bnames[k * NAME_UNITS + c] = (SQLWCHAR)text[c];
        lens[k] = (SQLLEN)len * (SQLLEN)sizeof(SQLWCHAR);
        ids[k] = i;
        bscores[k] = (double)i * 0.5;
      }
      SQLSetStmtAttr(ins, SQL_ATTR_PARAMSET_SIZE, (SQLPOINTER)(SQLULEN)n, 0);
      SQLBindParameter(ins, 1, SQL_PARAM_INPUT, SQL_C_SBIGINT, SQL_BIGINT, 19, 0, ids, 8, zero);
      SQLBindParameter(ins, 2, SQL_PARAM_INPUT, SQL_C_WCHAR, SQL_WVARCHAR, 256, 0, bnames,
                       NAME_UNITS * sizeof(SQLWCHAR), lens);
      SQLBindParameter(ins, 3, SQL_PARAM_INPUT, SQL_C_DOUBLE, SQL_DOUBLE, 15, 0, bscores, 8, zero);
      if (!psqlodbc) exec_direct(st, "SAVEPOINT wp_batch");
      CHECK(SQLExecute(ins), "batch", SQL_HANDLE_STMT, ins);
      SQLLEN count = 0, total = 0;
      SQLRowCount(ins, &count);
      total = count;
      if (parc == SQL_PARC_BATCH) {
        while (SQLMoreResults(ins) == SQL_SUCCESS) {
          SQLRowCount(ins, &count);
          total += count;
        }
      }
      if (total != n) {
        fprintf(stderr, "odbc_raw: a batch of %lld inserted %lld\n", n, (long long)total);
        return 1;
      }
      SQLFreeStmt(ins, SQL_CLOSE);
      if (!psqlodbc) {
        exec_direct(st, "RELEASE SAVEPOINT wp_batch");
        SQLFreeStmt(st, SQL_CLOSE);
      }
    }
    SQLFreeHandle(SQL_HANDLE_STMT, ins);
    free(ids);
    free(bnames);
    free(bscores);
    free(zero);
    free(lens);
    free(status);
  }
  CHECK(SQLEndTran(SQL_HANDLE_DBC, dbc, SQL_COMMIT), "commit batch", SQL_HANDLE_DBC, dbc);
  SQLSetConnectAttr(dbc, SQL_ATTR_AUTOCOMMIT, (SQLPOINTER)SQL_AUTOCOMMIT_ON, 0);
  const double batch_s = now() - t0;
  exec_direct(st, "DROP TABLE wp_bench_b");

  exec_direct(st, "DROP TABLE wp_bench");
  SQLFreeHandle(SQL_HANDLE_STMT, st);
  SQLDisconnect(dbc);
  SQLFreeHandle(SQL_HANDLE_DBC, dbc);
  SQLFreeHandle(SQL_HANDLE_ENV, env);
  printf(
      "{\"program\": \"c:odbc\", \"rows\": %lld, \"lookups\": %lld, \"insert_rows_per_s\": %.0f, "
      "\"scan_rows_per_s\": %.0f, \"lookup_rows_per_s\": %.0f, \"batch_rows_per_s\": %.0f, "
      "\"checksum\": %.1f}\n",
      rows, lookups, (double)rows / insert_s, (double)rows / scan_s, (double)lookups / lookup_s,
      (double)rows / batch_s, sum);
  return 0;
}
