#include "server/idle_park.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <stdexcept>

namespace wirepool::server {

namespace {

int new_epoll() {
  const int fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) throw std::runtime_error("epoll_create1 failed");
  return fd;
}

}  // namespace

IdlePark::IdlePark(boost::asio::io_context& io, Wake wake) : epoll_(io, new_epoll()), wake_(wake) {}

IdlePark::~IdlePark() = default;

bool IdlePark::park(int fd, void* who) {
  // Level-triggered: a socket readable when it is added wakes the park at once.
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.ptr = who;
  if (::epoll_ctl(epoll_.native_handle(), EPOLL_CTL_ADD, fd, &ev) != 0) return false;
  ++parked_;
  watch();
  return true;
}

void IdlePark::unpark(int fd) {
  epoll_event ev{};
  if (::epoll_ctl(epoll_.native_handle(), EPOLL_CTL_DEL, fd, &ev) == 0) --parked_;
}

void IdlePark::watch() {
  if (watching_ || parked_ == 0) return;
  watching_ = true;
  epoll_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                    [this](boost::system::error_code ec) { on_ready(ec); });
}

void IdlePark::on_ready(boost::system::error_code ec) {
  watching_ = false;
  if (ec) return;  // the loop is going away
  // Asio watches the epoll descriptor edge-triggered: take every ready socket
  // before waiting again, or one left ready would never wake the park.
  epoll_event events[64];
  int n;
  do {
    n = ::epoll_wait(epoll_.native_handle(), events, 64, 0);
    for (int i = 0; i < n; ++i)
      wake_(events[i].data.ptr);
  } while (n == 64);
  watch();
}

}  // namespace wirepool::server
