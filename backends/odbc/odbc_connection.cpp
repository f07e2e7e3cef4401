// The ODBC connection, statement and reader.
//
// Every call goes through unixODBC's wide (W) entry points: statement text,
// column names and diagnostics cross as UTF-16 and are converted here
// (odbc_text.hpp), so nothing depends on the process locale.
//
// Results are read with block cursors: columns bound column-wise into arrays
// sized from their widths, SQL_ATTR_ROW_ARRAY_SIZE rows per SQLFetch. A column
// the driver calls unbounded (TEXT, LONGVARCHAR) is bound at `long_bytes`;
// a cell longer than that is re-read whole with SQLSetPos + SQLGetData, so one
// wide column does not shrink the rowset to a row per fetch. The rowset size
// is settled before the cursor's first fetch and never changed on it (the
// bridge seed: Oracle's driver crashes when it moves): a prepared statement
// sets it before SQLExecute; a direct query sets it after SQLExecDirectW,
// before the first fetch, which the verified drivers accept; an unknown
// driver's query goes through SQLPrepare so its rowset is also set before
// execution. A driver without SQL_GD_BLOCK | SQL_GD_BOUND cannot re-read a
// cell of a rowset: a result with an unbounded column is then read one row a
// fetch, every cell with SQLGetData.
//
// Every object a connection hands out shares its Session: SQLDisconnect
// frees the statements of a connection, so a reader or statement that
// outlives Connection::close() answers closed instead of touching a freed
// handle.

#include "backends/odbc/odbc_connection.hpp"

#include <sql.h>
#include <sqlext.h>
#include <sqlucode.h>

#include <dlfcn.h>
#include <link.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "backends/odbc/odbc_errors.hpp"
#include "backends/odbc/odbc_text.hpp"
#include "backends/odbc/odbc_types.hpp"
#include "sql/lexer.hpp"

namespace wirepool::odbc {

namespace {

using db::Error;
using db::Result;
using db::Status;

static_assert(sizeof(SQLWCHAR) == sizeof(char16_t), "unixODBC's SQLWCHAR is a UTF-16 unit");

bool ok(SQLRETURN rc) {
  return rc == SQL_SUCCESS || rc == SQL_SUCCESS_WITH_INFO;
}

SQLWCHAR* wide(std::u16string& s) {
  return reinterpret_cast<SQLWCHAR*>(s.data());
}

/// The one environment of the process (ODBC 3 behaviour), created on first use.
SQLHENV environment() {
  static SQLHENV env = [] {
    SQLHENV h = SQL_NULL_HENV;
    if (!ok(SQLAllocHandle(SQL_HANDLE_ENV, SQL_NULL_HANDLE, &h))) return SQLHENV{SQL_NULL_HENV};
    SQLSetEnvAttr(h, SQL_ATTR_ODBC_VERSION, reinterpret_cast<SQLPOINTER>(SQL_OV_ODBC3), 0);
    return h;
  }();
  return env;
}

/// The first diagnostic record of a handle, in UTF-8. `narrow`: the driver has
/// no W entry points (Session::narrow) and writes UTF-8 through the narrow one.
Diagnostic diagnostic(SQLSMALLINT type, SQLHANDLE handle, bool narrow = false) {
  Diagnostic d;
  SQLINTEGER native = 0;
  SQLSMALLINT len = 0;
  SQLRETURN rc;
  if (narrow) {
    SQLCHAR state[6] = {};
    std::string msg(1024, '\0');
    rc = SQLGetDiagRec(type, handle, 1, state, &native, reinterpret_cast<SQLCHAR*>(msg.data()),
                       static_cast<SQLSMALLINT>(msg.size()), &len);
    if (ok(rc)) {
      d.sqlstate.assign(reinterpret_cast<const char*>(state), 5);
      d.native = native;
      msg.resize(std::min(msg.size() - 1, static_cast<size_t>(std::max<SQLSMALLINT>(len, 0))));
      d.message = std::move(msg);
      return d;
    }
  } else {
    SQLWCHAR state[6] = {};
    std::u16string msg(1024, u'\0');
    rc = SQLGetDiagRecW(type, handle, 1, state, &native, wide(msg),
                        static_cast<SQLSMALLINT>(msg.size()), &len);
    if (rc == SQL_SUCCESS_WITH_INFO && len >= static_cast<SQLSMALLINT>(msg.size())) {
      msg.assign(static_cast<size_t>(len) + 1, u'\0');
      rc = SQLGetDiagRecW(type, handle, 1, state, &native, wide(msg),
                          static_cast<SQLSMALLINT>(msg.size()), &len);
    }
    if (ok(rc)) {
      d.sqlstate = to_utf8(reinterpret_cast<const char16_t*>(state), 5);
      d.native = native;
      d.message = to_utf8(reinterpret_cast<const char16_t*>(msg.data()),
                          std::min(static_cast<size_t>(std::max<SQLSMALLINT>(len, 0)), msg.size()));
      return d;
    }
  }
  d.sqlstate = "HY000";
  d.message = "the ODBC driver reported an error without a diagnostic record";
  d.missing = true;
  return d;
}

Error protocol_error(std::string sqlstate, std::string message) {
  Error e;
  e.code = db::Errc::invalid_query;
  e.sqlstate = std::move(sqlstate);
  e.message = std::move(message);
  return e;
}

std::string get_info(SQLHDBC dbc, SQLUSMALLINT what) {
  std::u16string buf(256, u'\0');
  SQLSMALLINT len = 0;
  if (!ok(SQLGetInfoW(dbc, what, buf.data(), static_cast<SQLSMALLINT>(buf.size() * 2), &len))) {
    return {};
  }
  return to_utf8(buf.data(),
                 std::min(buf.size(), static_cast<size_t>(std::max<SQLSMALLINT>(len, 0)) / 2));
}

// ---- session ------------------------------------------------------------------

/// The memory of a result's row arrays, every column's in one block. A direct
/// query's handle lives for one statement; its block goes back to the session
/// (Session::spare_rows) for the next one. Allocated afresh per query, the
/// arrays (~256 KiB) came from mmap or a heap top glibc had just trimmed, and
/// psqlODBC's copy into them page-faulted ~55 times per 20,000-row scan
/// (perf record -e page-faults), pages the C program touched once.
struct RowBlock {
  std::unique_ptr<unsigned char[]> bytes;
  size_t size = 0;
};

/// The connection handle, shared by a connection and everything it hands out.
struct Session {
  SQLHDBC dbc = SQL_NULL_HDBC;
  Options options;
  Flavor flavor = Flavor::generic;
  sql::Dialect dialect = sql::Dialect::ansi;
  DriverInfo info;
  /// SQL_GETDATA_EXTENSIONS has SQL_GD_BLOCK and SQL_GD_BOUND: a cell of a
  /// rowset can be re-read with SQLSetPos + SQLGetData.
  bool reread = false;
  /// The ODBC driver has no W entry points (Debian's SQLite ODBC): unixODBC
  /// would narrow our UTF-16 a unit to a byte, so statement text, column names
  /// and diagnostics cross as UTF-8 through the narrow entry points, which it
  /// passes through unchanged. Found by a probe at connection time.
  bool narrow = false;
  /// SQL_PARAM_ARRAY_ROW_COUNTS is SQL_PARC_BATCH: after an array execution
  /// each row's count is read with SQLMoreResults (psqlODBC). MariaDB ODBC
  /// answers SQL_PARC_NO_BATCH and SQLite ODBC nothing: one total.
  bool batch_row_counts = false;
  bool closed = false;
  std::atomic<bool> broken{false};  // the backend went away: alive() answers false
  bool in_tx = false;
  FetchStats stats;
  /// cancel() and the watchdog run on other threads: they cancel under `mu`
  /// (cancel_running), and a statement handle is freed only under it. The
  /// execution itself takes no lock (Running): it publishes its handle in
  /// `running`, and when it ends clears it and waits while a canceller that
  /// saw it is still cancelling (`cancelling`; each side writes its own flag,
  /// then reads the other's). So a cancel never lands on the handle's next
  /// execution, perhaps another client's. A mutex around every SQLExecute and
  /// SQLFetch did the same for ~90 more instructions and two more atomic
  /// operations per call.
  std::mutex mu;
  std::atomic<SQLHSTMT> running{SQL_NULL_HSTMT};
  std::atomic<SQLHSTMT> cancelling{SQL_NULL_HSTMT};
  /// The statement SQLCancel was last called on, until its next execution.
  std::atomic<SQLHSTMT> cancelled{SQL_NULL_HSTMT};
  /// The published call is a SQLite ODBC fetch (Running): a cancel marks it
  /// (`cancelled`, `timed_out`) and the reader answers 57014 when the fetch
  /// returns, instead of SQLCancel, which on that driver frees the rows the
  /// fetch is reading. Written before `running`.
  std::atomic<bool> mark_only{false};
  /// MariaDB ODBC: the server's connection id (CONNECTION_ID()) and the
  /// connection string, for a cancel by KILL QUERY on a side connection
  /// (kill_query). Its own SQLCancel, when it finds the connection idle
  /// (as a statement starts or ends), frees the statement from the
  /// cancelling thread without the executing thread's lock: a crash or
  /// 24000 in the next call (the cancel storm test). 0: SQLCancel.
  uint64_t kill_id = 0;
  std::u16string kill_conn;
  /// SQLite ODBC: the driver's own SQLCancel (found among the loaded
  /// objects), called with the driver's statement handle (SQL_DRIVER_HSTMT,
  /// Handle::drv) past the driver manager: unixODBC's SQLCancel racing an execution on another
  /// thread lost ~1 KiB diagnostic records (LeakSanitizer, ~900 in the
  /// cancel storm), the driver's alone loses nothing.
  SQLRETURN (*driver_cancel)(SQLHSTMT) = nullptr;
  std::atomic<SQLHSTMT> running_drv{SQL_NULL_HSTMT};
  /// One per execution, so a late watchdog misses the next one.
  std::atomic<uint64_t> run_seq{0};
  /// The watchdog cancelled the execution now running.
  std::atomic<bool> timed_out{false};
  /// With query_timeout: when the execution now running (run_seq) passes it,
  /// in steady_clock nanoseconds; 0 while none runs (Running, Watchdog).
  std::atomic<int64_t> deadline{0};
  /// The row-array block of the last direct query, for the next one (Handle).
  /// At most one, and only up to kSpareRowsMax: a connection keeps about
  /// rowset_bytes between statements.
  RowBlock spare_rows;
  static constexpr size_t kSpareRowsMax = size_t{4} << 20;

  /// Cancels the call now running (SQLCancel, or as its driver needs: a
  /// mark, KILL QUERY, the driver's own SQLCancel), if it is `want` (any when
  /// null) and number `seq` (any when 0); `timeout` marks it as the watchdog's.
  /// Called with `mu` held.
  void cancel_running(SQLHSTMT want, uint64_t seq, bool timeout) {
    const uint64_t n = run_seq.load();
    const SQLHSTMT h = running.load();
    if (closed || h == SQL_NULL_HSTMT || (want != SQL_NULL_HSTMT && h != want) ||
        (seq != 0 && n != seq)) {
      return;
    }
    cancelling.store(h);
    // Still the same execution now that it would wait for us to finish.
    if (running.load() == h && run_seq.load() == n) {
      if (timeout) timed_out.store(true, std::memory_order_relaxed);
      cancelled.store(h);
      if (mark_only.load(std::memory_order_relaxed)) {
        // SQLite ODBC fetch: the reader answers the mark.
      } else if (kill_id != 0) {
        kill_query();
      } else if (const SQLHSTMT drv = running_drv.load(std::memory_order_relaxed);
                 driver_cancel != nullptr && drv != SQL_NULL_HSTMT) {
        driver_cancel(drv);
      } else {
        SQLCancel(h);
      }
    }
    cancelling.store(SQL_NULL_HSTMT);
    cancelling.notify_all();
  }

