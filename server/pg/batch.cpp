// PgClient: pipelined executions of one INSERT / UPDATE / DELETE run as one
// parameter-array batch (docs/protocol-postgres.md, "Batches").

#include "server/pg/client.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <cstring>

#include "protocol/pg/scram.hpp"
#include "server/admin.hpp"
#include "server/pg/client_detail.hpp"
#include "tls/tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

namespace wirepool::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using namespace pg_detail;

namespace {

/// At most this many executions go in one batch; more make several batches.
constexpr size_t kMaxBatchRows = 1000;
/// Reading ahead for a batch stops when this much input is buffered.
constexpr size_t kMaxBatchBytes = 8 * 1024 * 1024;

bool is_cancel(const db::Error& e) {
  return e.sqlstate == "57014";
}

}  // namespace

PgClient::BatchGroups PgClient::collect_batch(const Prepared& st, const std::string& statement) {
  // The groups already received: [Bind] [Describe portal] Execute, the first
  // Bind being the one in hand. Reads what the socket has when a group is cut.
  const size_t max_msg = server_.config().server.max_message_size;
  BatchGroups groups;
  auto& rows = groups.rows;
  auto& described = groups.described;
  size_t& end = groups.end;
  end = unconsumed_;  // past the last complete group
  enum class Group : uint8_t { complete, other, cut };
  auto parse = [&](size_t pos, std::vector<db::Param>& params, bool& desc, size_t& after) {
    auto view = in_.view();
    auto next = [&](size_t at) { return pg::decode_frontend(view.subspan(at), max_msg); };
    size_t q = pos;
    if (!rows.empty()) {
      auto d = next(q);
      if (d.status == pg::DecodeStatus::need_more) return Group::cut;
      auto* b = d.status == pg::DecodeStatus::ok ? std::get_if<pg::Bind>(&d.message) : nullptr;
      if (b == nullptr || !b->portal.empty()) return Group::other;
      if (b->statement != statement) {
        // Another name for the same text and types (pgbench -M prepared
        // prepares each line of a pipeline under its own name).
        auto it = ext().statements.find(b->statement);
        if (it == ext().statements.end() || it->second->key != st.key || !it->second->described) {
          return Group::other;
        }
      }
      // A Bind that fails goes the normal way, which reports it.
      if (bind_params(*b, st, params)) return Group::other;
      q += d.consumed;
    }
    auto d = next(q);
    if (d.status == pg::DecodeStatus::need_more) return Group::cut;
    if (d.status != pg::DecodeStatus::ok) return Group::other;
    desc = false;
    if (auto* ds = std::get_if<pg::Describe>(&d.message);
        ds && ds->kind == 'P' && ds->name.empty()) {
      desc = true;
      q += d.consumed;
      d = next(q);
      if (d.status == pg::DecodeStatus::need_more) return Group::cut;
      if (d.status != pg::DecodeStatus::ok) return Group::other;
    }
    auto* ex = std::get_if<pg::Execute>(&d.message);
    if (ex == nullptr || !ex->portal.empty()) return Group::other;
    after = q + d.consumed;
    return Group::complete;
  };
  while (rows.size() < kMaxBatchRows) {
    std::vector<db::Param> params;
    bool desc = false;
    size_t after = 0;
    Group g = parse(end, params, desc, after);
    if (g == Group::cut && in_.size() < kMaxBatchBytes) {
      auto n = read_now(64 * 1024);  // what the client has sent meanwhile, without waiting
      if (n && *n > 0) continue;
    }
    if (g != Group::complete) break;
    rows.push_back(std::move(params));  // the first stays empty until a second comes
    described.push_back(desc);
    end = after;
  }
  return groups;
}

