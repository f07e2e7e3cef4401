#pragma once
// What the relay's files share (server/pg_relay.cpp, pg_relay_batch.cpp,
// relay_path.cpp): non-blocking sends and the key of the statement cache.

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace wirepool::server::relay_detail {

/// Sends what is left of `data` from `sent` on without waiting: 1 all of it,
/// 0 the socket is full, -1 an error (errno says which).
inline int send_rest(int fd, const std::string& data, size_t& sent) {
  while (sent < data.size()) {
    ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    }
  }
  return 1;
}

/// A buffer and how much of it is sent, for send_rest_all.
struct Outgoing {
  const std::string* data;
  size_t* sent;
};

/// send_rest for several buffers in order, with one sendmsg while the socket
/// takes them: 1 all of them, 0 the socket is full (a buffer may be sent in
/// part, and those after it not at all), -1 an error. `iov`: scratch.
inline int send_rest_all(int fd, std::span<const Outgoing> out, std::vector<iovec>& iov) {
  iov.clear();
  for (const Outgoing& o : out)
    iov.push_back({const_cast<char*>(o.data->data()) + *o.sent, o.data->size() - *o.sent});
  size_t i = 0;
  while (true) {
    while (i < iov.size() && iov[i].iov_len == 0)
      ++i;
    if (i == iov.size()) return 1;
    msghdr m{};
    m.msg_iov = iov.data() + i;
    m.msg_iovlen = iov.size() - i;
    const ssize_t n = ::sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    for (size_t done = static_cast<size_t>(n); done > 0;) {
      const size_t k = std::min(done, iov[i].iov_len);
      iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + k;
      iov[i].iov_len -= k;
      *out[i].sent += k;
      done -= k;
      if (iov[i].iov_len == 0) ++i;
    }
  }
}

/// The statement cache's key: the SQL text and the parameter types.
inline std::string cache_key_of(std::string_view sql, std::span<const uint32_t> oids) {
  std::string key;
  key.reserve(sql.size() + 1 + oids.size() * 11);  // an OID has at most 10 digits
  key += sql;
  key += '\0';
  for (auto o : oids) {
    key += std::to_string(o);
    key += ',';
  }
  return key;
}

}  // namespace wirepool::server::relay_detail