  /// KILL QUERY on a connection of its own, opened and closed for it (cancels
  /// are rare). MariaDB ignores a KILL QUERY that finds the connection idle
  /// (its next statement runs), and the execution waits for this to return
  /// (Running), so it never reaches the next statement. The side login runs
  /// on a thread of its own, waited for at most 3 s (MariaDB ODBC can wait
  /// forever for a server that accepts and never speaks): given up on, it
  /// sends no KILL and frees its handle when the driver returns.
  void kill_query() const {
    struct Pending {
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      bool abandoned = false;
    };
    auto pending = std::make_shared<Pending>();
    std::thread([pending, id = kill_id, text = kill_conn]() mutable {
      SQLHDBC side = SQL_NULL_HDBC;
      if (ok(SQLAllocHandle(SQL_HANDLE_DBC, environment(), &side))) {
        SQLSetConnectAttrW(side, SQL_ATTR_LOGIN_TIMEOUT, reinterpret_cast<SQLPOINTER>(SQLULEN{2}),
                           SQL_IS_UINTEGER);
        SQLSMALLINT out_len = 0;
        if (ok(SQLDriverConnectW(side, nullptr, wide(text), static_cast<SQLSMALLINT>(text.size()),
                                 nullptr, 0, &out_len, SQL_DRIVER_NOPROMPT))) {
          bool go = false;
          {
            std::lock_guard lock(pending->mu);
            go = !pending->abandoned;
          }
          SQLHSTMT st = SQL_NULL_HSTMT;
          if (go && ok(SQLAllocHandle(SQL_HANDLE_STMT, side, &st))) {
            const std::string ascii = "KILL QUERY " + std::to_string(id);
            std::u16string kill(ascii.begin(), ascii.end());
            if (!ok(SQLExecDirectW(st, wide(kill), static_cast<SQLINTEGER>(kill.size())))) {
              const Diagnostic d = diagnostic(SQL_HANDLE_STMT, st);
              spdlog::warn("odbc: cancel by KILL QUERY {} failed: {} {}", id, d.sqlstate,
                           d.message);
            }
            SQLFreeHandle(SQL_HANDLE_STMT, st);
          }
          SQLDisconnect(side);
        } else {
          const Diagnostic d = diagnostic(SQL_HANDLE_DBC, side);
          spdlog::warn("odbc: cancel: the side connection for KILL QUERY failed: {} {}", d.sqlstate,
                       d.message);
        }
        SQLFreeHandle(SQL_HANDLE_DBC, side);
      }
      std::lock_guard lock(pending->mu);
      pending->done = true;
      pending->cv.notify_all();
    }).detach();
    std::unique_lock lock(pending->mu);
    if (!pending->cv.wait_for(lock, std::chrono::seconds(3), [&] { return pending->done; })) {
      pending->abandoned = true;
      spdlog::warn("odbc: cancel: no side connection for KILL QUERY {} within 3 s; given up",
                   kill_id);
    }
  }

  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { close(); }

  /// Rolls back an open transaction first: SQLite ODBC refuses SQLDisconnect
  /// with one open (25000), and a handle left behind keeps its locks (the
  /// bridge seed's lock leak).
  void close() {
    std::lock_guard lock(mu);
    if (closed) return;
    closed = true;
    if (dbc == SQL_NULL_HDBC) return;
    if (in_tx && !broken) {
      SQLEndTran(SQL_HANDLE_DBC, dbc, SQL_ROLLBACK);
      in_tx = false;
    }
    SQLRETURN rc = SQLDisconnect(dbc);
    if (!ok(rc)) {
      const Diagnostic d = diagnostic(SQL_HANDLE_DBC, dbc, narrow);
      if (d.sqlstate == "25000") {
        SQLEndTran(SQL_HANDLE_DBC, dbc, SQL_ROLLBACK);
        rc = SQLDisconnect(dbc);
      }
      if (!ok(rc)) spdlog::debug("odbc: SQLDisconnect: {} {}", d.sqlstate, d.message);
    }
    SQLFreeHandle(SQL_HANDLE_DBC, dbc);
    dbc = SQL_NULL_HDBC;
  }

  Error error(SQLSMALLINT type, SQLHANDLE handle) {
    Diagnostic d = diagnostic(type, handle, narrow);
    // A SQLCancel that reached the statement just as it finished: psqlODBC
    // and MariaDB ODBC then close its cursor (ODBC 2's SQLCancel of an idle
    // statement), and the next call answers HY010, function sequence error;
    // SQLite ODBC's interrupted statement fails without a record. The client
    // asked for the cancel: it is answered as one.
    if (type == SQL_HANDLE_STMT && (d.sqlstate == "HY010" || d.missing) &&
        cancelled.load() == handle) {
      d.sqlstate = "HY008";
      d.message = "the statement was cancelled";
    }
    Error e = map_diagnostic(flavor, d);
    if (e.code == db::Errc::connection) broken = true;
    return e;
  }
  Error stmt_error(SQLHSTMT h) { return error(SQL_HANDLE_STMT, h); }
  Error dbc_error() { return error(SQL_HANDLE_DBC, dbc); }

  Status set_autocommit(bool on) {
    const SQLRETURN rc = SQLSetConnectAttrW(
        dbc, SQL_ATTR_AUTOCOMMIT,
        reinterpret_cast<SQLPOINTER>(on ? SQL_AUTOCOMMIT_ON : SQL_AUTOCOMMIT_OFF), SQL_IS_UINTEGER);
    if (!ok(rc)) return dbc_error();
    return {};
  }
};
using SessionPtr = std::shared_ptr<Session>;

/// Enforces query_timeout for every ODBC driver: SQL_ATTR_QUERY_TIMEOUT is set
/// too, but MariaDB ODBC 3.1 ignores it (SLEEP(20) ran 20 s), so one thread
/// cancels an execution past its deadline, as cancel() would. An execution
/// publishes its deadline in its session (Session::deadline: two atomic
/// stores a call, Running); the thread looks at the sessions with a
/// query_timeout every kTick, so a cancel comes at most kTick late (the
/// option counts whole seconds). A map entry per call and a wake-up of this
/// thread for each, as before, cut a SQLite ODBC insert from ~280,000 rows/s
/// to ~94,000 (one CPU).
class Watchdog {
 public:
  static constexpr std::chrono::milliseconds kTick{100};

  static Watchdog& get() {
    static Watchdog w;
    return w;
  }
  /// Watches a session from now on (one with a query_timeout), until it ends.
  void watch(std::weak_ptr<Session> session) {
    std::lock_guard lock(mu_);
    sessions_.push_back(std::move(session));
    cv_.notify_all();
  }
  static int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

 private:
  Watchdog() : thread_([this] { run(); }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void run() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      if (sessions_.empty()) {
        cv_.wait(lock);
        continue;
      }
      cv_.wait_for(lock, kTick);
      if (stop_) break;
      std::vector<std::pair<SessionPtr, uint64_t>> due;
      const int64_t now = now_ns();
      std::erase_if(sessions_, [&](const std::weak_ptr<Session>& w) {
        SessionPtr s = w.lock();
        if (!s) return true;
        // The number, the deadline, the number again: the same number both
        // times means the deadline is that execution's (Running writes the
        // number before the deadline and clears the deadline when it ends).
        const uint64_t n = s->run_seq.load(std::memory_order_acquire);
        int64_t d = s->deadline.load(std::memory_order_acquire);
        if (d == 0 || now < d || s->run_seq.load(std::memory_order_acquire) != n) return false;
        // Cleared here, so an execution is cancelled once.
        if (s->deadline.compare_exchange_strong(d, 0)) due.emplace_back(std::move(s), n);
        return false;
      });
      lock.unlock();  // the session's lock comes first everywhere else
      for (auto& [s, n] : due) {
        std::lock_guard session_lock(s->mu);
        s->cancel_running(SQL_NULL_HSTMT, n, true);  // unless it has finished
      }
      due.clear();  // a session that ends here ends without this lock
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::weak_ptr<Session>> sessions_;
  bool stop_ = false;
  std::thread thread_;
};

/// A result that ended after SQLCancel reached its statement: it may have
/// been cut short (SQLite ODBC's interrupted statement reads as an empty
/// result), so it is never passed off as complete.
Error user_cancel() {
  Error e;
  e.code = db::Errc::busy;
  e.sqlstate = "57014";  // query_canceled
  e.message = "canceling statement due to user request";
  return e;
}

Error statement_timeout(const Options& o) {
  Error e;
  e.code = db::Errc::busy;
  e.sqlstate = "57014";  // query_canceled
  e.message = "canceling statement due to statement timeout";
  e.detail =
      "the odbc driver's query_timeout (" + std::to_string(o.query_timeout.count()) + " s) passed";
  return e;
}

/// One bound column: its row array and length/indicator array.
struct Bound {
  ColumnPlan plan;
  unsigned char* data = nullptr;  // rowset * plan.width, in its handle's RowBlock
  SQLLEN* ind = nullptr;          // rowset, likewise
};

/// A described result: its columns and how each is read.
struct Shape {
  std::vector<db::Column> columns;
  std::vector<ColumnPlan> plans;
  size_t rowset = 1;
  bool get_data_only = false;  // read every cell with SQLGetData, one row a fetch
};

/// Statement text to the driver: UTF-16 through the W entry point, or UTF-8
/// through the narrow one for a driver without W entry points.
SQLRETURN exec_direct(Session& s, SQLHSTMT h, const std::string& utf8, const std::u16string& u16) {
  if (s.narrow) {
    std::string t = utf8;
    return SQLExecDirect(h, reinterpret_cast<SQLCHAR*>(t.data()),
                         static_cast<SQLINTEGER>(t.size()));
  }
  std::u16string t = u16;
  return SQLExecDirectW(h, wide(t), static_cast<SQLINTEGER>(t.size()));
}

SQLRETURN prepare_text(Session& s, SQLHSTMT h, const std::string& utf8, const std::u16string& u16) {
  if (s.narrow) {
    std::string t = utf8;
    return SQLPrepare(h, reinterpret_cast<SQLCHAR*>(t.data()), static_cast<SQLINTEGER>(t.size()));
  }
  std::u16string t = u16;
  return SQLPrepareW(h, wide(t), static_cast<SQLINTEGER>(t.size()));
}

/// The buffers bound with SQLBindParameter, kept by a statement handle across
/// its executions. A binding is made again only when its type, size or buffer
/// changes: a prepared statement run with values of the same types binds once.
struct ParamBuffers {
  struct Slot {
    std::string bytes;  // binary, decimal digits
    /// Text as UTF-16: its size is the room (at least 256 units, it only
    /// grows, so its address stays bound), `ind` the text's length in bytes.
    std::u16string units;
    int64_t i64 = 0;
    double f64 = 0;
    unsigned char bit = 0;
    SQL_TIMESTAMP_STRUCT ts{};
    SQLLEN ind = 0;
    // What SQLBindParameter was last given.
    bool bound = false;
    db::Kind kind = db::Kind::Null;  // of the value bound
    SQLSMALLINT c_type = 0;
    SQLSMALLINT sql_type = 0;
    SQLULEN column_size = 0;
    SQLSMALLINT digits = 0;
    SQLPOINTER data = nullptr;
    SQLLEN buffer_length = 0;
  };
  std::vector<Slot> slots;
};

/// A statement handle owned by a reader or a prepared statement.
struct Handle {
  SessionPtr session;
  SQLHSTMT h = SQL_NULL_HSTMT;
  /// The bound result (kept across executions of a prepared statement).
  std::unique_ptr<Shape> shape;
  std::vector<Bound> bound;
  RowBlock rows;  // what `bound` points into
  SQLULEN fetched = 0;
  /// `shape` is bound and its rowset set: the next execution may reuse them.
  bool settled = false;
  /// SQLNumResultCols was asked before an execution (a prepared statement).
  bool described = false;
  ParamBuffers params;
  /// Its reader's current row converted (a cell per column) and a cell read
  /// with SQLGetData: kept with the statement, one reader at a time, so each
  /// execution of a prepared statement reuses their buffers (a reader of its
  /// own cost two allocations a primary-key lookup, ~250 instructions).
  std::vector<std::string> cells;
  std::string raw;
  /// The command verb of each statement of its text, shared by its readers.
  std::shared_ptr<const std::vector<std::string>> verbs;
  /// The text's first statement is INSERT, UPDATE, DELETE or MERGE.
  bool first_dml = false;
  /// It is the only one, on PostgreSQL, MariaDB/MySQL or SQLite: it has no
  /// result set, leaves no cursor and no further result (the ODBC statement
  /// is in state S4, which SQLExecute accepts again), so its re-execution
  /// skips SQLNumResultCols and its reader's close SQLFreeStmt(SQL_CLOSE),
  /// together ~1,300 instructions of the driver manager and driver, 5% of a
  /// SQLite ODBC insert. Elsewhere (SQL Server, say, where a trigger's row
  /// counts are further results) both still happen.
  bool single_dml = false;

  static bool is_dml(const std::string& v) {
    return v == "INSERT" || v == "UPDATE" || v == "DELETE" || v == "MERGE";
  }
  void set_verbs(std::shared_ptr<const std::vector<std::string>> v, Flavor flavor) {
    verbs = std::move(v);
    first_dml = !verbs->empty() && is_dml((*verbs)[0]);
    single_dml = first_dml && verbs->size() == 1 && flavor != Flavor::generic;
  }
  const std::vector<std::string>& verb_list() const {
    static const std::vector<std::string> none;
    return verbs ? *verbs : none;
  }