awaitable<bool> PgClient::try_batch(const std::shared_ptr<Prepared>& p,
                                    const std::string& statement, Portal& first) {
  const Prepared& st = *p;
  const std::string& verb = st.cls.verb;
  if (st.blank || !to_backend(st.cls) || !st.columns.empty() || !st.show_name.empty() ||
      (verb != "INSERT" && verb != "UPDATE" && verb != "DELETE") ||
      session_->mode() == config::PoolMode::statement ||
      session_->tx_state() == db::TxState::failed) {
    co_return false;
  }
  // A batch reports each execution's count: from the driver, or, for a
  // statement that inserts one row each time, from the total.
  const bool counts = session_->pool().batch_row_counts();
  if (!counts && !sql::inserts_one_row(st.sql, session_->pool().dialect())) co_return false;

  auto groups = collect_batch(st, statement);
  auto& rows = groups.rows;
  const auto& described = groups.described;
  const size_t end = groups.end;
  if (rows.size() < 2) co_return false;
  rows[0] = first.params;

  session_->statement_begin();
  // Going the normal way after statement_begin: it counts the statement again.
  auto give_up = [this] {
    session_->statement_end();
    session_->pool().metrics().statements.fetch_sub(1, std::memory_order_relaxed);
  };
  if (auto e = co_await session_->ensure_backend()) {
    give_up();
    co_return false;  // the normal way reports it
  }
  auto stmt = co_await session_->backend_statement(st.key, st.sql, {});
  if (!stmt.ok() || !session_->backend()->caps.param_arrays) {
    give_up();
    co_return false;  // the normal way reports the error
  }
  // The executions before Sync are one transaction (enter_block): outside a
  // transaction the batch opens the block's implicit one, which Sync ends.
  // A failed batch leaves nothing behind in a transaction (the driver's
  // promise, db.hpp); its executions then run again one at a time, which
  // reports the failing one as an unbatched pipeline would.
  if (!session_->in_transaction()) {
    db::Status opened = co_await session_->begin_implicit();
    if (!opened.ok()) {
      session_->sync_tx_state();
      give_up();
      co_return false;
    }
  }
  db::Statement* statement_handle = stmt.value();
  std::vector<db::Params> spans(rows.begin(), rows.end());
  auto job = [&](Backend&) { return statement_handle->execute_batch(spans); };
  auto result = co_await session_->run(job);
  std::vector<int64_t> affected;
  if (result.ok()) {
    affected = std::move(result.value().affected);
    if (affected.size() != rows.size()) {
      affected.clear();
      // One row each (inserts_one_row): the total must say so.
      if (result.value().total == static_cast<int64_t>(rows.size())) {
        affected.assign(rows.size(), 1);
      }
    }
  }
  const bool kept = !affected.empty();
  if (!kept) batch_refused_ = true;  // until Sync: the rest goes one at a time
  session_->sync_tx_state();
  // Cancelled (CancelRequest, statement_timeout), the backend gone, or a
  // transaction the failure aborted (psqlODBC set to roll back the
  // transaction on an error): not run again; the error goes to the first
  // execution.
  const bool answer_now =
      !kept && !result.ok() &&
      (is_cancel(result.error()) || result.error().code == db::Errc::connection ||
       session_->tx_state() == db::TxState::failed);
  if (!kept && !answer_now) {
    spdlog::debug("client {}: batch of {} run again one by one: {}", peer_, rows.size(),
                  result.ok() ? "counts do not add up" : result.error().message);
    give_up();
    co_return false;
  }
  session_->statement_end();
  pg::Encoder enc(out_);
  if (answer_now) {
    enc.bind_complete();
    if (described[0]) enc.no_data();
    co_await backend_error(result.take_error());
    skip_until_sync_ = true;
    co_return true;
  }
  for (size_t k = 0; k < rows.size(); ++k) {
    enc.bind_complete();
    if (described[k]) enc.no_data();
    db::CommandInfo ci;
    ci.affected = affected[k];
    enc.command_complete(command_tag(ci, verb, false, 0));
  }
  auto& metrics = session_->pool().metrics();
  metrics.batches.fetch_add(1, std::memory_order_relaxed);
  metrics.batched.fetch_add(rows.size(), std::memory_order_relaxed);
  // One statement each, as unbatched (statement_begin counted the first).
  metrics.statements.fetch_add(rows.size() - 1, std::memory_order_relaxed);
  in_.consume(end);  // the Bind in hand and every group after it
  unconsumed_ = 0;
  auto last = std::make_unique<Portal>();
  last->stmt = p;
  last->done = true;
  ext().portals[""] = std::move(last);
  co_return true;
}

}  // namespace wirepool::server
