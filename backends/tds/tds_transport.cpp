#include "backends/tds/tds_transport.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace wirepool::tdsdrv {

namespace {

using db::Error;
using db::Status;

std::atomic<uint64_t> g_packets_written{0}, g_packet_max{0}, g_records_written{0},
    g_record_written_max{0}, g_records_read{0}, g_record_read_max{0}, g_record_read_bytes{0};

void raise_max(std::atomic<uint64_t>& m, uint64_t v) {
  uint64_t cur = m.load();
  while (v > cur && !m.compare_exchange_weak(cur, v)) {
  }
}

/// Set while SSL_write writes a TDS packet, so that the record counter counts
/// the records packets produce (not close_notify or other TLS messages).
thread_local bool t_writing_packet = false;

/// How long one poll(2) slice lasts: the delay before a cancel() is noticed.
constexpr int kSliceMs = 50;

/// Counts TLS records by their 5-byte headers (SSL3_RT_HEADER), once the
/// handshake is done: the record sizes the report and the tests look at.
void on_tls_message(int write_p, int /*version*/, int content_type, const void* buf, size_t len,
                    SSL* ssl, void* /*arg*/) {
  if (content_type != SSL3_RT_HEADER || len < 5 || !SSL_is_init_finished(ssl)) return;
  const auto* h = static_cast<const unsigned char*>(buf);
  if (h[0] != SSL3_RT_APPLICATION_DATA) return;
  const uint64_t length = (uint64_t{h[3]} << 8) | h[4];
  if (write_p) {
    if (!t_writing_packet) return;
    g_records_written.fetch_add(1);
    raise_max(g_record_written_max, length);
  } else {
    g_records_read.fetch_add(1);
    g_record_read_bytes.fetch_add(length);
    raise_max(g_record_read_max, length);
  }
}

Error connect_error(std::string message) {
  Error e = Error::connection(std::move(message));
  e.sqlstate = "08001";  // sqlclient_unable_to_establish_sqlconnection
  return e;
}

}  // namespace

RecordStats record_stats() {
  RecordStats s;
  s.packets_written = g_packets_written.load();
  s.packet_max = g_packet_max.load();
  s.records_written = g_records_written.load();
  s.record_written_max = g_record_written_max.load();
  s.records_read = g_records_read.load();
  s.record_read_max = g_record_read_max.load();
  s.record_read_bytes = g_record_read_bytes.load();
  return s;
}

Transport::~Transport() {
  close();
}

void Transport::close() {
  if (ssl_) {
    // One close_notify, without waiting for the peer's: the socket closes next.
    // Not after a failure (the session may be unusable).
    if (!broken_ && SSL_is_init_finished(ssl_.get())) {
      ERR_clear_error();
      (void)SSL_shutdown(ssl_.get());
    }
    ssl_.reset();
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

Status Transport::wait(short events, Clock::time_point deadline, bool cancellable) {
  for (;;) {
    if (cancellable && cancel_.load()) {
      Error e;
      e.code = db::Errc::busy;
      e.sqlstate = "57014";
      e.message = "canceling statement due to user request";
      return e;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      return Error::connection("no answer from the SQL Server backend before the timeout");
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    pollfd p{fd_, events, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, kSliceMs)));
    if (rc > 0) return {};
    if (rc < 0 && errno != EINTR) {
      return Error::connection(std::string("poll: ") + std::strerror(errno));
    }
  }
}

Status Transport::open(const std::string& host, uint16_t port, const tls::ClientContext& ctx,
                       Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  // getaddrinfo has no timeout of its own; host names resolve through the
  // system resolver's (resolv.conf timeout/attempts).
  const int g = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (g != 0) return connect_error("cannot resolve \"" + host + "\": " + gai_strerror(g));
  std::string last = "no address";
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last = std::strerror(errno);
      continue;
    }
    fd_ = fd;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      auto w = wait(POLLOUT, deadline, false);
      if (!w.ok()) {
        last = "connect timed out";
        close();
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc != 0) {
      last = std::strerror(errno);
      close();
      continue;
    }
    break;
  }
  ::freeaddrinfo(res);
  if (fd_ < 0) {
    return connect_error("cannot connect to " + host + ":" + service + ": " + last);
  }
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

  // TLS 1.3 first (TDS 8.0 strict): CA, host name and pins from the context.
  ssl_.reset(SSL_new(ctx.native()));
  std::string error;
  if (!ssl_ || !ctx.prepare(ssl_.get(), host, &error)) {
    close();
    return connect_error("TLS setup: " + (error.empty() ? tls::last_error() : error));
  }
  SSL_set_fd(ssl_.get(), fd_);
  SSL_set_msg_callback(ssl_.get(), on_tls_message);
  ERR_clear_error();
  for (;;) {
    const int rc = SSL_connect(ssl_.get());
    if (rc == 1) break;
    const int err = SSL_get_error(ssl_.get(), rc);
    Status w;
    if (err == SSL_ERROR_WANT_READ) {
      w = wait(POLLIN, deadline, false);
    } else if (err == SSL_ERROR_WANT_WRITE) {
      w = wait(POLLOUT, deadline, false);
    } else {
      std::string why = tls::last_error(ssl_.get());
      close();
      return connect_error("TLS handshake with " + host + ":" + service + " failed: " + why);
    }
    if (!w.ok()) {
      close();
      return connect_error("TLS handshake with " + host + ":" + service + " timed out");
    }
  }
  if (!ctx.check_pins(ssl_.get(), &error)) {
    close();
    return connect_error(error);
  }
  writer_.set_packet_size(tds::kDefaultPacketSize);
  out_.reserve(kMaxDriverPacketSize + 64);
  in_.reserve(2 * 16384 + 64);
  tokens_.reserve(2 * kMaxDriverPacketSize);
  return {};
}