  /// The driver's own handle of `h` (SQL_DRIVER_HSTMT), where the session
  /// cancels past the driver manager (Session::driver_cancel).
  SQLHSTMT drv = SQL_NULL_HSTMT;

  explicit Handle(SessionPtr s) : session(std::move(s)) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { free(); }

  Status alloc() {
    if (!ok(SQLAllocHandle(SQL_HANDLE_STMT, session->dbc, &h))) {
      h = SQL_NULL_HSTMT;
      return session->dbc_error();
    }
    if (session->driver_cancel != nullptr) {
      SQLHSTMT d = h;  // in: the driver manager's handle; out: the driver's
      if (ok(SQLGetInfoW(session->dbc, SQL_DRIVER_HSTMT, &d, sizeof d, nullptr))) drv = d;
    }
    if (session->options.query_timeout.count() > 0) {
      SQLSetStmtAttrW(h, SQL_ATTR_QUERY_TIMEOUT,
                      reinterpret_cast<SQLPOINTER>(
                          static_cast<SQLULEN>(session->options.query_timeout.count())),
                      SQL_IS_UINTEGER);
    }
    return {};
  }
  void free() {
    std::lock_guard lock(session->mu);
    // SQLDisconnect freed the statements of a closed connection already.
    // SQL_CLOSE first: psqlODBC frees the result of a describe
    // (SQLNumResultCols after SQLPrepare) there, and leaks it (~320 bytes,
    // LeakSanitizer) when a statement prepared and described but never run
    // goes straight to SQLFreeHandle (docs/odbc.md, quirks).
    if (h != SQL_NULL_HSTMT && !session->closed) {
      SQLFreeStmt(h, SQL_CLOSE);
      SQLFreeHandle(SQL_HANDLE_STMT, h);
    }
    h = SQL_NULL_HSTMT;
    bound.clear();
    // The larger block stays with the session for the next statement.
    if (rows.size > session->spare_rows.size && rows.size <= Session::kSpareRowsMax &&
        !session->closed) {
      session->spare_rows = std::move(rows);
    }
    rows = {};
  }
};
using HandlePtr = std::shared_ptr<Handle>;

/// Marks a handle's call (SQLExecute, SQLExecDirect, SQLFetch, SQLMoreResults)
/// as the one a cancel() interrupts while it lives, and publishes its
/// query_timeout deadline for the Watchdog.
class Running {
 public:
  /// No lock to start: a cancel that reads the handle before SQLExecute is
  /// called is lost, as it would be after taking one. The sequence number and
  /// the flag are written before the handle is published, so a watchdog that
  /// sees this handle sees this execution's number.
  /// `fetching`: the call reads a result (SQLFetch, SQLMoreResults). SQLite
  /// ODBC's SQLCancel is SQLFreeStmt(SQL_CLOSE) after sqlite3_interrupt: run
  /// from another thread during a fetch it frees the rows being read (a
  /// crash in the driver's conversion, found by the cancel storm test). So
  /// on that driver a fetch is cancelled by a mark (Session::mark_only) that
  /// the reader answers when the fetch returns.
  Running(const Handle& hd, bool fetching = false) : s_(*hd.session) {
    s_.timed_out.store(false, std::memory_order_relaxed);
    const uint64_t seq = s_.run_seq.load(std::memory_order_relaxed) + 1;
    s_.run_seq.store(seq, std::memory_order_release);
    s_.mark_only.store(fetching && s_.flavor == Flavor::sqlite, std::memory_order_relaxed);
    s_.running_drv.store(hd.drv, std::memory_order_relaxed);
    s_.running.store(hd.h, std::memory_order_release);
    if (s_.options.query_timeout.count() > 0) [[unlikely]] {
      s_.deadline.store(
          Watchdog::now_ns() + std::chrono::nanoseconds(s_.options.query_timeout).count(),
          std::memory_order_release);
    }
  }
  /// A canceller that saw this call (Session::cancelling) finishes first.
  ~Running() {
    if (s_.options.query_timeout.count() > 0) [[unlikely]]
      s_.deadline.store(0, std::memory_order_release);
    const SQLHSTMT h = s_.running.exchange(SQL_NULL_HSTMT);
    if (s_.cancelling.load() == h) [[unlikely]]
      wait_for_canceller(h);
  }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

 private:
  // Out of line: what a call does only while a cancel is under way stays out
  // of the few instructions every execution and fetch runs (their code
  // shares the instruction cache with the ODBC driver's, which a SQLite ODBC
  // insert already fills: docs/odbc.md).
  [[gnu::noinline, gnu::cold]] void wait_for_canceller(SQLHSTMT h) {
    for (SQLHSTMT c = s_.cancelling.load(); c == h && c != SQL_NULL_HSTMT;
         c = s_.cancelling.load()) {
      s_.cancelling.wait(c);
    }
  }

  Session& s_;
};

// ---- parameters -----------------------------------------------------------------

/// How a value of `kind` is bound: its C type, SQL type, column size and
/// decimal digits. One table for single rows (bind_params) and arrays
/// (ParamArrays). `size`: UTF-16 units of a text, bytes of a binary value,
/// digits of a decimal; `scale`: a decimal's.
struct Binding {
  SQLSMALLINT c_type = SQL_C_CHAR;
  SQLSMALLINT sql_type = SQL_VARCHAR;
  SQLULEN column_size = 1;
  SQLSMALLINT digits = 0;
};
Binding binding_of(db::Kind kind, size_t size = 0, int32_t scale = 0) {
  switch (kind) {
    case db::Kind::Null:  // a VARCHAR NULL: every verified driver converts it
      return {};
    case db::Kind::Bool:
      return {SQL_C_BIT, SQL_BIT, 1, 0};
    case db::Kind::I64:
      return {SQL_C_SBIGINT, SQL_BIGINT, 19, 0};
    case db::Kind::U64:
      // Beyond INT64_MAX a BIGINT parameter cannot carry it: exact digits.
      return {SQL_C_CHAR, SQL_DECIMAL, 20, 0};
    case db::Kind::F64:
      return {SQL_C_DOUBLE, SQL_DOUBLE, 15, 0};
    case db::Kind::Decimal:
      return {SQL_C_CHAR, SQL_NUMERIC, std::max<size_t>(size, 1), static_cast<SQLSMALLINT>(scale)};
    case db::Kind::Text:
      // In steps of 256 characters, so values of different lengths share a binding.
      return {SQL_C_WCHAR, static_cast<SQLSMALLINT>(size > 4000 ? SQL_WLONGVARCHAR : SQL_WVARCHAR),
              (std::max<size_t>(size, 1) + 255) / 256 * 256, 0};
    case db::Kind::Bytes:
      return {SQL_C_BINARY,
              static_cast<SQLSMALLINT>(size > 8000 ? SQL_LONGVARBINARY : SQL_VARBINARY),
              std::max<size_t>(size, 1), 0};
    case db::Kind::Time:
      return {SQL_C_TYPE_TIMESTAMP, SQL_TYPE_TIMESTAMP, 26, 6};
  }
  return {};
}

/// A decimal's digit count and scale ("-12.50": 4 and 2).
std::pair<size_t, int32_t> decimal_shape(std::string_view text) {
  size_t ndigits = 0;
  for (char c : text)
    ndigits += c >= '0' && c <= '9';
  const size_t point = text.find('.');
  return {ndigits,
          point == std::string_view::npos ? 0 : static_cast<int32_t>(text.size() - point - 1)};
}

/// Binds marker i (0-based) to `v` into `slot`: SQLBindParameter unless the
/// slot's binding (type, size, buffer) stays the same. Out of line: a
/// prepared statement run again with values of the same kinds never gets here
/// (bind_params).
[[gnu::noinline]] Status bind_slot(Session& s, SQLHSTMT h, size_t i, const db::Value& v,
                                   ParamBuffers::Slot& slot) {
  Binding bd;
  SQLPOINTER data = nullptr;
  SQLLEN buffer_length = 0;
  switch (v.kind) {
    case db::Kind::Null:
      slot.ind = SQL_NULL_DATA;
      data = slot.bytes.data();
      break;
    case db::Kind::Bool:
      slot.bit = v.b ? 1 : 0;
      slot.ind = 0;
      bd = binding_of(v.kind);
      data = &slot.bit;
      break;
    case db::Kind::I64:
      slot.i64 = v.i64;
      slot.ind = 0;
      bd = binding_of(v.kind);
      data = &slot.i64;
      break;
    case db::Kind::U64:
      slot.bytes = std::to_string(v.u64);
      slot.ind = static_cast<SQLLEN>(slot.bytes.size());
      bd = binding_of(v.kind);
      data = slot.bytes.data();
      buffer_length = slot.ind;
      break;
    case db::Kind::F64:
      slot.f64 = v.f64;
      slot.ind = 0;
      bd = binding_of(v.kind);
      data = &slot.f64;
      break;
    case db::Kind::Decimal: {
      slot.bytes = v.str;
      slot.ind = static_cast<SQLLEN>(slot.bytes.size());
      const auto [ndigits, scale] = decimal_shape(v.str);
      bd = binding_of(v.kind, ndigits, scale);
      data = slot.bytes.data();
      buffer_length = slot.ind;
      break;
    }
    case db::Kind::Text: {
      std::u16string& units = slot.units;
      // UTF-8 never takes more UTF-16 units than bytes: the room suffices.
      if (units.size() < std::max<size_t>(v.str.size(), 256)) {
        units.resize(std::max<size_t>(v.str.size(), 256));
      }
      const size_t n = to_utf16(v.str, units.data(), units.size());
      if (n == kNoRoom) {
        return protocol_error("22021", "invalid byte sequence for encoding \"UTF8\"");
      }
      slot.ind = static_cast<SQLLEN>(n * 2);
      bd = binding_of(v.kind, n);
      data = units.data();
      buffer_length = static_cast<SQLLEN>(units.size() * 2);
      break;
    }
    case db::Kind::Bytes:
      slot.bytes = v.str;
      slot.ind = static_cast<SQLLEN>(slot.bytes.size());
      bd = binding_of(v.kind, slot.bytes.size());
      data = slot.bytes.data();
      buffer_length = slot.ind;
      break;
    case db::Kind::Time:
      slot.ts = timestamp_of(v.micros);
      slot.ind = 0;
      bd = binding_of(v.kind);
      data = &slot.ts;
      break;
  }
  const SQLSMALLINT c_type = bd.c_type;
  const SQLSMALLINT sql_type = bd.sql_type;
  const SQLULEN column_size = bd.column_size;
  const SQLSMALLINT digits = bd.digits;
  if (slot.bound && slot.c_type == c_type && slot.sql_type == sql_type &&
      slot.column_size == column_size && slot.digits == digits && slot.data == data &&
      slot.buffer_length == buffer_length) {
    slot.kind = v.kind;
    return {};  // the same binding: the new value is already in its buffer
  }
  const SQLRETURN rc =
      SQLBindParameter(h, static_cast<SQLUSMALLINT>(i + 1), SQL_PARAM_INPUT, c_type, sql_type,
                       column_size, digits, data, buffer_length, &slot.ind);
  if (!ok(rc)) {
    slot.bound = false;
    return s.stmt_error(h);
  }
  slot.bound = true;
  slot.kind = v.kind;
  slot.c_type = c_type;
  slot.sql_type = sql_type;
  slot.column_size = column_size;
  slot.digits = digits;
  slot.data = data;
  slot.buffer_length = buffer_length;
  return {};
}

/// Binds `params` to the ? markers of a statement; `binds` says which
/// parameter each marker takes (a repeated $N binds its value again).
///
/// Every value is bound with an explicit C type and SQL type, NULL included
/// (never SQL_C_DEFAULT: the bridge seed's Firebird driver retyped an integer
/// parameter after a NULL bound that way). A NULL is a VARCHAR NULL: every
/// verified driver converts it to the column's type.
Status bind_params(Session& s, SQLHSTMT h, db::Params params, const std::vector<size_t>& binds,
                   ParamBuffers& buf) {
  if (buf.slots.size() != binds.size()) [[unlikely]] {
    SQLFreeStmt(h, SQL_RESET_PARAMS);
    buf.slots.assign(binds.size(), {});
  }
  for (size_t i = 0; i < binds.size(); ++i) {
    const db::Param& p = params[binds[i]];
    if (p.pg_format >= 0) [[unlikely]] {
      return Error::unsupported("the odbc driver takes no native PostgreSQL parameters");
    }
    const db::Value& v = p.value;
    auto& slot = buf.slots[i];
    if (slot.bound && slot.kind == v.kind) [[likely]] {
      // The kind bound last time: only the value moves, into the same buffer.
      switch (v.kind) {
        case db::Kind::I64:
          slot.i64 = v.i64;
          continue;
        case db::Kind::F64:
          slot.f64 = v.f64;
          continue;
        case db::Kind::Bool:
          slot.bit = v.b ? 1 : 0;
          continue;
        case db::Kind::Time:
          slot.ts = timestamp_of(v.micros);
          continue;
        case db::Kind::Text:
          // Converted into the bound buffer; the binding holds while the
          // length stays in the bound column size's step (binding_of). Text
          // too long for the buffer, or invalid UTF-8, goes on to bind_slot.
          if (const size_t n = to_utf16(v.str, slot.units.data(), slot.units.size());
              n != kNoRoom) {
            const Binding bd = binding_of(db::Kind::Text, n);
            if (bd.column_size == slot.column_size && bd.sql_type == slot.sql_type) {
              slot.ind = static_cast<SQLLEN>(n * 2);
              continue;
            }
          }
          break;
        default:
          break;
      }
    }
    if (auto st = bind_slot(s, h, i, v, slot); !st.ok()) return st;
  }
  return {};
}

/// Column-wise parameter arrays for a batch: one array (and one length /
/// indicator array) per marker, bound once for all the rows.
class ParamArrays {
 public:
  /// Fills the arrays; false when a marker's values are not of one kind
  /// across the rows (or a decimal's scale differs), which one binding
  /// cannot carry: the caller runs the rows one by one instead.
  /// `same_binary_length`: SQLite ODBC 0.9998 binds every row of a SQL_C_BINARY
  /// array with the first row's length (a 4-byte value after a 3-byte one
  /// arrived cut to 3), so for it binary values of different lengths do not
  /// fit (docs/odbc.md, quirks).
  std::optional<Error> fill(std::span<const db::Params> rows, const std::vector<size_t>& binds,
                            bool same_binary_length, bool& fits) {
    fits = true;
    cols_.assign(binds.size(), {});
    const size_t n = rows.size();
    for (size_t i = 0; i < binds.size(); ++i) {
      Col& c = cols_[i];
      c.ind.assign(n, 0);
      db::Kind kind = db::Kind::Null;
      for (const db::Params& row : rows) {
        const db::Param& p = row[binds[i]];
        if (p.pg_format >= 0) {
          return Error::unsupported("the odbc driver takes no native PostgreSQL parameters");
        }
        const db::Kind k = p.value.kind;
        if (k == db::Kind::Null) continue;
        if (kind != db::Kind::Null && k != kind) {
          fits = false;
          return std::nullopt;
        }
        kind = k;
      }
      if (same_binary_length && kind == db::Kind::Bytes) {
        size_t len = SIZE_MAX;
        for (const db::Params& row : rows) {
          const db::Value& v = row[binds[i]].value;
          if (v.is_null()) continue;
          if (len != SIZE_MAX && v.str.size() != len) {
            fits = false;
            return std::nullopt;
          }
          len = v.str.size();
        }
      }
      if (auto e = fill_col(c, kind, rows, binds[i], fits); e || !fits) return e;
    }
    return std::nullopt;
  }

