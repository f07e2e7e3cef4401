// TdsClient: ATTENTION while a request runs: the socket is watched and the
// running statement cancelled.

#include "server/tds/client.hpp"

#include <openssl/crypto.h>
#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "protocol/tds/errors.hpp"
#include "server/tds/client_detail.hpp"
#include "sql/lexer.hpp"

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using namespace tds_detail;

void TdsClient::watch_attention() {
  socket_.async_wait(ClientSocket::wait_read,
                     [self = shared_from_this(), g = generation_](boost::system::error_code ec) {
                       self->on_attention_readable(ec, g);
                     });
}

void TdsClient::on_attention_readable(boost::system::error_code ec, uint64_t generation) {
  if (ec || !running_ || generation != generation_ || attention_) return;
  if (!read_available()) {
    gone_ = true;
    if (session_) session_->cancel(CancelReason::user);
    return;
  }
  for (;;) {
    tds::Message m;
    std::string error;
    auto st = assembler_.next(m, error);
    if (st == tds::DecodeStatus::need_more) break;
    if (st == tds::DecodeStatus::error) {
      protocol_error_ = true;
      break;
    }
    if (m.type == static_cast<uint8_t>(tds::PacketType::attention)) {
      attention_ = true;
      spdlog::debug("client {}: ATTENTION: cancelling the running request", peer_);
      if (session_) session_->cancel(CancelReason::user);
      return;
    }
    pending_.push_back(std::move(m));  // without MARS a client waits; keep it for later
  }
  if (!protocol_error_) watch_attention();
}

}  // namespace wirepool::server
