#pragma once
// Internal to backends/odbc/: what the connection, statement, reader, parameter
// and cancel files share. Not included outside this folder.
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
// is settled before the cursor's first fetch and never changed on it
// (Oracle's driver crashes when it moves): a prepared statement
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

#include <sql.h>
#include <sqlext.h>
#include <sqlucode.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/db.hpp"
#include "backends/odbc/odbc_connection.hpp"
#include "backends/odbc/odbc_driver.hpp"
#include "backends/odbc/odbc_errors.hpp"
#include "backends/odbc/odbc_text.hpp"
#include "backends/odbc/odbc_types.hpp"
#include "sql/lexer.hpp"

namespace wirepool::odbc::detail {

using db::Error;
using db::Result;
using db::Status;

static_assert(sizeof(SQLWCHAR) == sizeof(char16_t), "unixODBC's SQLWCHAR is a UTF-16 unit");

inline bool ok(SQLRETURN rc) {
  return rc == SQL_SUCCESS || rc == SQL_SUCCESS_WITH_INFO;
}

inline SQLWCHAR* wide(std::u16string& s) {
  return reinterpret_cast<SQLWCHAR*>(s.data());
}

// ---- environment, diagnostics, errors (odbc_handles.cpp) --------------------------

/// The one environment of the process (ODBC 3 behaviour), created on first use.
SQLHENV environment();

/// The first diagnostic record of a handle, in UTF-8. `narrow`: the driver has
/// no W entry points (Session::narrow) and writes UTF-8 through the narrow one.
Diagnostic diagnostic(SQLSMALLINT type, SQLHANDLE handle, bool narrow = false);

Error protocol_error(std::string sqlstate, std::string message);
std::string get_info(SQLHDBC dbc, SQLUSMALLINT what);

/// A result that ended after SQLCancel reached its statement: it may have
/// been cut short (SQLite ODBC's interrupted statement reads as an empty
/// result), so it is never passed off as complete.
Error user_cancel();
Error statement_timeout(const Options& o);
/// PostgreSQL's wording and SQLSTATE (protocol_violation) for a parameter count
/// that does not match the statement's markers.
Error count_mismatch(size_t supplied, size_t required);

// ---- session ------------------------------------------------------------------

/// The memory of a result's row arrays, every column's in one block. A direct
/// query's handle lives for one statement; its block goes back to the session
/// (Session::spare_rows) for the next one, so the driver's copy into it does
/// not page-fault on fresh memory at every query (docs/performance-notes.md).
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
  /// execution, perhaps another client's, and no call takes a lock.
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
  /// Handle::drv) past the driver manager: unixODBC's SQLCancel racing an
  /// execution on another thread leaks diagnostic records (LeakSanitizer, the
  /// cancel storm test), the driver's alone leaks nothing.
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
  void cancel_running(SQLHSTMT want, uint64_t seq, bool timeout);

  /// KILL QUERY on a connection of its own, opened and closed for it (cancels
  /// are rare). MariaDB ignores a KILL QUERY that finds the connection idle
  /// (its next statement runs), and the execution waits for this to return
  /// (Running), so it never reaches the next statement. The side login runs
  /// on a thread of its own, waited for at most 3 s (MariaDB ODBC can wait
  /// forever for a server that accepts and never speaks): given up on, it
  /// sends no KILL and frees its handle when the driver returns.
  void kill_query() const;

  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { close(); }

  /// Rolls back an open transaction first: SQLite ODBC refuses SQLDisconnect
  /// with one open (25000), and a handle left behind keeps its locks.
  void close();

  Error error(SQLSMALLINT type, SQLHANDLE handle);
  Error stmt_error(SQLHSTMT h) { return error(SQL_HANDLE_STMT, h); }
  Error dbc_error() { return error(SQL_HANDLE_DBC, dbc); }

  Status set_autocommit(bool on);
};
using SessionPtr = std::shared_ptr<Session>;

/// Watches a session with a query_timeout from now on, until it ends: the
/// watchdog (odbc_cancel.cpp) cancels an execution past its deadline.
void watch_timeouts(std::weak_ptr<Session> session);

