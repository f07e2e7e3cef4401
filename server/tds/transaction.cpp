// TdsClient: the transaction manager request, transaction descriptors and
// RESETCONNECTION.

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

awaitable<void> TdsClient::reset_connection() {
  // sp_reset_connection: the session as it was after login.
  if (session_->in_transaction()) (void)co_await rollback_tx();
  prepared_.clear();
  nocount_ = false;
  tds::TokenEncoder(payload_).env_reset_connection_ack();
}

awaitable<db::Status> TdsClient::begin_tx() {
  if (session_->in_transaction()) {
    // SQL Server nests BEGIN TRAN (@@TRANCOUNT); wirepool keeps one level.
    info_token(0,
               "a transaction is already in progress (nested transactions are not supported; "
               "this BEGIN is ignored)");
    co_return db::Status();
  }
  auto st = co_await session_->begin("BEGIN");
  if (st.ok()) sync_tx_descriptor();
  co_return st;
}

awaitable<db::Status> TdsClient::commit_tx() {
  if (!session_->in_transaction()) {
    error_token(3902, 16, "The COMMIT TRANSACTION request has no corresponding BEGIN TRANSACTION.");
    co_return db::Status();
  }
  auto st = co_await session_->commit();
  sync_tx_descriptor(tds::env::kCommitTransaction);
  co_return st;
}

awaitable<db::Status> TdsClient::rollback_tx() {
  if (!session_->in_transaction()) {
    error_token(3903, 16,
                "The ROLLBACK TRANSACTION request has no corresponding BEGIN TRANSACTION.");
    co_return db::Status();
  }
  auto st = co_await session_->rollback();
  sync_tx_descriptor();
  co_return st;
}

void TdsClient::sync_tx_descriptor(uint8_t ended_by) {
  bool open = session_ && session_->in_transaction();
  tds::TokenEncoder enc(payload_);
  if (open && tx_descriptor_ == 0) {
    tx_descriptor_ = ++next_descriptor_;
    enc.env_begin_transaction(tx_descriptor_);
  } else if (!open && tx_descriptor_ != 0) {
    if (ended_by == tds::env::kCommitTransaction) {
      enc.env_commit_transaction(tx_descriptor_);
    } else {
      enc.env_rollback_transaction(tx_descriptor_);
    }
    tx_descriptor_ = 0;
  }
}

awaitable<void> TdsClient::transaction_request(const tds::TransactionRequest& req) {
  db::Status st;
  switch (req.request) {
    case tds::tm::kBeginXact:
      st = co_await begin_tx();
      break;
    case tds::tm::kCommitXact:
    case tds::tm::kRollbackXact: {
      bool commit = req.request == tds::tm::kCommitXact;
      // (if/else: GCC 12 runs both arms of a ?: whose arms co_await)
      if (commit) {
        st = co_await commit_tx();
      } else {
        st = co_await rollback_tx();
      }
      if (st.ok() && (req.flags & tds::tm::kFlagBeginXact)) st = co_await begin_tx();
      break;
    }
    default:
      spdlog::info("client {}: transaction manager request {} refused", peer_, req.request);
      error_token(8525, 16,
                  "wirepool does not support distributed transactions (transaction manager "
                  "request " +
                      std::to_string(req.request) + ")");
      done_token(tds::token::kDone, tds::done::kError, 0, 0);
      co_return;
  }
  if (!st.ok()) {
    backend_error(st.take_error());
    done_token(tds::token::kDone, tds::done::kError, 0, 0);
    co_return;
  }
  done_token(tds::token::kDone, tds::done::kFinal, 0, 0);
}

}  // namespace wirepool::server