  /// SQLBindParameter for every marker, with the arrays of fill().
  Status bind(Session& s, SQLHSTMT h) {
    for (size_t i = 0; i < cols_.size(); ++i) {
      Col& c = cols_[i];
      const SQLRETURN rc = SQLBindParameter(
          h, static_cast<SQLUSMALLINT>(i + 1), SQL_PARAM_INPUT, c.bd.c_type, c.bd.sql_type,
          c.bd.column_size, c.bd.digits, c.data.data(), static_cast<SQLLEN>(c.width), c.ind.data());
      if (!ok(rc)) return s.stmt_error(h);
    }
    return {};
  }

 private:
  struct Col {
    std::vector<unsigned char> data;  // rows * width
    std::vector<SQLLEN> ind;
    size_t width = 1;
    Binding bd;
  };

  template <class T>
  static void put(Col& c, size_t r, const T& v) {
    std::memcpy(c.data.data() + r * c.width, &v, sizeof v);
  }

  static std::optional<Error> fill_col(Col& c, db::Kind kind, std::span<const db::Params> rows,
                                       size_t j, bool& fits) {
    const size_t n = rows.size();
    auto value = [&](size_t r) -> const db::Value& { return rows[r][j].value; };
    // Variable-width kinds: their bytes first (one buffer for all rows, no
    // allocation per value), to size the array.
    std::string bytes;
    std::vector<std::pair<size_t, size_t>> at(n);  // offset and length in `bytes`
    auto text_of = [&](size_t r) {
      return std::string_view(bytes).substr(at[r].first, at[r].second);
    };
    if (kind == db::Kind::Text || kind == db::Kind::Decimal || kind == db::Kind::U64 ||
        kind == db::Kind::Bytes) {
      int32_t scale = -1;
      size_t ndigits = 0;
      for (size_t r = 0; r < n; ++r) {
        const db::Value& v = value(r);
        if (v.is_null()) continue;
        const size_t offset = bytes.size();
        if (kind == db::Kind::Text) {
          thread_local std::u16string units;
          if (!to_utf16(v.str, units)) {
            return protocol_error("22021", "invalid byte sequence for encoding \"UTF8\"");
          }
          bytes.append(reinterpret_cast<const char*>(units.data()), units.size() * 2);
        } else if (kind == db::Kind::U64) {
          bytes += std::to_string(v.u64);
        } else {
          bytes += v.str;
        }
        at[r] = {offset, bytes.size() - offset};
        if (kind == db::Kind::Decimal) {
          const auto [digits, sc] = decimal_shape(v.str);
          if (scale >= 0 && sc != scale) {
            fits = false;  // one binding has one scale
            return std::nullopt;
          }
          scale = sc;
          ndigits = std::max(ndigits, digits);
        }
        c.width = std::max(c.width, at[r].second);
      }
      if (kind == db::Kind::Text) c.width = std::max<size_t>(c.width, 2);
      c.bd = binding_of(kind,
                        kind == db::Kind::Text      ? c.width / 2
                        : kind == db::Kind::Decimal ? ndigits
                                                    : c.width,
                        std::max(scale, 0));
    } else {
      c.bd = binding_of(kind);
      c.width = kind == db::Kind::I64    ? sizeof(int64_t)
                : kind == db::Kind::F64  ? sizeof(double)
                : kind == db::Kind::Time ? sizeof(SQL_TIMESTAMP_STRUCT)
                                         : 1;  // Bool, or a column of NULLs
    }
    c.data.assign(n * c.width, 0);
    for (size_t r = 0; r < n; ++r) {
      const db::Value& v = value(r);
      if (v.is_null()) {
        c.ind[r] = SQL_NULL_DATA;
        continue;
      }
      switch (kind) {
        case db::Kind::I64:
          put(c, r, v.i64);
          break;
        case db::Kind::F64:
          put(c, r, v.f64);
          break;
        case db::Kind::Bool:
          c.data[r] = v.b ? 1 : 0;
          break;
        case db::Kind::Time:
          put(c, r, timestamp_of(v.micros));
          break;
        default:
          std::memcpy(c.data.data() + r * c.width, text_of(r).data(), at[r].second);
          c.ind[r] = static_cast<SQLLEN>(at[r].second);
          break;
      }
    }
    return std::nullopt;
  }

