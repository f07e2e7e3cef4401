// The accept path: listeners, the accept loop, the allow-list and the
// pending limits at accept, and the server's side of the login waiting room
// (session/admission.hpp decides who waits and whose turn it is; here the
// parked sockets are started or closed).

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>

#include "server/http.hpp"
#include "server/pg/client.hpp"
#include "server/server.hpp"
#include "server/tds/client.hpp"
#include "session/login_policy.hpp"

namespace wirepool::server {

namespace {

/// A waiting connection's name in the Admission's waiting room: its
/// descriptor, its listener and whether it is IPv6 (bit 62 keeps it non-zero).
uint64_t waiting_token(int fd, size_t listener, bool v6) {
  return static_cast<uint64_t>(static_cast<uint32_t>(fd)) |
         (static_cast<uint64_t>(listener & 0xffff) << 32) | (uint64_t{v6} << 48) |
         (uint64_t{1} << 62);
}
int token_fd(uint64_t t) {
  return static_cast<int>(static_cast<uint32_t>(t));
}
size_t token_listener(uint64_t t) {
  return static_cast<size_t>((t >> 32) & 0xffff);
}
bool token_v6(uint64_t t) {
  return ((t >> 48) & 1) != 0;
}

/// "address:port" of a connected socket, or "?".
std::string peer_of(int fd) {
  sockaddr_storage ss{};
  socklen_t n = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &n) != 0) return "?";
  asio::ip::tcp::endpoint ep;
  if (n > ep.capacity()) return "?";
  std::memcpy(ep.data(), &ss, n);
  ep.resize(n);
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

}  // namespace

void Server::start_listeners() {
  for (size_t i = 0; i < cfg_.listeners.size(); ++i) {
    const auto& l = cfg_.listeners[i];
    std::string where = l.address + ":" + std::to_string(l.port);
    try {
      asio::ip::tcp::endpoint ep(asio::ip::make_address(l.address), static_cast<uint16_t>(l.port));
      auto acc = std::make_unique<asio::ip::tcp::acceptor>(main_);
      acc->open(ep.protocol());
      acc->set_option(asio::ip::tcp::acceptor::reuse_address(true));
      if (l.reuse_port) {
        // Linux spreads new connections over every socket bound with it; one
        // that closes (the drain) stops receiving them.
        acc->set_option(asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>(true));
      }
      acc->bind(ep);
      acc->listen(asio::socket_base::max_listen_connections);
      acceptors_.push_back(std::move(acc));
    } catch (const boost::system::system_error& e) {
      throw std::runtime_error("cannot listen on " + where + ": " + e.code().message());
    }
    spdlog::info("listening for {} clients on {}:{}", config::to_string(l.protocol), l.address,
                 acceptors_.back()->local_endpoint().port());
  }
  for (size_t i = 0; i < acceptors_.size(); ++i)
    accept_loop(i);
  listening_ = true;
}

void Server::accept_loop(size_t index) {
  if (draining_) return;
  Loop& loop = *loops_[next_loop_.fetch_add(1) % loops_.size()];
  auto sock = std::make_shared<ClientSocket>(loop.io.get_executor());
  acceptors_[index]->async_accept(*sock, [this, index, &loop, sock](boost::system::error_code ec) {
    if (ec == asio::error::operation_aborted || draining_) return;
    if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space) {
      // Out of descriptors: tell one waiting client at once (the spare
      // descriptor), then go on; when even that fails, wait a little
      // instead of spinning. One log line per interval, with a count.
      const bool shed = shed_one(index);
      emfile_log_.warn("accept failed: " + ec.message() + " (RLIMIT_NOFILE " +
                       std::to_string(fd_limit_) + ", " + std::to_string(process_open_fds()) +
                       " open); " +
                       (shed ? "a waiting connection was closed" : "accepting again in 100 ms"));
      if (!shed) {
        auto t = std::make_shared<asio::steady_timer>(main_, std::chrono::milliseconds(100));
        t->async_wait([this, index, t](boost::system::error_code) { accept_loop(index); });
        return;
      }
    } else if (ec) {
      spdlog::warn("accept failed: {}", ec.message());
    } else {
      admit(index, loop, sock);
    }
    accept_loop(index);
  });
}