/// steady_clock in nanoseconds: the clock of Session::deadline.
inline int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
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
SQLRETURN exec_direct(Session& s, SQLHSTMT h, const std::string& utf8, const std::u16string& u16);
SQLRETURN prepare_text(Session& s, SQLHSTMT h, const std::string& utf8, const std::u16string& u16);

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
  /// execution of a prepared statement reuses their buffers.
  std::vector<std::string> cells;
  std::string raw;
  /// The command verb of each statement of its text, shared by its readers.
  std::shared_ptr<const std::vector<std::string>> verbs;
  /// The text's first statement is INSERT, UPDATE, DELETE or MERGE.
  bool first_dml = false;
  /// It is the only one, on PostgreSQL, MariaDB/MySQL or SQLite: it has no
  /// result set, leaves no cursor and no further result (the ODBC statement
  /// is in state S4, which SQLExecute accepts again), so its re-execution
  /// skips SQLNumResultCols and its reader's close SQLFreeStmt(SQL_CLOSE).
  /// Elsewhere (SQL Server, say, where a trigger's row counts are further
  /// results) both still happen.
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

  Status alloc();
  void free();
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
          steady_now_ns() + std::chrono::nanoseconds(s_.options.query_timeout).count(),
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
  [[gnu::noinline, gnu::cold]] void wait_for_canceller(SQLHSTMT h);

  Session& s_;
};

// ---- parameters (odbc_params.cpp, odbc_param_arrays.cpp) ---------------------------

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
Binding binding_of(db::Kind kind, size_t size = 0, int32_t scale = 0);

/// A decimal's digit count and scale ("-12.50": 4 and 2).
std::pair<size_t, int32_t> decimal_shape(std::string_view text);

/// Binds `params` to the ? markers of a statement; `binds` says which
/// parameter each marker takes (a repeated $N binds its value again).
///
/// Every value is bound with an explicit C type and SQL type, NULL included
/// (never SQL_C_DEFAULT: a Firebird driver retyped an integer
/// parameter after a NULL bound that way). A NULL is a VARCHAR NULL: every
/// verified driver converts it to the column's type.
Status bind_params(Session& s, SQLHSTMT h, db::Params params, const std::vector<size_t>& binds,
                   ParamBuffers& buf);

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
                            bool same_binary_length, bool& fits);

  /// SQLBindParameter for every marker, with the arrays of fill().
  Status bind(Session& s, SQLHSTMT h);

 private:
  struct Col {
    std::vector<unsigned char> data;  // rows * width
    std::vector<SQLLEN> ind;
    size_t width = 1;
    Binding bd;
  };

  template <class T>
  static void put(Col& c, size_t r, const T& v);
  static std::optional<Error> fill_col(Col& c, db::Kind kind, std::span<const db::Params> rows,
                                       size_t j, bool& fits);

  std::vector<Col> cols_;
};

// ---- result columns (odbc_columns.cpp) ----------------------------------------------

/// Describes the result a statement handle now holds: its columns and how
/// each is read (bound, or re-read with SQLGetData), and the rowset size.
Result<Shape> describe(Session& s, SQLHSTMT h);
/// Settles the rowset of a cursor that has not fetched yet and binds its
/// columns into one block: the handle's own if large enough, else the
/// session's spare, else a new one.
Status bind_columns(Session& s, Handle& hd);
/// Describes the result the handle's cursor now holds and binds it, unless
/// the shape settled before execution still fits. The rowset is set here,
/// before the cursor's first fetch.
Status settle_result(Session& s, Handle& hd);
/// Before SQLExecute of a prepared statement: describe what SQLPrepare told
/// and settle the rowset, so it is never set on an open cursor.
Status settle_prepared(Session& s, Handle& hd);

/// SQLite ODBC: a prepared SELECT's expression columns typed from a first
/// row (an execution with NULL parameters); 57014 when cancelled or timed out.
Status probe_expression_types(Session& s, Handle& hd);

// ---- readers (odbc_rows.cpp) and statements (odbc_statement.cpp) ---------------------

/// The command verb of each statement of a text (Handle::verbs).
using VerbsPtr = std::shared_ptr<const std::vector<std::string>>;
VerbsPtr verbs_of(std::string_view text, sql::Dialect d);

/// Runs a direct query on a fresh handle (SQLExecDirect, then the rowset) and
/// hands out its reader.
Result<std::unique_ptr<db::RowsImpl>> run_direct(HandlePtr hd, const std::string& text,
                                                 const std::u16string& wtext, db::Params params,
                                                 const std::vector<size_t>& binds);
/// Runs a prepared handle (its rowset settled before SQLExecute) and hands
/// out its reader.
Result<std::unique_ptr<db::RowsImpl>> run_prepared(HandlePtr hd, db::Params params,
                                                   const std::vector<size_t>& binds);

/// A prepared statement on `hd` (SQLPrepare done), its markers rewritten as `rw`.
std::unique_ptr<db::StatementImpl> make_statement(SessionPtr session, HandlePtr hd, Rewritten rw,
                                                  std::u16string text,
                                                  std::span<const db::ParamInfo> hints);

}  // namespace wirepool::odbc::detail