  std::vector<Col> cols_;
};

Error count_mismatch(size_t supplied, size_t required) {
  // PostgreSQL's wording and SQLSTATE (protocol_violation) for the same mistake.
  return protocol_error("08P01", "bind message supplies " + std::to_string(supplied) +
                                     " parameters, but the statement requires " +
                                     std::to_string(required));
}

// ---- result columns ---------------------------------------------------------------

Result<Shape> describe(Session& s, SQLHSTMT h) {
  Shape out;
  SQLSMALLINT n = 0;
  if (!ok(SQLNumResultCols(h, &n))) return s.stmt_error(h);
  size_t row_bytes = 0;
  bool unbounded = false;
  bool full_width = false;  // a long column bound at its whole declared width
  for (SQLSMALLINT i = 1; i <= n; ++i) {
    std::string column_name;
    std::string type_name;
    SQLSMALLINT type = 0, digits = 0, nullable = SQL_NULLABLE_UNKNOWN;
    SQLULEN size = 0;
    if (s.flavor == Flavor::postgresql && !s.narrow) {
      // psqlODBC answers SQLDescribeCol (for its nullable) and the type name
      // with a catalog query, a round trip per statement: read the fields that
      // need none (docs/odbc.md, quirks). Nullable stays unknown, the type name
      // is ODBC's.
      auto num = [&](SQLUSMALLINT field) {
        SQLLEN v = 0;
        SQLColAttributeW(h, static_cast<SQLUSMALLINT>(i), field, nullptr, 0, nullptr, &v);
        return v;
      };
      std::u16string name(256, u'\0');
      SQLSMALLINT name_bytes = 0;
      if (!ok(SQLColAttributeW(h, static_cast<SQLUSMALLINT>(i), SQL_DESC_NAME, name.data(),
                               static_cast<SQLSMALLINT>(name.size() * 2), &name_bytes, nullptr))) {
        return s.stmt_error(h);
      }
      if (static_cast<size_t>(name_bytes) / 2 >= name.size()) {
        name.assign(static_cast<size_t>(name_bytes) / 2 + 1, u'\0');
        if (!ok(SQLColAttributeW(h, static_cast<SQLUSMALLINT>(i), SQL_DESC_NAME, name.data(),
                                 static_cast<SQLSMALLINT>(name.size() * 2), &name_bytes,
                                 nullptr))) {
          return s.stmt_error(h);
        }
      }
      column_name =
          to_utf8(name.data(), std::min(name.size() - 1, static_cast<size_t>(name_bytes) / 2));
      type = static_cast<SQLSMALLINT>(num(SQL_DESC_TYPE));
      if (type == SQL_DATETIME) {
        // psqlODBC 13 answers 0 for SQL_DESC_DATETIME_INTERVAL_CODE: the
        // display length tells date (10), time (8) and timestamp (19+) apart.
        const SQLLEN code = num(SQL_DESC_DATETIME_INTERVAL_CODE);
        const SQLLEN length = num(SQL_DESC_LENGTH);
        if (code == SQL_CODE_DATE || (code == 0 && length == 10)) {
          type = SQL_TYPE_DATE;
        } else if (code == SQL_CODE_TIME || (code == 0 && length < 19)) {
          type = SQL_TYPE_TIME;
        } else {
          type = SQL_TYPE_TIMESTAMP;
        }
      }
      const bool numeric = type == SQL_DECIMAL || type == SQL_NUMERIC;
      size = static_cast<SQLULEN>(
          std::max<SQLLEN>(num(numeric ? SQL_DESC_PRECISION : SQL_DESC_LENGTH), 0));
      digits = static_cast<SQLSMALLINT>(num(SQL_DESC_SCALE));
    } else if (s.narrow) {
      std::string name(256, '\0');
      SQLSMALLINT name_len = 0;
      SQLRETURN rc = SQLDescribeCol(
          h, static_cast<SQLUSMALLINT>(i), reinterpret_cast<SQLCHAR*>(name.data()),
          static_cast<SQLSMALLINT>(name.size()), &name_len, &type, &size, &digits, &nullable);
      if (!ok(rc)) return s.stmt_error(h);
      if (name_len >= static_cast<SQLSMALLINT>(name.size())) {
        name.assign(static_cast<size_t>(name_len) + 1, '\0');
        rc = SQLDescribeCol(
            h, static_cast<SQLUSMALLINT>(i), reinterpret_cast<SQLCHAR*>(name.data()),
            static_cast<SQLSMALLINT>(name.size()), &name_len, &type, &size, &digits, &nullable);
        if (!ok(rc)) return s.stmt_error(h);
      }
      name.resize(
          std::min(name.size() - 1, static_cast<size_t>(std::max<SQLSMALLINT>(name_len, 0))));
      column_name = std::move(name);
      char tn[128] = {};
      SQLSMALLINT tn_len = 0;
      if (ok(SQLColAttribute(h, static_cast<SQLUSMALLINT>(i), SQL_DESC_TYPE_NAME, tn, sizeof tn,
                             &tn_len, nullptr))) {
        type_name.assign(
            tn,
            std::min<size_t>(sizeof tn - 1, static_cast<size_t>(std::max<SQLSMALLINT>(tn_len, 0))));
      }
    } else {
      std::u16string name(256, u'\0');
      SQLSMALLINT name_len = 0;
      SQLRETURN rc = SQLDescribeColW(h, static_cast<SQLUSMALLINT>(i), wide(name),
                                     static_cast<SQLSMALLINT>(name.size()), &name_len, &type, &size,
                                     &digits, &nullable);
      if (!ok(rc)) return s.stmt_error(h);
      if (name_len >= static_cast<SQLSMALLINT>(name.size())) {
        name.assign(static_cast<size_t>(name_len) + 1, u'\0');
        rc = SQLDescribeColW(h, static_cast<SQLUSMALLINT>(i), wide(name),
                             static_cast<SQLSMALLINT>(name.size()), &name_len, &type, &size,
                             &digits, &nullable);
        if (!ok(rc)) return s.stmt_error(h);
      }
      column_name =
          to_utf8(name.data(),
                  std::min(name.size(), static_cast<size_t>(std::max<SQLSMALLINT>(name_len, 0))));
      std::u16string tn(64, u'\0');
      SQLSMALLINT tn_len = 0;
      if (ok(SQLColAttributeW(h, static_cast<SQLUSMALLINT>(i), SQL_DESC_TYPE_NAME, tn.data(),
                              static_cast<SQLSMALLINT>(tn.size() * 2), &tn_len, nullptr))) {
        type_name =
            to_utf8(tn.data(),
                    std::min(tn.size(), static_cast<size_t>(std::max<SQLSMALLINT>(tn_len, 0)) / 2));
      }
    }
    SQLLEN is_unsigned = SQL_FALSE;
    SQLColAttributeW(h, static_cast<SQLUSMALLINT>(i), SQL_DESC_UNSIGNED, nullptr, 0, nullptr,
                     &is_unsigned);
    ColumnPlan plan =
        plan_column(type, size, digits, is_unsigned == SQL_TRUE, s.options.long_bytes);
    if (plan.unbounded && !s.reread && s.flavor == Flavor::mariadb && plan.read == Read::wtext &&
        size > 0 && size <= 65535) {
      // MariaDB's TEXT holds at most 65,535 bytes, so at most 65,535 UTF-16
      // units: bound whole, it never overflows, and the rowset keeps several
      // rows although MariaDB ODBC cannot re-read a cell (docs/odbc.md).
      plan.unbounded = false;
      plan.width = (static_cast<size_t>(size) + 1) * sizeof(SQLWCHAR);
      full_width = true;
    }
    db::Column c;
    c.name = std::move(column_name);
    c.kind = plan.kind;
    c.nullable = nullable != SQL_NO_NULLS;
    c.native.name = type_name.empty() ? sql_type_name(type) : type_name;
    if (plan.kind == db::Kind::Decimal) {
      c.native.precision = static_cast<int32_t>(size);
      c.native.scale = digits;
    } else if (plan.kind == db::Kind::Text || plan.kind == db::Kind::Bytes) {
      if (size > 0 && !plan.unbounded) c.native.length = static_cast<int64_t>(size);
    }
    c.native.time_form = plan.time_form;
    unbounded = unbounded || plan.unbounded;
    row_bytes += plan.width + sizeof(SQLLEN);
    out.columns.push_back(std::move(c));
    out.plans.push_back(plan);
  }
  if (unbounded && !s.reread) {
    out.get_data_only = true;
    out.rowset = 1;
  } else if (n > 0) {
    size_t budget = s.options.rowset_bytes;
    // A row of a full-width TEXT binding is ~128 KiB: allow 8 of them (1 MiB)
    // rather than one a fetch.
    if (full_width) budget = std::max(budget, std::min<size_t>(8 * row_bytes, 2u << 20));
    out.rowset = std::clamp<size_t>(budget / std::max<size_t>(row_bytes, 1), 1, 4096);
  }
  return out;
}

/// Settles the rowset of a cursor that has not fetched yet and binds its
/// columns into one block: the handle's own if large enough, else the
/// session's spare, else a new one.
Status bind_columns(Session& s, Handle& hd) {
  const SQLHSTMT h = hd.h;
  const Shape& shape = *hd.shape;
  std::vector<Bound>& bound = hd.bound;
  SQLULEN* fetched = &hd.fetched;
  bound.clear();
  SQLFreeStmt(h, SQL_UNBIND);
  const size_t rowset = shape.get_data_only ? 1 : shape.rowset;
  SQLSetStmtAttrW(h, SQL_ATTR_ROW_BIND_TYPE, reinterpret_cast<SQLPOINTER>(SQL_BIND_BY_COLUMN), 0);
  if (!ok(SQLSetStmtAttrW(h, SQL_ATTR_ROW_ARRAY_SIZE, reinterpret_cast<SQLPOINTER>(rowset), 0))) {
    return s.stmt_error(h);
  }
  if (!ok(SQLSetStmtAttrW(h, SQL_ATTR_ROWS_FETCHED_PTR, fetched, 0))) return s.stmt_error(h);
  s.stats.rowset_size = rowset;
  if (shape.get_data_only) return {};
  // Each array starts aligned for any C type (SQL_TIMESTAMP_STRUCT, doubles).
  constexpr size_t kAlign = alignof(std::max_align_t);
  auto aligned = [](size_t n) { return (n + kAlign - 1) / kAlign * kAlign; };
  size_t need = 0;
  for (const ColumnPlan& plan : shape.plans) {
    need += aligned(rowset * sizeof(SQLLEN)) + aligned(rowset * plan.width);
  }
  if (hd.rows.size < need) {
    {
      std::lock_guard lock(s.mu);  // Handle::free gives blocks back under it
      if (s.spare_rows.size >= need) {
        hd.rows = std::move(s.spare_rows);
        s.spare_rows = {};
      }
    }
    if (hd.rows.size < need) {
      hd.rows.bytes.reset(new unsigned char[need]);  // operator new[]: aligned for max_align_t
      hd.rows.size = need;
      ++s.stats.row_blocks;
    }
  }
  unsigned char* at = hd.rows.bytes.get();
  bound.resize(shape.plans.size());
  for (size_t i = 0; i < shape.plans.size(); ++i) {
    Bound& b = bound[i];
    b.plan = shape.plans[i];
    b.ind = reinterpret_cast<SQLLEN*>(at);
    at += aligned(rowset * sizeof(SQLLEN));
    b.data = at;
    at += aligned(rowset * b.plan.width);
    const SQLRETURN rc = SQLBindCol(h, static_cast<SQLUSMALLINT>(i + 1), b.plan.c_type, b.data,
                                    static_cast<SQLLEN>(b.plan.width), b.ind);
    if (!ok(rc)) return s.stmt_error(h);
  }
  return {};
}

/// Describes the result the handle's cursor now holds and binds it, unless
/// the shape settled before execution still fits. The rowset is set here,
/// before the cursor's first fetch.
Status settle_result(Session& s, Handle& hd) {
  // A prepared statement described and bound before its execution returns
  // that result: no call needed.
  if (hd.settled && hd.described && hd.shape && !hd.shape->columns.empty()) return {};
  SQLSMALLINT n = 0;
  if (!ok(SQLNumResultCols(hd.h, &n))) return s.stmt_error(hd.h);
  if (hd.settled && hd.shape && hd.shape->columns.size() == static_cast<size_t>(n)) return {};
  if (n == 0) {
    // No result set (INSERT, UPDATE, ...): nothing to describe or bind, and
    // the empty shape of the last execution serves again (it was allocated
    // and described, with a second SQLNumResultCols, per execution).
    if (!hd.shape || !hd.shape->columns.empty()) hd.shape = std::make_unique<Shape>();
    hd.settled = false;
    return {};
  }
  auto shape = describe(s, hd.h);
  if (!shape.ok()) return shape.take_error();
  hd.shape = std::make_unique<Shape>(std::move(shape.value()));
  hd.settled = false;
  if (hd.shape->columns.empty()) return {};
  if (auto st = bind_columns(s, hd); !st.ok()) return st;
  hd.settled = true;
  return {};
}

/// Before SQLExecute of a prepared statement: describe what SQLPrepare told
/// and settle the rowset, so it is never set on an open cursor.
Status settle_prepared(Session& s, Handle& hd) {
  // Once per handle: psqlODBC answers SQLNumResultCols before an execution
  // with a Parse/Describe round trip and a plan it deallocates after the
  // next execution, which made every execution of a prepared INSERT three
  // round trips (docs/odbc.md, quirks).
  if (hd.settled || hd.described) return {};
  hd.described = true;
  SQLSMALLINT n = 0;
  if (!ok(SQLNumResultCols(hd.h, &n)) || n == 0) return {};  // known after execution
  auto shape = describe(s, hd.h);
  if (!shape.ok()) return shape.take_error();
  hd.shape = std::make_unique<Shape>(std::move(shape.value()));
  if (auto st = bind_columns(s, hd); !st.ok()) return st;
  hd.settled = true;
  return {};
}

/// Pads exact decimal text to its scale ("1.5" at scale 2 is "1.50"): some
/// drivers (SQLite ODBC) hand out the shortest form.
void pad_decimal(std::string& text, int32_t scale) {
  if (scale <= 0 || text.empty()) return;
  const size_t point = text.find('.');
  if (text.find_first_of("eE") != std::string::npos) return;
  const size_t have = point == std::string::npos ? 0 : text.size() - point - 1;
  if (point == std::string::npos) text += '.';
  if (have < static_cast<size_t>(scale)) text.append(static_cast<size_t>(scale) - have, '0');
}

/// The command verb of each statement of a text (Handle::verbs).
using VerbsPtr = std::shared_ptr<const std::vector<std::string>>;

// ---- reader -----------------------------------------------------------------------

class OdbcRows final : public db::RowsImpl {
 public:
  // A reader holds its handle only, and through it the session and the
  // statement's verbs: no reference count of its own to take and drop per
  // execution. After close() (hd_ empty) it touches neither.
  OdbcRows() = default;
  ~OdbcRows() override {
    if (hd_) (void)close();
  }

  /// A spare block per thread: a prepared statement run over and over makes
  /// and drops one reader per execution (a SQLite ODBC insert: malloc and free
  /// were ~150 instructions of ~30,000).
  static void* operator new(size_t n) {
    if (n == sizeof(OdbcRows) && spare_.p != nullptr) return std::exchange(spare_.p, nullptr);
    return ::operator new(n);
  }
  static void operator delete(void* p, size_t n) noexcept {
    if (n == sizeof(OdbcRows) && spare_.p == nullptr) {
      spare_.p = p;
      return;
    }
    ::operator delete(p);
  }

  /// Runs a direct query on a fresh handle: SQLExecDirectW, then the rowset.
  std::optional<Error> run_direct(HandlePtr hd, const std::string& text,
                                  const std::u16string& wtext, db::Params params,
                                  const std::vector<size_t>& binds) {
    start(std::move(hd));
    Session& s = *hd_->session;
    if (auto st = bind_params(s, hd_->h, params, binds, hd_->params); !st.ok()) return st.error();
    SQLRETURN rc;
    {
      Running running(*hd_);
      rc = exec_direct(s, hd_->h, text, wtext);
    }
    return after_execute(rc);
  }

  /// Runs a prepared handle: the rowset settled before SQLExecute.
  std::optional<Error> run_prepared(HandlePtr hd, db::Params params,
                                    const std::vector<size_t>& binds) {
    start(std::move(hd));
    Session& s = *hd_->session;
    if (auto st = bind_params(s, hd_->h, params, binds, hd_->params); !st.ok()) return st.error();
    if (!hd_->settled && !hd_->described) {
      if (auto st = settle_prepared(s, *hd_); !st.ok()) return st.error();
    }
    SQLRETURN rc;
    {
      Running running(*hd_);
      rc = SQLExecute(hd_->h);
    }
    return after_execute(rc);
  }

  std::span<const db::Column> columns() const override {
    if (!hd_ || !hd_->shape) return {};
    return hd_->shape->columns;
  }