void Transport::set_packet_size(uint32_t size) {
  writer_.set_packet_size(std::clamp<uint32_t>(size, tds::kMinPacketSize, kMaxDriverPacketSize));
}

Status Transport::write_record(std::string_view bytes, Clock::time_point deadline) {
  ERR_clear_error();
  for (;;) {
    // One SSL_write of at most 16,384 bytes is one TLS record (no partial
    // writes: SSL_MODE_ENABLE_PARTIAL_WRITE is off, a retry resends the same).
    t_writing_packet = true;
    const int rc = SSL_write(ssl_.get(), bytes.data(), static_cast<int>(bytes.size()));
    t_writing_packet = false;
    if (rc > 0) return {};
    const int err = SSL_get_error(ssl_.get(), rc);
    Status w;
    if (err == SSL_ERROR_WANT_WRITE) {
      w = wait(POLLOUT, deadline, false);
    } else if (err == SSL_ERROR_WANT_READ) {
      w = wait(POLLIN, deadline, false);
    } else {
      broken_ = true;
      return Error::connection("write to the SQL Server backend failed: " +
                               tls::last_error(ssl_.get()));
    }
    if (!w.ok()) {
      broken_ = true;
      return w;
    }
  }
}

Status Transport::send(tds::PacketType type, std::string_view payload, uint8_t first_status) {
  if (!is_open()) return Error::connection("the SQL Server connection is closed");
  // Packet by packet: frame at most one packet's payload at a time, so a
  // request of any size is written with one packet-sized buffer.
  const size_t room = writer_.packet_size() - tds::kHeaderSize;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  size_t at = 0;
  uint8_t packet_id = 1;
  do {
    const size_t n = std::min(room, payload.size() - at);
    const bool last = at + n == payload.size();
    out_.clear();
    const uint16_t length = static_cast<uint16_t>(tds::kHeaderSize + n);
    out_ += static_cast<char>(type);
    out_ += static_cast<char>((last ? tds::status::kEom : 0) | (at == 0 ? first_status : 0));
    out_ += static_cast<char>(length >> 8);
    out_ += static_cast<char>(length & 0xFF);
    out_ += '\0';
    out_ += '\0';
    out_ += static_cast<char>(packet_id++);
    out_ += '\0';
    out_.append(payload.substr(at, n));
    if (auto st = write_record(out_, deadline); !st.ok()) return st;
    g_packets_written.fetch_add(1);
    raise_max(g_packet_max, out_.size());
    at += n;
  } while (at < payload.size());
  begin_response();
  return {};
}

db::Result<bool> Transport::read_packet(Clock::time_point deadline) {
  if (eom_) return false;
  for (;;) {
    const std::string_view avail = std::string_view(in_).substr(in_pos_);
    if (auto h = tds::peek_header(tds::as_bytes(avail))) {
      if (h->type != static_cast<uint8_t>(tds::PacketType::tabular_result) ||
          h->length < tds::kHeaderSize) {
        broken_ = true;
        return Error::connection("the SQL Server backend sent a malformed packet (type " +
                                 std::to_string(h->type) + ", length " + std::to_string(h->length) +
                                 ")");
      }
      if (avail.size() >= h->length) {
        tokens_.append(avail.substr(tds::kHeaderSize, h->length - tds::kHeaderSize));
        in_pos_ += h->length;
        if (in_pos_ == in_.size()) {
          in_.clear();
          in_pos_ = 0;
        }
        if ((h->status & tds::status::kEom) != 0) eom_ = true;
        return true;
      }
    }
    if (in_pos_ > 0) {
      in_.erase(0, in_pos_);
      in_pos_ = 0;
    }
    char buf[16384];
    ERR_clear_error();
    const int rc = SSL_read(ssl_.get(), buf, sizeof buf);
    if (rc > 0) {
      in_.append(buf, static_cast<size_t>(rc));
      continue;
    }
    const int err = SSL_get_error(ssl_.get(), rc);
    Status w;
    if (err == SSL_ERROR_WANT_READ) {
      w = wait(POLLIN, deadline, true);
    } else if (err == SSL_ERROR_WANT_WRITE) {
      w = wait(POLLOUT, deadline, true);
    } else {
      broken_ = true;
      if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && rc == 0)) {
        return Error::connection("the SQL Server backend closed the connection");
      }
      return Error::connection("read from the SQL Server backend failed: " +
                               tls::last_error(ssl_.get()));
    }
    if (!w.ok()) {
      if (w.error().code == db::Errc::connection) broken_ = true;
      return w.error();
    }
  }
}

}  // namespace wirepool::tdsdrv
