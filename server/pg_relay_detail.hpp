#pragma once
// What the relay's files share (server/pg_relay.cpp, pg_relay_batch.cpp,
// relay_path.cpp): a non-blocking send and the key of the statement cache.

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

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