  Result<bool> next_borrowed(std::span<db::ValueView> row) override {
    if (!hd_) return Error::closed("rows");
    Session& s = *hd_->session;
    if (s.closed) return Error::closed();
    if (done_ || !hd_->shape || hd_->shape->columns.empty()) return false;
    Handle& hd = *hd_;
    if (pos_ >= hd.fetched) {
      hd.fetched = 0;
      SQLRETURN rc;
      {
        // A driver that streams (psqlODBC UseDeclareFetch, MariaDB NO_CACHE)
        // waits on the server here too: cancel() and query_timeout reach it.
        Running running(hd, /*fetching=*/true);
        rc = SQLFetch(hd.h);
      }
      if (s.timed_out) return statement_timeout(s.options);
      if (rc == SQL_NO_DATA) {
        done_ = true;
        if (cancel_reached()) return user_cancel();
        return false;
      }
      if (!ok(rc)) return s.stmt_error(hd.h);
      // A cancel that reached this fetch (SQLite ODBC's mark, or a driver
      // that answered rows all the same) ends the result here.
      if (cancel_reached()) return user_cancel();
      if (hd.shape->get_data_only) hd.fetched = 1;
      ++s.stats.fetches;
      s.stats.rows += hd.fetched;
      s.stats.max_rows_per_fetch = std::max<uint64_t>(s.stats.max_rows_per_fetch, hd.fetched);
      pos_ = 0;
      if (hd.fetched == 0) {
        done_ = true;
        return false;
      }
    }
    const size_t r = pos_++;
    ++rows_read_;
    const size_t n = std::min(row.size(), hd.shape->columns.size());
    hd.cells.resize(hd.shape->columns.size());
    for (size_t i = 0; i < n; ++i) {
      if (auto e = cell(i, r, row[i])) return *e;
    }
    return true;
  }

  Result<bool> next_result() override {
    if (!hd_) return Error::closed("rows");
    if (hd_->session->closed) return Error::closed();
    SQLRETURN rc;
    {
      Running running(*hd_, /*fetching=*/true);
      rc = SQLMoreResults(hd_->h);
    }
    if (rc == SQL_NO_DATA) {
      done_ = true;
      if (cancel_reached()) return user_cancel();
      return false;
    }
    if (ok(rc) && cancel_reached()) return user_cancel();
    ++result_index_;
    affected_ = -1;
    hd_->settled = false;  // a new cursor: described and settled afresh
    if (auto e = after_execute(rc)) return *e;
    return true;
  }

  db::CommandInfo command() const override {
    db::CommandInfo info;
    if (!hd_) return info;  // closed (db::Rows asks only while open)
    info.verb = verb();
    info.affected = affected_;
    if (hd_->shape && !hd_->shape->columns.empty() && info.verb == "SELECT") {
      info.affected = static_cast<int64_t>(rows_read_);
    }
    return info;
  }

  Status close() override {
    if (!hd_) return {};
    if (!no_cursor_) {
      Session& s = *hd_->session;
      std::lock_guard lock(s.mu);
      if (!s.closed && hd_->h != SQL_NULL_HSTMT) {
        SQLFreeStmt(hd_->h, SQL_CLOSE);
        ++s.stats.cursor_closes;
      }
    }
    hd_.reset();  // a direct query's handle is freed; a prepared one is free again
    return {};
  }

 private:
  std::optional<Error> after_execute(SQLRETURN rc) {
    Session& s = *hd_->session;
    pos_ = 0;
    rows_read_ = 0;
    done_ = false;
    no_cursor_ = false;
    hd_->fetched = 0;
    if (s.timed_out.load(std::memory_order_relaxed) || (rc != SQL_NO_DATA && !ok(rc)) ||
        (rc == SQL_NO_DATA && cancel_reached())) [[unlikely]] {
      return failed(rc);
    }
    const bool single_dml = hd_->single_dml && result_index_ == 0;
    if (single_dml && hd_->described && hd_->shape && hd_->shape->columns.empty()) [[likely]] {
      // A prepared lone INSERT/UPDATE/DELETE run again (Handle::single_dml):
      // no result set, only its count. Straight-line, apart from the rest.
      done_ = true;
      no_cursor_ = true;
      SQLLEN count = -1;
      if (rc == SQL_NO_DATA) {
        affected_ = 0;
      } else if (ok(SQLRowCount(hd_->h, &count)) && count >= 0) {
        affected_ = count;
      }
      return std::nullopt;
    }
    return settle(rc, single_dml);
  }

  /// after_execute's general case: a result to describe (and bind), or not.
  [[gnu::noinline]] std::optional<Error> settle(SQLRETURN rc, bool single_dml) {
    Session& s = *hd_->session;
    const bool dml = result_index_ == 0 ? hd_->first_dml : Handle::is_dml(verb());
    if (auto st = settle_result(s, *hd_); !st.ok()) {
      return st.error();
    }
    if (!hd_->shape || hd_->shape->columns.empty()) {
      done_ = true;
      SQLLEN count = -1;
      if (rc != SQL_NO_DATA && ok(SQLRowCount(hd_->h, &count)) && count >= 0) {
        if (dml) affected_ = count;
      } else if (rc == SQL_NO_DATA) {
        if (dml) affected_ = 0;
      }
      no_cursor_ = single_dml;
    }
    return std::nullopt;
  }

  /// An execution that did not complete: the watchdog's cancel, the
  /// driver's error, or a cancel that reached it. Out of line (Running).
  [[gnu::noinline, gnu::cold]] std::optional<Error> failed(SQLRETURN rc) {
    Session& s = *hd_->session;
    if (s.timed_out) {
      // The watchdog cancelled it: whatever the driver answered (MariaDB's
      // interrupted SLEEP() answers 1), the statement did not complete.
      SQLFreeStmt(hd_->h, SQL_CLOSE);
      return statement_timeout(s.options);
    }
    if (rc != SQL_NO_DATA && !ok(rc)) {
      Error e = s.stmt_error(hd_->h);
      SQLFreeStmt(hd_->h, SQL_CLOSE);
      return e;
    }
    SQLFreeStmt(hd_->h, SQL_CLOSE);
    return user_cancel();
  }

  /// Reads a whole cell with SQLGetData (the cursor is on its row) into raw.
  std::optional<Error> get_data(size_t col, const ColumnPlan& plan, std::string& raw,
                                bool& is_null) {
    Session& s = *hd_->session;
    raw.clear();
    is_null = false;
    const SQLUSMALLINT c = static_cast<SQLUSMALLINT>(col + 1);
    const bool var =
        plan.read == Read::wtext || plan.read == Read::binary || plan.read == Read::decimal;
    if (!var) {
      raw.resize(plan.width);
      SQLLEN ind = 0;
      const SQLRETURN rc =
          SQLGetData(hd_->h, c, plan.c_type, raw.data(), static_cast<SQLLEN>(raw.size()), &ind);
      if (!ok(rc)) return s.stmt_error(hd_->h);
      is_null = ind == SQL_NULL_DATA;
      return std::nullopt;
    }
    const size_t term = plan.read == Read::wtext ? 2 : plan.read == Read::decimal ? 1 : 0;
    // UTF-16 text: each unit is at least one byte once converted to UTF-8.
    const uint64_t limit = s.options.max_value_size * (plan.read == Read::wtext ? 2 : 1);
    auto too_large = [&](uint64_t bytes) { return limit != 0 && bytes > limit; };
    char buf[8192];
    for (bool first = true;; first = false) {
      SQLLEN ind = 0;
      const SQLRETURN rc = SQLGetData(hd_->h, c, plan.c_type, buf, sizeof buf, &ind);
      if (rc == SQL_NO_DATA && first) {
        // The driver says the cell was read already: never hand out a cell
        // cut short as if it were whole (MariaDB ODBC does this after
        // SQLSetPos; docs/odbc.md).
        return protocol_error("XX000", "the ODBC driver returned no data for column " +
                                           std::to_string(col + 1) + " of a row");
      }
      if (rc == SQL_NO_DATA) break;
      if (!ok(rc)) return s.stmt_error(hd_->h);
      if (ind == SQL_NULL_DATA) {
        is_null = true;
        return std::nullopt;
      }
      const size_t room = sizeof buf - term;
      // Refused before it is read whole: by the length the driver announces,
      // else by what has arrived.
      if (too_large(raw.size() + (ind == SQL_NO_TOTAL ? room : static_cast<uint64_t>(ind)))) {
        raw.clear();
        raw.shrink_to_fit();
        return Error::value_too_large(s.options.max_value_size);
      }
      if (ind == SQL_NO_TOTAL || static_cast<size_t>(ind) > room) {
        raw.append(buf, room);  // truncated: more follows
        if (rc == SQL_SUCCESS) break;
        continue;
      }
      raw.append(buf, static_cast<size_t>(ind));
      break;
    }
    return std::nullopt;
  }

  /// Fills `out` with cell (row r of the rowset, column i).
  std::optional<Error> cell(size_t i, size_t r, db::ValueView& out) {
    Handle& hd = *hd_;
    const ColumnPlan& plan = hd.shape->plans[i];
    const unsigned char* p = nullptr;
    size_t len = 0;
    std::string& own = hd.cells[i];
    std::string& raw = hd.raw;
    bool reread = false;  // the bytes are in raw, which the next cell reuses
    if (hd.shape->get_data_only) {
      bool is_null = false;
      if (auto e = get_data(i, plan, raw, is_null)) return e;
      if (is_null) {
        out = db::ValueView::null();
        return std::nullopt;
      }
      p = reinterpret_cast<const unsigned char*>(raw.data());
      len = raw.size();
      reread = true;
    } else {
      const Bound& b = hd.bound[i];
      const SQLLEN ind = b.ind[r];
      if (ind == SQL_NULL_DATA) {
        out = db::ValueView::null();
        return std::nullopt;
      }
      p = b.data + r * plan.width;
      len = plan.width;
      const size_t term = plan.read == Read::wtext ? 2 : plan.read == Read::decimal ? 1 : 0;
      const bool var =
          plan.read == Read::wtext || plan.read == Read::binary || plan.read == Read::decimal;
      if (var) {
        if (ind == SQL_NO_TOTAL || static_cast<size_t>(ind) > plan.width - term) {
          // Longer than its bound width: position on the row, read it whole.
          Session& s = *hd_->session;
          const uint64_t limit = s.options.max_value_size * (plan.read == Read::wtext ? 2 : 1);
          if (ind != SQL_NO_TOTAL && limit != 0 && static_cast<uint64_t>(ind) > limit) {
            return Error::value_too_large(s.options.max_value_size);
          }
          if (!s.reread) {
            // Only a full-width binding gets here, and its width is the most
            // the column can hold: the driver broke its own description.
            return protocol_error("XX000", "the ODBC driver returned a value of column " +
                                               std::to_string(i + 1) +
                                               " longer than the width it declared");
          }
          if (!ok(SQLSetPos(hd.h, static_cast<SQLSETPOSIROW>(r + 1), SQL_POSITION,
                            SQL_LOCK_NO_CHANGE))) {
            return s.stmt_error(hd.h);
          }
          bool is_null = false;
          if (auto e = get_data(i, plan, raw, is_null)) return e;
          ++s.stats.rereads;
          p = reinterpret_cast<const unsigned char*>(raw.data());
          len = raw.size();
          reread = true;
        } else {
          len = static_cast<size_t>(ind);
        }
      }
    }
    switch (plan.read) {
      case Read::bit:
        out = db::ValueView::boolean(*p != 0);
        break;
      case Read::sbigint: {
        int64_t v;
        std::memcpy(&v, p, sizeof v);
        out = db::ValueView::int64(v);
        break;
      }
      case Read::ubigint: {
        uint64_t v;
        std::memcpy(&v, p, sizeof v);
        out = db::ValueView::uint64(v);
        break;
      }
      case Read::dbl: {
        double v;
        std::memcpy(&v, p, sizeof v);
        out = db::ValueView::float64(v);
        break;
      }
      case Read::wtext: {
        // Bound cells start at even offsets of an aligned array; raw is a
        // heap or in-object buffer: both aligned for char16_t.
        own.clear();
        append_utf8(reinterpret_cast<const char16_t*>(p), len / 2, own);
        out = db::ValueView::text(own);
        break;
      }
      case Read::decimal: {
        own.assign(reinterpret_cast<const char*>(p), len);
        pad_decimal(own, hd.shape->columns[i].native.scale);
        out = db::ValueView::decimal(own);
        break;
      }
      case Read::binary:
        if (reread) {
          own.assign(reinterpret_cast<const char*>(p), len);
          out = db::ValueView::bytes(own);
        } else {
          out = db::ValueView::bytes(std::string_view(reinterpret_cast<const char*>(p), len));
        }
        break;
      case Read::timestamp: {
        SQL_TIMESTAMP_STRUCT ts;
        std::memcpy(&ts, p, sizeof ts);
        out = db::ValueView::time(micros_of(ts));
        break;
      }
      case Read::date: {
        SQL_DATE_STRUCT d;
        std::memcpy(&d, p, sizeof d);
        out = db::ValueView::time(micros_of(d));
        break;
      }
      case Read::guid: {
        SQLGUID g;
        std::memcpy(&g, p, sizeof g);
        own = guid_text(g);
        out = db::ValueView::text(own);
        break;
      }
    }
    return std::nullopt;
  }

