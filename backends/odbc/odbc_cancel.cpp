// Cancelling an execution from another thread: cancel() and the query_timeout
// watchdog (Session::cancel_running, KILL QUERY on a side connection for
// MariaDB ODBC), and the execution's side of the handshake (Running).

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <thread>

#include "backends/odbc/odbc_internal.hpp"

namespace wirepool::odbc::detail {

void Session::cancel_running(SQLHSTMT want, uint64_t seq, bool timeout) {
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

void Session::kill_query() const {
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
            spdlog::warn("odbc: cancel by KILL QUERY {} failed: {} {}", id, d.sqlstate, d.message);
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

void Running::wait_for_canceller(SQLHSTMT h) {
  for (SQLHSTMT c = s_.cancelling.load(); c == h && c != SQL_NULL_HSTMT; c = s_.cancelling.load()) {
    s_.cancelling.wait(c);
  }
}

namespace {

/// Enforces query_timeout for every ODBC driver: SQL_ATTR_QUERY_TIMEOUT is set
/// too, but MariaDB ODBC 3.1 ignores it (SLEEP(20) ran 20 s), so one thread
/// cancels an execution past its deadline, as cancel() would. An execution
/// publishes its deadline in its session (Session::deadline: two atomic
/// stores a call, Running); the thread looks at the sessions with a
/// query_timeout every kTick, so a cancel comes at most kTick late (the
/// option counts whole seconds), and an execution never wakes this thread
/// (docs/performance-notes.md, "ODBC driver").
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
      const int64_t now = steady_now_ns();
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

}  // namespace

void watch_timeouts(std::weak_ptr<Session> session) {
  Watchdog::get().watch(std::move(session));
}

}  // namespace wirepool::odbc::detail