namespace {
/// close_waiting's reason for a connection whose place in the full waiting
/// room went to one from another address (PostgreSQL is told so).
constexpr std::string_view kDisplacedFromRoom =
    "the waiting room is full and a connection from another address took its place";

/// PostgreSQL's answer to a connection it cannot take, sent before the
/// startup packet as the postmaster does: libpq shows the message.
void refuse_postgres(int fd, std::string_view message, std::string_view sqlstate = "53300") {
  std::string body = "SFATAL";
  body.push_back('\0');
  body += "C";
  body += sqlstate;
  body.push_back('\0');
  body += "M";
  body += message;
  body.push_back('\0');
  body.push_back('\0');
  const uint32_t n = static_cast<uint32_t>(body.size() + 4);
  std::string msg = "E";
  for (int shift = 24; shift >= 0; shift -= 8)
    msg.push_back(static_cast<char>((n >> shift) & 0xff));
  msg += body;
  (void)::send(fd, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}
}  // namespace

void Server::admit(size_t index, Loop& loop, std::shared_ptr<ClientSocket> sock) {
  const auto& l = cfg_.listeners[index];
  boost::system::error_code ec;
  const auto remote = sock->remote_endpoint(ec);
  if (ec) {
    sock->close(ec);
    return;
  }
  const auto address = remote.address();
  if (!address_allowed(l, address)) {
    // Before any byte is read or sent: no TLS handshake, no startup.
    metrics().refused(RefusedReason::allow_list);
    refused_log_.warn("client " + address.to_string() + ":" + std::to_string(remote.port()) +
                      ": refused by the " + std::string(config::to_string(l.protocol)) +
                      " listener's allow-list");
    sock->close(ec);
    return;
  }
  const uint64_t token = waiting_token(sock->native_handle(), index, address.is_v6());
  auto arrival = admission_.arrive(address, token);
  if (arrival.evicted) close_waiting(arrival.evicted, kDisplacedFromRoom);
  if (arrival.waiting) {
    // Parked: the socket leaves the reactor and only its descriptor waits.
    refused_log_.log(spdlog::level::info,
                     "client " + address.to_string() + ":" + std::to_string(remote.port()) +
                         ": waiting for a login slot (" + std::to_string(admission_.waiting()) +
                         " waiting; max_pending_logins " +
                         std::to_string(admission_.limits().max_pending) + ", per address " +
                         std::to_string(admission_.limits().max_pending_per_address) + ")");
    (void)sock->release(ec);
    if (!waiting_armed_) serve_waiting();
    return;
  }
  auto ticket = std::move(arrival.ticket);
  if (!ticket) {
    const Admission::Refusal why = arrival.why;
    const bool per_address = why == Admission::Refusal::pending_per_address;
    metrics().refused(per_address ? RefusedReason::pending_per_address : RefusedReason::pending);
    refused_log_.warn(
        "client " + address.to_string() + ":" + std::to_string(remote.port()) + ": refused: " +
        (per_address
             ? "max_pending_logins_per_address (" +
                   std::to_string(admission_.limits().max_pending_per_address) +
                   ") connections from " + to_string(address_key(address)) + " are logging in"
             : "max_pending_logins (" + std::to_string(admission_.limits().max_pending) +
                   ") connections are logging in") +
        ", none has taken 1 s yet and the waiting room is full");
    if (l.protocol == config::Protocol::postgres) {
      refuse_postgres(sock->native_handle(), "sorry, too many clients are logging in");
    }
    sock->close(ec);
    return;
  }
  start_client(index, loop, std::move(sock), std::move(ticket));
}

void Server::start_client(size_t index, Loop& loop, std::shared_ptr<ClientSocket> sock,
                          Admission::TicketPtr ticket) {
  const auto& l = cfg_.listeners[index];
  asio::post(loop.io, [this, &loop, &l, sock, ticket = std::move(ticket)]() mutable {
    if (l.protocol == config::Protocol::http) {
      start_http(*this, std::move(*sock), std::move(ticket));
    } else if (l.protocol == config::Protocol::tds) {
      ClientConnection::start(
          std::make_shared<TdsClient>(*this, loop, std::move(*sock), l, std::move(ticket)));
    } else {
      ClientConnection::start(
          std::make_shared<PgClient>(*this, loop, std::move(*sock), l, std::move(ticket)));
    }
  });
}

void Server::serve_waiting() {
  waiting_posted_ = false;
  auto turns = admission_.turns();
  for (auto& [token, ticket] : turns.admitted) {
    Loop& loop = *loops_[next_loop_.fetch_add(1) % loops_.size()];
    auto sock = std::make_shared<ClientSocket>(loop.io.get_executor());
    boost::system::error_code ec;
    sock->assign(token_v6(token) ? asio::ip::tcp::v6() : asio::ip::tcp::v4(), token_fd(token), ec);
    if (ec) {
      ::close(token_fd(token));
      continue;
    }
    start_client(token_listener(token), loop, std::move(sock), std::move(ticket));
  }
  for (uint64_t token : turns.expired) {
    close_waiting(token, "it waited login_timeout for a login slot");
  }
  // While connections wait, time alone moves them (deadlines, displacement).
  if (admission_.waiting() > 0 && !draining_) {
    if (!waiting_armed_) {
      waiting_armed_ = true;
      waiting_timer_.expires_after(std::chrono::milliseconds(250));
      waiting_timer_.async_wait([this](boost::system::error_code ec) {
        waiting_armed_ = false;
        if (!ec) serve_waiting();
      });
    }
  }
}

// PostgreSQL is told first: 57P01 while draining, as a logged-in client is;
// else 53300, saying so when the connection was displaced.
void Server::close_waiting(uint64_t token, std::string_view why) {
  const int fd = token_fd(token);
  metrics().refused(RefusedReason::waited);
  spdlog::info("client {}: closed before logging in: {}", peer_of(fd), why);
  if (cfg_.listeners[token_listener(token)].protocol == config::Protocol::postgres) {
    if (draining_) {
      // What a logged-in client is told at shutdown (server/pg/client.cpp).
      refuse_postgres(fd, "terminating connection due to administrator command", "57P01");
    } else if (why == kDisplacedFromRoom) {
      refuse_postgres(fd,
                      "sorry, too many clients are logging in: displaced from the full login "
                      "waiting room by a connection from another address");
    } else {
      refuse_postgres(fd, "sorry, too many clients are logging in");
    }
  }
  ::close(fd);
}

bool Server::shed_one(size_t index) {
  if (spare_fd_ < 0) return false;
  ::close(spare_fd_);
  spare_fd_ = -1;
  const int fd =
      ::accept4(acceptors_[index]->native_handle(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  const bool shed = fd >= 0;
  if (shed) {
    if (cfg_.listeners[index].protocol == config::Protocol::postgres) {
      refuse_postgres(fd, "sorry, too many clients already");
    }
    ::close(fd);
    metrics().refused(RefusedReason::descriptors);
  }
  spare_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return shed;
}

}  // namespace wirepool::server