  /// Takes the handle of an execution: a cancel of its last one is over.
  void start(HandlePtr hd) {
    hd_ = std::move(hd);
    auto& cancelled = hd_->session->cancelled;
    if (cancelled.load(std::memory_order_relaxed) == hd_->h) cancelled.store(SQL_NULL_HSTMT);
  }

  /// SQLCancel reached this execution (Session::cancelled).
  bool cancel_reached() const { return hd_->session->cancelled.load() == hd_->h; }

  /// The verb of the statement whose result this is.
  const std::string& verb() const {
    static const std::string none;
    const auto& verbs = hd_->verb_list();
    return result_index_ < verbs.size() ? verbs[result_index_] : none;
  }

  struct Spare {
    void* p = nullptr;
    ~Spare() { ::operator delete(p); }
  };
  static thread_local Spare spare_;

  HandlePtr hd_;
  size_t result_index_ = 0;
  int64_t affected_ = -1;  // rows the statement of this result changed (CommandInfo)
  SQLULEN pos_ = 0;
  uint64_t rows_read_ = 0;
  bool done_ = false;
  bool no_cursor_ = false;  // nothing left for SQLFreeStmt(SQL_CLOSE) to close
};

thread_local OdbcRows::Spare OdbcRows::spare_;

VerbsPtr verbs_of(std::string_view text, sql::Dialect d) {
  auto out = std::make_shared<std::vector<std::string>>();
  for (auto piece : sql::split_statements(text, d))
    out->push_back(sql::command_verb(piece, d));
  return out;
}

// ---- prepared statement -------------------------------------------------------------

class OdbcStatement final : public db::StatementImpl {
 public:
  OdbcStatement(SessionPtr session, HandlePtr hd, Rewritten rw, std::u16string text,
                std::span<const db::ParamInfo> hints)
      : session_(std::move(session)),
        hd_(std::move(hd)),
        rw_(std::move(rw)),
        text_(std::move(text)) {
    params_.resize(std::max(rw_.needed, hints.size()));
    for (size_t i = 0; i < hints.size(); ++i)
      params_[i] = hints[i];
    // What SQLPrepare told of the result, settled now so that every execution
    // reuses one row array.
    if (settle_prepared(*session_, *hd_).ok() && hd_->shape) columns_ = hd_->shape->columns;
  }

  std::span<const db::ParamInfo> params() const override { return params_; }
  std::span<const db::Column> columns() const override { return columns_; }

  Result<std::unique_ptr<db::RowsImpl>> query(db::Params params, const db::QueryOptions&) override {
    if (!hd_) return Error::closed("statement");
    if (session_->closed) return Error::closed();
    if (params.size() != rw_.needed) return count_mismatch(params.size(), rw_.needed);
    HandlePtr use;
    if (hd_.use_count() > 1) [[unlikely]] {  // a reader of this statement holds it
      auto copy = fresh_copy();
      if (!copy.ok()) return copy.take_error();
      use = std::move(copy.value());
    } else {
      use = hd_;
    }
    auto rows = std::make_unique<OdbcRows>();
    if (auto e = rows->run_prepared(std::move(use), params, rw_.binds)) [[unlikely]]
      return *e;
    return std::unique_ptr<db::RowsImpl>(std::move(rows));
  }

  /// A reader of this statement is still open: a fresh copy to run beside it.
  [[gnu::noinline]] Result<HandlePtr> fresh_copy() {
    ++session_->stats.statement_copies;
    auto use = std::make_shared<Handle>(session_);
    use->set_verbs(hd_->verbs, session_->flavor);
    if (auto st = use->alloc(); !st.ok()) return st.take_error();
    if (!ok(prepare_text(*session_, use->h, rw_.text, text_))) return session_->stmt_error(use->h);
    return use;
  }

  Result<db::BatchInfo> execute_batch(std::span<const db::Params> rows) override {
    if (!hd_) return Error::closed("statement");
    if (session_->closed) return Error::closed();
    for (const db::Params& row : rows) {
      if (row.size() != rw_.needed) return count_mismatch(row.size(), rw_.needed);
    }
    // A statement with a result runs row by row; so does a batch of one.
    if (rows.size() < 2 || !columns_.empty()) {
      return db::StatementImpl::execute_batch(rows);
    }
    Session& s = *session_;
    ParamArrays arrays;
    bool fits = true;
    if (auto e = arrays.fill(rows, rw_.binds, s.flavor == Flavor::sqlite, fits)) return *e;
    if (!fits) return db::StatementImpl::execute_batch(rows);
    // A handle of its own, prepared and never described: psqlODBC runs an
    // array on a handle it has not described as one round trip of
    // statements ("INSERT …;INSERT …"), but on a described one (the single-row
    // handle, settle_prepared) as one Bind/Execute per row: 10,181 against
    // 79,062 rows/s in bench/odbc_vs_c.py's batch cell. It also leaves the
    // single-row handle's bindings alone.
    if (!batch_hd_) {
      auto b = std::make_shared<Handle>(session_);
      if (auto st = b->alloc(); !st.ok()) return st.take_error();
      if (!ok(prepare_text(s, b->h, rw_.text, text_))) return session_->stmt_error(b->h);
      batch_hd_ = std::move(b);
    }
    const SQLHSTMT h = batch_hd_->h;
    std::vector<SQLUSMALLINT> status(rows.size(), SQL_PARAM_UNUSED);
    SQLULEN processed = 0;
    auto attr = [&](SQLINTEGER what, SQLPOINTER v) { return SQLSetStmtAttrW(h, what, v, 0); };
    auto restore = [&] {
      SQLFreeStmt(h, SQL_CLOSE);
      SQLFreeStmt(h, SQL_RESET_PARAMS);
      attr(SQL_ATTR_PARAMSET_SIZE, reinterpret_cast<SQLPOINTER>(static_cast<SQLULEN>(1)));
      attr(SQL_ATTR_PARAM_STATUS_PTR, nullptr);
      attr(SQL_ATTR_PARAMS_PROCESSED_PTR, nullptr);
    };
    if (!ok(attr(SQL_ATTR_PARAM_BIND_TYPE,
                 reinterpret_cast<SQLPOINTER>(static_cast<SQLULEN>(SQL_PARAM_BIND_BY_COLUMN)))) ||
        !ok(attr(SQL_ATTR_PARAMSET_SIZE,
                 reinterpret_cast<SQLPOINTER>(static_cast<SQLULEN>(rows.size()))))) {
      restore();  // no parameter arrays in this driver
      return db::StatementImpl::execute_batch(rows);
    }
    attr(SQL_ATTR_PARAM_STATUS_PTR, status.data());
    attr(SQL_ATTR_PARAMS_PROCESSED_PTR, &processed);
    if (auto st = arrays.bind(s, h); !st.ok()) {
      restore();
      return st.take_error();
    }
    // A failed batch leaves none of its rows behind. psqlODBC sends the array
    // as one query under its own savepoint (statement-level rollback,
    // _EXEC_SVP_; ours would be released with it); SQLite ODBC keeps the rows
    // before a failing one, and another driver may too, so in a transaction
    // the batch runs under a savepoint. Outside one, the caller brackets it.
    const bool guard = s.in_tx && s.flavor != Flavor::postgresql;
    if (guard && !run_text("SAVEPOINT wp_batch")) {
      restore();
      return db::StatementImpl::execute_batch(rows);  // no savepoints here: row by row
    }
    ++s.stats.batches;
    SQLRETURN rc;
    db::BatchInfo out;
    {
      Running running(*batch_hd_);
      rc = SQLExecute(h);
      if (rc != SQL_NO_DATA && ok(rc)) {
        SQLLEN count = -1;
        if (ok(SQLRowCount(h, &count)) && count >= 0) out.total = count;
        if (s.batch_row_counts) {
          // psqlODBC: the first row's count now, each next one after SQLMoreResults.
          out.affected.push_back(std::max<int64_t>(out.total, 0));
          while (out.affected.size() < rows.size()) {
            rc = SQLMoreResults(h);
            if (rc == SQL_NO_DATA || !ok(rc)) break;
            count = -1;
            SQLRowCount(h, &count);
            out.affected.push_back(std::max<int64_t>(count, 0));
          }
          // To the end, as a C program would (restore() closes the cursor anyway).
          while (ok(rc) && rc != SQL_NO_DATA)
            rc = SQLMoreResults(h);
          if (rc == SQL_NO_DATA) rc = SQL_SUCCESS;
          out.total = 0;
          for (int64_t a : out.affected)
            out.total += a;
          if (out.affected.size() != rows.size()) out.affected.clear();
        }
      } else if (rc == SQL_NO_DATA) {
        out.total = 0;  // nothing matched (UPDATE, DELETE)
        rc = SQL_SUCCESS;
      }
    }
    const bool failed = s.timed_out || !ok(rc);
    std::optional<Error> err;
    if (s.timed_out) {
      err = statement_timeout(s.options);
    } else if (failed) {
      err = s.stmt_error(h);
    }
    restore();
    if (guard) {
      if (failed) (void)run_text("ROLLBACK TO SAVEPOINT wp_batch");
      (void)run_text("RELEASE SAVEPOINT wp_batch");
    }
    if (err) return std::move(*err);
    return out;
  }

  /// Runs a statement without parameters or result on a handle of its own.
  bool run_text(const std::string& text) {
    Handle tmp(session_);
    if (!tmp.alloc().ok()) return false;
    std::u16string wtext(text.begin(), text.end());  // ASCII
    SQLRETURN rc;
    {
      Running running(tmp);
      rc = exec_direct(*session_, tmp.h, text, wtext);
    }
    if (!ok(rc) && rc != SQL_NO_DATA) {
      const Error e = session_->stmt_error(tmp.h);
      spdlog::debug("odbc: {}: {} {}", text, e.sqlstate, e.message);
      return false;
    }
    return true;
  }

  Status close() override {
    batch_hd_.reset();
    hd_.reset();  // freed now, or by the reader still running it
    return {};
  }

 private:
  SessionPtr session_;
  HandlePtr hd_;
  HandlePtr batch_hd_;  // execute_batch's (created on the first batch)
  Rewritten rw_;
  std::u16string text_;
  std::vector<db::ParamInfo> params_;
  std::vector<db::Column> columns_;
};

// ---- connection ---------------------------------------------------------------------

class OdbcConnection final : public db::ConnectionImpl {
 public:
  explicit OdbcConnection(SessionPtr session) : session_(std::move(session)) {}
  ~OdbcConnection() override { session_->close(); }

  db::Capabilities capabilities() const override {
    db::Capabilities c;
    c.dialect = session_->dialect;
    // The session layer splits multi-statement text for every ODBC driver:
    // SQLite ODBC refuses several statements in one call, MariaDB ODBC takes
    // them only with its multi-statement option. query() still returns every
    // result of a batch a driver accepts (SQLMoreResults).
    c.multi_statement = false;
    c.blocking = true;
    c.param_arrays = true;
    c.batch_row_counts = session_->batch_row_counts;
    return c;
  }

  Result<std::unique_ptr<db::RowsImpl>> query(std::string_view text, db::Params params,
                                              const db::QueryOptions&) override {
    Session& s = *session_;
    if (s.closed) return Error::closed();
    Error err;
    auto rw = rewrite_markers(text, s.dialect, &err);
    if (!rw) return err;
    if (params.size() != rw->needed) return count_mismatch(params.size(), rw->needed);
    auto wtext = to_utf16(rw->text);
    if (!wtext) return protocol_error("22021", "invalid byte sequence for encoding \"UTF8\"");
    auto hd = std::make_shared<Handle>(session_);
    if (auto st = hd->alloc(); !st.ok()) return st.take_error();
    hd->set_verbs(verbs_of(text, s.dialect), s.flavor);
    auto rows = std::make_unique<OdbcRows>();
    if (s.flavor == Flavor::generic) {
      // An unknown driver: prepare first, so the rowset is settled before
      // execution (Oracle's driver crashes when it moves on an open cursor).
      if (!ok(prepare_text(s, hd->h, rw->text, *wtext))) {
        return s.stmt_error(hd->h);
      }
      if (auto e = rows->run_prepared(std::move(hd), params, rw->binds)) return *e;
    } else if (auto e = rows->run_direct(std::move(hd), rw->text, *wtext, params, rw->binds)) {
      return *e;
    }
    return std::unique_ptr<db::RowsImpl>(std::move(rows));
  }

