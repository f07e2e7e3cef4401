#pragma once
// Where a loop's long-idle clients wait: an epoll set of their own, watched by
// the loop as one descriptor. A parked socket is out of Asio's reactor, so an
// idle client holds neither a pending operation nor Asio's descriptor state
// (about 320 B: docs/performance.md, "Bytes per idle client").

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <cstddef>

namespace wirepool::server {

class IdlePark {
 public:
  /// Called on the loop's thread for each parked socket that became readable
  /// (data, EOF or an error): `who` as given to park(). The callee unparks it.
  using Wake = void (*)(void* who);

  IdlePark(boost::asio::io_context& io, Wake wake);
  ~IdlePark();
  IdlePark(const IdlePark&) = delete;
  IdlePark& operator=(const IdlePark&) = delete;

  /// Watches `fd` for readability on behalf of `who`; false when the kernel
  /// refuses (the caller then waits the ordinary way).
  [[nodiscard]] bool park(int fd, void* who);
  /// Stops watching `fd` (before it goes back to Asio's reactor).
  void unpark(int fd);
  size_t parked() const { return parked_; }

 private:
  void watch();
  void on_ready(boost::system::error_code ec);

  boost::asio::posix::stream_descriptor epoll_;
  Wake wake_;
  size_t parked_ = 0;
  bool watching_ = false;
};

}  // namespace wirepool::server
