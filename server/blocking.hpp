#pragma once
// The bounded executor for blocking driver calls. Event-loop threads never block:
// a coroutine hands a job to this pool and resumes on its own executor when the
// job is done.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>

namespace wirepool::server {

namespace asio = boost::asio;

class BlockingExecutor {
 public:
  explicit BlockingExecutor(size_t threads) : pool_(threads), threads_(threads) {}
  ~BlockingExecutor() { pool_.join(); }

  /// Runs `f()` on a worker thread; the awaiting coroutine resumes on its own
  /// executor with f's result. `f` must not throw on the data path.
  template <class F>
  asio::awaitable<std::invoke_result_t<F&>> run(F f) {
    using R = std::invoke_result_t<F&>;
    // co_spawn needs a default-constructible result; db::Result is not. The
    // job is a named local, not a temporary: GCC 12 may destroy a temporary
    // with captures that lives across a co_await twice.
    auto job = [fn = std::move(f)]() mutable -> asio::awaitable<std::optional<R>> {
      co_return std::optional<R>(fn());
    };
    auto result =
        co_await asio::co_spawn(pool_.get_executor(), std::move(job), asio::use_awaitable);
    co_return std::move(*result);
  }

  /// Fire and forget (pool maintenance: opening, closing, resetting backends).
  template <class F>
  void post(F f) {
    asio::post(pool_.get_executor(), std::move(f));
  }

  size_t threads() const { return threads_; }
  void stop() { pool_.stop(); }
  void join() { pool_.join(); }

 private:
  asio::thread_pool pool_;
  size_t threads_;
};

}  // namespace wirepool::server