  Result<std::unique_ptr<db::StatementImpl>> prepare(
      std::string_view text, std::span<const db::ParamInfo> hints) override {
    Session& s = *session_;
    if (s.closed) return Error::closed();
    if (sql::split_statements(text, s.dialect).size() > 1) {
      // PostgreSQL's answer to the same request.
      return protocol_error("42601", "cannot insert multiple commands into a prepared statement");
    }
    Error err;
    auto rw = rewrite_markers(text, s.dialect, &err);
    if (!rw) return err;
    auto wtext = to_utf16(rw->text);
    if (!wtext) return protocol_error("22021", "invalid byte sequence for encoding \"UTF8\"");
    auto hd = std::make_shared<Handle>(session_);
    if (auto st = hd->alloc(); !st.ok()) return st.take_error();
    if (!ok(prepare_text(s, hd->h, rw->text, *wtext))) {
      return s.stmt_error(hd->h);
    }
    hd->set_verbs(verbs_of(text, s.dialect), s.flavor);
    return std::unique_ptr<db::StatementImpl>(std::make_unique<OdbcStatement>(
        session_, std::move(hd), std::move(*rw), std::move(*wtext), hints));
  }

  /// Autocommit off opens the transaction (the driver begins it with the next
  /// statement); the client's BEGIN options are not passed: ODBC has no
  /// portable spelling for them beyond SQL_ATTR_TXN_ISOLATION.
  Status begin(const db::BeginOptions&) override {
    Session& s = *session_;
    if (s.closed) return Error::closed();
    if (s.in_tx) {
      return protocol_error("25001", "there is already a transaction in progress");
    }
    if (auto st = s.set_autocommit(false); !st.ok()) return st;
    s.in_tx = true;
    return {};
  }

  /// A failed commit is rolled back, as PostgreSQL ends a transaction whose
  /// COMMIT failed; autocommit is back on either way.
  Status commit() override { return end(SQL_COMMIT); }
  Status rollback() override { return end(SQL_ROLLBACK); }

  db::TxState tx_state() const override {
    return session_->in_tx && !session_->closed ? db::TxState::in_transaction : db::TxState::idle;
  }

  /// SQLCancel on the statement running now, from any thread. Nothing runs:
  /// nothing is called (ODBC 2 drivers would close an idle cursor).
  void cancel() noexcept override {
    std::lock_guard lock(session_->mu);
    session_->cancel_running(SQL_NULL_HSTMT, 0, false);
  }

  Status reset(std::string_view reset_query) override {
    if (session_->closed) return Error::closed();
    if (session_->in_tx) {
      if (auto st = end(SQL_ROLLBACK); !st.ok()) return st;
    }
    return ConnectionImpl::reset(reset_query);
  }

  bool alive() const override { return !session_->closed && !session_->broken; }

  Status close() override {
    session_->close();
    return {};
  }

  const SessionPtr& session() const { return session_; }

 private:
  Status end(SQLSMALLINT how) {
    Session& s = *session_;
    if (s.closed) return Error::closed();
    if (!s.in_tx) return {};
    Status result;
    if (!ok(SQLEndTran(SQL_HANDLE_DBC, s.dbc, how))) {
      result = s.dbc_error();
      if (how == SQL_COMMIT && !s.broken) SQLEndTran(SQL_HANDLE_DBC, s.dbc, SQL_ROLLBACK);
    }
    s.in_tx = false;
    if (!s.broken) {
      if (auto st = s.set_autocommit(true); !st.ok() && result.ok()) result = st;
    }
    return result;
  }

  SessionPtr session_;
};

}  // namespace

// ---- open ---------------------------------------------------------------------------

namespace {

/// True when the driver manager narrows our UTF-16 on its way to the driver:
/// SQLNativeSqlW of a character beyond Latin-1 does not come back as sent.
/// unixODBC maps the W functions of a driver without them onto its narrow
/// ones a UTF-16 unit to a byte ("€" becomes 0xAC), losing the text.
bool narrows_text(SQLHDBC dbc) {
  std::u16string probe = u"SELECT '\u00e9\u20ac'";
  std::u16string out(64, u'\0');
  SQLINTEGER out_len = 0;
  if (!ok(SQLNativeSqlW(dbc, wide(probe), static_cast<SQLINTEGER>(probe.size()), wide(out),
                        static_cast<SQLINTEGER>(out.size()), &out_len))) {
    return false;  // no answer: trust the W entry points
  }
  out.resize(std::min(out.size(), static_cast<size_t>(std::max<SQLINTEGER>(out_len, 0))));
  return out != probe;
}

/// MariaDB/MySQL: the server's id of this connection, 0 if unanswered.
uint64_t connection_id(SQLHDBC dbc) {
  SQLHSTMT st = SQL_NULL_HSTMT;
  if (!ok(SQLAllocHandle(SQL_HANDLE_STMT, dbc, &st))) return 0;
  std::u16string sql = u"SELECT CONNECTION_ID()";
  SQLUBIGINT id = 0;
  SQLLEN ind = 0;
  if (!ok(SQLExecDirectW(st, wide(sql), static_cast<SQLINTEGER>(sql.size()))) ||
      !ok(SQLFetch(st)) || !ok(SQLGetData(st, 1, SQL_C_UBIGINT, &id, sizeof id, &ind)) ||
      ind == SQL_NULL_DATA) {
    id = 0;
  }
  SQLFreeStmt(st, SQL_CLOSE);
  SQLFreeHandle(SQL_HANDLE_STMT, st);
  return id;
}

}  // namespace

Result<db::Connection> open_connection(const std::string& connection, const Options& options) {
  SQLHENV env = environment();
  if (env == SQL_NULL_HENV) {
    return Error::connection("cannot allocate an ODBC environment (unixODBC)");
  }
  auto session = std::make_shared<Session>();
  session->options = options;
  if (options.query_timeout.count() > 0) Watchdog::get().watch(session);
  if (!ok(SQLAllocHandle(SQL_HANDLE_DBC, env, &session->dbc))) {
    session->dbc = SQL_NULL_HDBC;
    return Error::connection("cannot allocate an ODBC connection handle");
  }
  SQLSetConnectAttrW(session->dbc, SQL_ATTR_LOGIN_TIMEOUT,
                     reinterpret_cast<SQLPOINTER>(
                         static_cast<SQLULEN>(std::max<int64_t>(options.login_timeout.count(), 1))),
                     SQL_IS_UINTEGER);
  auto wconn = to_utf16(connection);
  if (!wconn) return Error::connection("the ODBC connection string is not valid UTF-8");
  // SQLDriverConnectW runs on a thread of its own and is waited for at most
  // login_timeout (+2 s for the driver's own): MariaDB ODBC 3.1 waits forever
  // for a server that accepts the TCP connection and never speaks, whatever
  // SQL_ATTR_LOGIN_TIMEOUT, CONN_TIMEOUT or READ_TIMEOUT say. A login given up
  // on is left to its thread, which frees the handle when the driver returns.
  struct Pending {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    bool abandoned = false;
    SQLRETURN rc = SQL_ERROR;
    Diagnostic diag;
  };
  auto pending = std::make_shared<Pending>();
  std::thread([pending, dbc = session->dbc, text = std::move(*wconn)]() mutable {
    SQLSMALLINT out_len = 0;
    const SQLRETURN rc =
        SQLDriverConnectW(dbc, nullptr, wide(text), static_cast<SQLSMALLINT>(text.size()), nullptr,
                          0, &out_len, SQL_DRIVER_NOPROMPT);
    Diagnostic d;
    if (!ok(rc)) d = diagnostic(SQL_HANDLE_DBC, dbc);
    std::lock_guard lock(pending->mu);
    if (pending->abandoned) {
      if (ok(rc)) SQLDisconnect(dbc);
      SQLFreeHandle(SQL_HANDLE_DBC, dbc);
      return;
    }
    pending->rc = rc;
    pending->diag = std::move(d);
    pending->done = true;
    pending->cv.notify_all();
  }).detach();
  {
    std::unique_lock lock(pending->mu);
    const auto limit = options.login_timeout + std::chrono::seconds(2);
    if (!pending->cv.wait_for(lock, limit, [&] { return pending->done; })) {
      pending->abandoned = true;
      session->dbc = SQL_NULL_HDBC;  // the login thread owns it now
      session->closed = true;
      Error e = Error::connection("no answer from the ODBC data source within " +
                                  std::to_string(limit.count()) + " s (login_timeout)");
      e.sqlstate = "08001";
      return e;
    }
  }
  if (!ok(pending->rc)) {
    Error e = map_diagnostic(Flavor::generic, pending->diag);
    e.code = db::Errc::connection;
    SQLFreeHandle(SQL_HANDLE_DBC, session->dbc);
    session->dbc = SQL_NULL_HDBC;
    session->closed = true;
    return e;
  }
  DriverInfo& info = session->info;
  info.driver_name = get_info(session->dbc, SQL_DRIVER_NAME);
  info.driver_version = get_info(session->dbc, SQL_DRIVER_VER);
  info.dbms_name = get_info(session->dbc, SQL_DBMS_NAME);
  info.dbms_version = get_info(session->dbc, SQL_DBMS_VER);
  session->narrow = narrows_text(session->dbc);
  info.narrow_text = session->narrow;
  session->flavor = flavor_of(info.dbms_name);
  info.flavor = std::string(to_string(session->flavor));
  session->dialect = dialect_of(session->flavor);
  SQLUINTEGER gd = 0;
  if (ok(SQLGetInfoW(session->dbc, SQL_GETDATA_EXTENSIONS, &gd, sizeof gd, nullptr))) {
    session->reread = (gd & SQL_GD_BLOCK) && (gd & SQL_GD_BOUND);
  }
  // MariaDB ODBC 3.1 advertises SQL_GD_BLOCK, but after SQLSetPos(SQL_POSITION)
  // inside a rowset its next SQLFetch ends the result early (500 rows read
  // back as 126): its results with an unbounded column are read a row at a
  // time (docs/odbc.md, quirk; cursor_test covers it). SQLite ODBC does not
  // advertise SQL_GD_BLOCK and answers "row out of range" when tried.
  if (session->flavor == Flavor::mariadb) session->reread = false;
  if (session->flavor == Flavor::sqlite) {
    // The driver the manager loaded (Debian's libsqlite3odbc): found among
    // the loaded objects by name, since unixODBC's SQL_DRIVER_HLIB is a
    // libltdl handle, not dlopen's, and SQL_DRIVER_NAME is not its file name.
    std::string path;
    dl_iterate_phdr(
        [](dl_phdr_info* i, size_t, void* out) {
          const std::string_view name = i->dlpi_name ? i->dlpi_name : "";
          if (name.find("sqlite3odbc") == std::string_view::npos) return 0;
          *static_cast<std::string*>(out) = name;
          return 1;
        },
        &path);
    if (void* lib = path.empty() ? nullptr : dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
      session->driver_cancel = reinterpret_cast<SQLRETURN (*)(SQLHSTMT)>(dlsym(lib, "SQLCancel"));
      dlclose(lib);  // NOLOAD took a reference; the manager keeps its own
    }
    if (session->driver_cancel == nullptr) {
      spdlog::warn("odbc: {}: its SQLCancel not found; cancels go through the driver manager",
                   info.driver_name);
    }
  }
  if (session->flavor == Flavor::mariadb) {
    // Cancels go as KILL QUERY of this id (Session::kill_id).
    session->kill_id = connection_id(session->dbc);
    if (session->kill_id != 0) {
      session->kill_conn = *to_utf16(connection);
    } else {
      spdlog::warn("odbc: CONNECTION_ID() unanswered: cancels use SQLCancel");
    }
  }
  SQLUINTEGER parc = 0;
  if (ok(SQLGetInfoW(session->dbc, SQL_PARAM_ARRAY_ROW_COUNTS, &parc, sizeof parc, nullptr))) {
    session->batch_row_counts = parc == SQL_PARC_BATCH;
  }
  spdlog::debug(
      "odbc: connected through {} {} to {} {} (re-read of long cells: {}, narrow text: {})",
      info.driver_name, info.driver_version, info.dbms_name, info.dbms_version, session->reread,
      session->narrow);
  return db::Connection(std::make_unique<OdbcConnection>(std::move(session)));
}

FetchStats stats_of(const db::ConnectionImpl* impl) {
  const auto* c = dynamic_cast<const OdbcConnection*>(impl);
  return c ? c->session()->stats : FetchStats{};
}

DriverInfo info_of(const db::ConnectionImpl* impl) {
  const auto* c = dynamic_cast<const OdbcConnection*>(impl);
  return c ? c->session()->info : DriverInfo{};
}

}  // namespace wirepool::odbc
