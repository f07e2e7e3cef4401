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

TdsClient::TdsClient(Server& server, Loop& loop, ClientSocket socket,
                     const config::Listener& listener, Admission::TicketPtr ticket)
    : ClientConnection(loop, std::move(socket), ProtocolIndex::tds, std::move(ticket)),
      server_(server),
      listener_(listener),
      assembler_(tds::AssemblerLimits{tds::kMaxLoginMessage, false}) {}

TdsClient::~TdsClient() = default;

bool TdsClient::describe(ClientInfo& out) const {
  if (!session_) return false;
  describe_connection(out, session_.get());
  out.protocol = "tds";
  return true;
}

std::string_view TdsClient::database() const {
  return session_ ? std::string_view(session_->pool_ptr()->config().name) : std::string_view();
}

void TdsClient::pack(bool eom) {
  const size_t room = packet_size_ - tds::kHeaderSize;
  size_t off = 0;
  while (payload_.size() - off > room || (eom && off <= payload_.size())) {
    size_t n = std::min(room, payload_.size() - off);
    bool last = eom && off + n == payload_.size();
    size_t len = n + tds::kHeaderSize;
    char header[tds::kHeaderSize] = {static_cast<char>(tds::PacketType::tabular_result),
                                     static_cast<char>(last ? tds::status::kEom : 0),
                                     static_cast<char>(len >> 8),
                                     static_cast<char>(len & 0xFF),
                                     0,
                                     0,
                                     static_cast<char>(packet_id_++),
                                     0};
    out_.append(header, sizeof header);
    out_.append(payload_, off, n);
    off += n;
    if (last) break;
  }
  payload_.erase(0, off);
  if (eom) packet_id_ = 1;
}

void TdsClient::error_token(int32_t number, uint8_t severity, std::string_view message) {
  tds::ServerMessage m;
  m.is_error = true;
  m.number = number;
  m.severity = severity;
  m.state = 1;
  m.message = std::string(message);
  m.server_name = "wirepool";
  tds::TokenEncoder(payload_).message(m);
}

void TdsClient::error_token(const db::Error& e) {
  metrics().sqlstate(e.sqlstate.size() == 5 ? e.sqlstate : "XX000");
  auto code = tds::error_for_sqlstate(e.sqlstate);
  std::string msg = e.message;
  if (!e.detail.empty()) msg += "\n" + e.detail;
  error_token(code.number, code.severity, msg);
}

void TdsClient::info_token(int32_t number, std::string_view message) {
  tds::ServerMessage m;
  m.is_error = false;
  m.number = number;
  m.severity = 0;
  m.state = 1;
  m.message = std::string(message);
  m.server_name = "wirepool";
  tds::TokenEncoder(payload_).message(m);
}

void TdsClient::done_token(uint8_t token, uint16_t status, uint16_t command, uint64_t rows) {
  tds::Done d;
  d.token = token;
  d.status = status;
  if (tx_descriptor_ != 0) d.status |= tds::done::kInXact;
  d.current_command = command;
  d.row_count = rows;
  tds::TokenEncoder(payload_).done(d);
}

void TdsClient::forward_notices() {
  if (!session_) return;
  auto ev = session_->take_events();
  if (!ev) return;
  for (const auto& n : ev->notices)
    info_token(0, n.message);
}

void TdsClient::backend_error(db::Error err) {
  session_->explain_cancel(err);
  error_token(err);
  if (err.code == db::Errc::connection && session_->backend()) {
    spdlog::warn("client {}: backend of database \"{}\" lost: {}", peer_,
                 session_->pool().config().name, err.message);
    session_->backend_lost();
  }
  session_->sync_tx_state();
}

awaitable<void> TdsClient::login_error(int32_t number, uint8_t severity, std::string_view message) {
  error_token(number, severity, message);
  done_token(tds::token::kDone, tds::done::kError, 0, 0);
  end_response();
  co_await flush();
}

awaitable<std::optional<tds::Message>> TdsClient::read_message() {
  for (;;) {
    tds::Message m;
    std::string error;
    auto st = assembler_.next(m, error);
    if (st == tds::DecodeStatus::ok) co_return std::optional<tds::Message>(std::move(m));
    if (st == tds::DecodeStatus::error) {
      spdlog::warn("client {}: TDS protocol error: {}", peer_, error);
      metrics().error(ErrorReason::protocol_error);
      protocol_error_ = true;
      co_return std::nullopt;
    }
    if (!co_await read_more(1)) {
      if (timed_out_) spdlog::info("client {}: closed: timed out waiting for a message", peer_);
      co_return std::nullopt;
    }
    assembler_.feed(in_.view());
    in_.consume(in_.size());
  }
}

awaitable<void> TdsClient::serve_logged_in() {
  co_await serve(false);
}

awaitable<void> TdsClient::resume(boost::system::error_code ec) {
  auto self = shared_from_this();
  if (idle_end(ec) != IdleEnd::request) {
    co_await end();
  } else {
    co_await serve(true);
  }
}

