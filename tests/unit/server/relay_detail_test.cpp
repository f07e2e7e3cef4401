// Unit tests of the relay's sends (server/pg_relay_detail.hpp):
//  - send_rest_all sends several buffers in order; on a full socket the one
//    sent in part and those after it keep their counts, and sending the rest
//    (each buffer's own send_rest, in order) delivers every byte once, in order.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "server/pg_relay_detail.hpp"

namespace wirepool::server::relay_detail {
namespace {

std::string drain(int fd) {
  std::string got;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

TEST(RelayDetail, SendRestAllKeepsTheOrderWhenTheSocketFills) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const int small = 4096;
  ASSERT_EQ(::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
  ASSERT_EQ(::setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
  std::vector<std::string> data{std::string(100, 'a'), std::string(200'000, 'b'),
                                std::string(50'000, 'c'), std::string(10, 'd')};
  std::vector<size_t> sent(data.size(), 0);
  std::vector<Outgoing> out;
  for (size_t i = 0; i < data.size(); ++i)
    out.push_back({&data[i], &sent[i]});
  std::vector<iovec> iov;

  ASSERT_EQ(send_rest_all(sv[0], out, iov), 0);  // full
  EXPECT_EQ(sent[0], data[0].size());
  EXPECT_GT(sent[1], 0u);
  EXPECT_LT(sent[1], data[1].size());
  EXPECT_EQ(sent[2], 0u);
  EXPECT_EQ(sent[3], 0u);

  // Each buffer's rest in its own turn, in order, while the reader drains.
  std::string got = drain(sv[1]);
  for (size_t i = 0; i < data.size(); ++i) {
    while (send_rest(sv[0], data[i], sent[i]) != 1)
      got += drain(sv[1]);
  }
  got += drain(sv[1]);
  EXPECT_EQ(got, data[0] + data[1] + data[2] + data[3]);

  // Nothing left: all sent, with no call to the socket's full state.
  EXPECT_EQ(send_rest_all(sv[0], out, iov), 1);
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(RelayDetail, SendRestAllSendsEverythingOnARoomySocket) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  std::vector<std::string> data{"first batch", "", "second batch"};
  std::vector<size_t> sent(data.size(), 0);
  std::vector<Outgoing> out;
  for (size_t i = 0; i < data.size(); ++i)
    out.push_back({&data[i], &sent[i]});
  std::vector<iovec> iov;
  ASSERT_EQ(send_rest_all(sv[0], out, iov), 1);
  EXPECT_EQ(sent, (std::vector<size_t>{data[0].size(), 0, data[2].size()}));
  EXPECT_EQ(drain(sv[1]), data[0] + data[2]);
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(RelayDetail, SendRestAllReportsABrokenSocket) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ::close(sv[1]);
  std::string a = "abc";
  size_t sent = 0;
  std::vector<Outgoing> out{{&a, &sent}};
  std::vector<iovec> iov;
  EXPECT_EQ(send_rest_all(sv[0], out, iov), -1);
  EXPECT_EQ(sent, 0u);
  ::close(sv[0]);
}

}  // namespace
}  // namespace wirepool::server::relay_detail