awaitable<void> TdsClient::serve(bool readable) {
  try {
    for (;;) {
      if (readable) {
        readable = false;
        if (!read_available() && assembler_.idle()) break;  // EOF: the client left
      }
      bool open = true;
      for (;;) {
        tds::Message m;
        if (!pending_.empty()) {
          m = std::move(pending_.front());
          pending_.erase(pending_.begin());
        } else {
          std::string error;
          auto st = assembler_.next(m, error);
          if (st == tds::DecodeStatus::need_more) break;
          if (st == tds::DecodeStatus::error) {
            spdlog::warn("client {}: TDS protocol error: {}", peer_, error);
            metrics().error(ErrorReason::protocol_error);
            error_token(4002, 16,
                        "The incoming tabular data stream (TDS) protocol stream is "
                        "incorrect: " +
                            error);
            done_token(tds::token::kDone, tds::done::kError, 0, 0);
            end_response();
            open = false;
            break;
          }
        }
        open = co_await handle(m);
        if (!open || gone_) break;
      }
      if (gone_) {
        // Seen by the ATTENTION watch (EOF while the request ran) rather than by a write.
        spdlog::info("client {}: connection lost in the middle of a result", peer_);
        break;
      }
      if (!open) break;
      if (!out_.empty() && !co_await flush()) break;
      if (draining_ && assembler_.idle() && pending_.empty() && !session_->in_transaction()) break;
      if (assembler_.idle() && pending_.empty()) {
        if (tls_pending()) {
          auto n = read_available();
          if (!n) break;
          if (*n > 0) continue;  // else a partial TLS record: wait for the rest
        }
        in_.release();
        assembler_.shrink();
        std::string().swap(out_);
        std::string().swap(payload_);
        arm_idle_deadline(server_.config().server);
        wait_idle(shared_from_this());
        co_return;
      }
      // Part of a message is here: wait for the rest (bounded by the I/O timeout).
      if (!co_await read_more(1)) {
        if (timed_out_) spdlog::warn("client {}: closed: stalled mid-message", peer_);
        break;
      }
      assembler_.feed(in_.view());
      in_.consume(in_.size());
    }
  } catch (const ClientGone&) {
    spdlog::info("client {}: connection lost in the middle of a result", peer_);
  } catch (const std::exception& e) {
    spdlog::error("client {}: closed after an internal error: {}", peer_, e.what());
  }
  co_await end();
}

std::optional<size_t> TdsClient::read_available() {
  size_t total = 0;
  for (;;) {
    auto n = read_now();
    if (!n) return std::nullopt;
    if (*n == 0) return total;
    total += *n;
    assembler_.feed(in_.view());
    in_.consume(in_.size());
  }
}

awaitable<void> TdsClient::end() {
  running_ = false;
  if (session_) {
    try {
      co_await session_->finish();
    } catch (const std::exception& e) {
      spdlog::error("client {}: teardown: {}", peer_, e.what());
    }
    spdlog::debug("client {}: disconnected", peer_);
  }
  close_transport();
}

awaitable<bool> TdsClient::handle(tds::Message& msg) {
  using tds::PacketType;
  if (msg.type == static_cast<uint8_t>(PacketType::attention)) {
    // Nothing runs (the request finished before the ATTENTION arrived): acknowledge.
    done_token(tds::token::kDone, tds::done::kAttn, 0, 0);
    end_response();
    co_return true;
  }
  ++generation_;
  running_ = true;
  attention_ = false;
  watch_attention();
  struct Stop {
    bool& running;
    ~Stop() { running = false; }
  } stop{running_};
  if (msg.reset_connection() || msg.reset_connection_skip_tran()) {
    co_await reset_connection();
  }
  switch (static_cast<PacketType>(msg.type)) {
    case PacketType::sql_batch: {
      auto d = tds::decode_sql_batch(tds::as_bytes(msg.payload));
      if (d.status != tds::DecodeStatus::ok) {
        error_token(4002, 16, "malformed SQL batch: " + d.error);
        done_token(tds::token::kDone, tds::done::kError, 0, 0);
        break;
      }
      co_await sql_batch(d.message.sql);
      break;
    }
    case PacketType::rpc: {
      auto d = tds::decode_rpc(tds::as_bytes(msg.payload));
      if (d.status != tds::DecodeStatus::ok) {
        spdlog::info("client {}: RPC refused: {}", peer_, d.error);
        error_token(8009, 16, "The RPC request could not be decoded: " + d.error);
        done_token(tds::token::kDoneProc, tds::done::kError, 0, 0);
        break;
      }
      co_await rpc(d.message);
      break;
    }
    case PacketType::transaction_manager: {
      auto d = tds::decode_transaction_request(tds::as_bytes(msg.payload));
      if (d.status != tds::DecodeStatus::ok) {
        error_token(4002, 16, "malformed transaction manager request: " + d.error);
        done_token(tds::token::kDone, tds::done::kError, 0, 0);
        break;
      }
      co_await transaction_request(d.message);
      break;
    }
    default:
      spdlog::warn("client {}: refused: {} message after login", peer_,
                   tds::packet_type_name(msg.type));
      error_token(
          4002, 16,
          "wirepool does not accept a " + tds::packet_type_name(msg.type) + " message here");
      done_token(tds::token::kDone, tds::done::kError, 0, 0);
      end_response();
      co_return false;
  }
  session_->sync_tx_state();
  sync_tx_descriptor();
  session_->release_if_idle(false);
  end_response();
  if (attention_) {
    // The cancelled request's response went out above; the acknowledgement is
    // a message of its own (tedious waits for both).
    done_token(tds::token::kDone, tds::done::kAttn, 0, 0);
    end_response();
    attention_ = false;
  }
  co_return !protocol_error_;
}

}  // namespace wirepool::server
