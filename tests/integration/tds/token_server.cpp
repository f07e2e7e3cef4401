// A one-connection plaintext TDS responder built only from protocol/tds/, so a
// real tedious client can check what the codec's encoders produce
// (tests/integration/tds/tedious_tokens.js drives it; it is not wirepool's
// server). It prints its port, serves one client and exits 0 when the client
// said goodbye after everything decoded, non-zero on any codec error.
//
//   PRELOGIN     -> prelogin_response(ENCRYPT_NOT_SUP)
//   LOGIN7       -> checks user/password/database, LOGINACK, ENVCHANGE
//                   (database, packet size, collation), INFO, FEATUREEXTACK, DONE
//   SQL batch    -> DONE (tedious's connection setup)
//   RPC "echo"   -> one row whose columns are the parameters with their own
//                   TYPE_INFO (values decoded, then re-encoded), RETURNSTATUS,
//                   DONEPROC
//   RPC "output" -> each output parameter back as RETURNVALUE, RETURNSTATUS, DONEPROC
//   RPC "mapped" -> column_type() of each db::Column kind, a row of values and a
//                   row of NULLs (NBCROW), DONEPROC
//   RPC "slow"   -> no answer until the client's ATTENTION
//   RPC "error"  -> ERROR from error_for_sqlstate("23505"), DONEPROC with DONE_ERROR
//   TM request   -> ENVCHANGE begin / commit / rollback, DONE
//   ATTENTION    -> DONE with DONE_ATTN
// Every read waits at most 10 s.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "protocol/tds/codec.hpp"
#include "protocol/tds/errors.hpp"

using namespace wirepool;
using namespace wirepool::tds;

namespace {

int fail(const std::string& why) {
  std::fprintf(stderr, "token_server: %s\n", why.c_str());
  return 1;
}

bool send_all(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

ColumnMeta meta(const TypeInfo& t, std::string name) {
  ColumnMeta c;
  c.type = t;
  c.name = std::move(name);
  return c;
}

db::Column column(db::Kind kind, std::string name) {
  db::Column c;
  c.kind = kind;
  c.name = std::move(name);
  return c;
}

/// The "mapped" result: one column per mapping rule of column_type().
db::Status mapped(TokenEncoder& enc) {
  std::vector<db::Column> cols = {
      column(db::Kind::Bool, "b"),          column(db::Kind::I64, "i8"),
      column(db::Kind::I64, "i4"),          column(db::Kind::U64, "u"),
      column(db::Kind::F64, "f"),           column(db::Kind::Text, "t20"),
      column(db::Kind::Text, "tmax"),       column(db::Kind::Bytes, "bytes"),
      column(db::Kind::Time, "tstz"),       column(db::Kind::Time, "ts"),
      column(db::Kind::Time, "d"),          column(db::Kind::Decimal, "dec"),
      column(db::Kind::Text, "uuid"),       column(db::Kind::Null, "unknown"),
      column(db::Kind::Decimal, "dec_free")};
  cols[2].native.pg_oid = 23;
  cols[5].native.length = 20;
  cols[8].native.time_form = db::TimeForm::timestamptz;
  cols[9].native.time_form = db::TimeForm::timestamp;
  cols[10].native.time_form = db::TimeForm::date;
  cols[11].native.precision = 12;
  cols[11].native.scale = 3;
  cols[12].native.name = "uuid";
  std::vector<ColumnMeta> metas;
  for (const auto& c : cols)
    metas.push_back(meta(column_type(c), c.name));
  enc.col_metadata(metas);
  const std::string big(9000, 'x');
  const int64_t t = 1709212455678901;  // 2024-02-29T13:14:15.678901Z
  std::vector<db::ValueView> row = {
      db::ValueView::boolean(true),
      db::ValueView::int64(-9007199254740991),
      db::ValueView::int64(-2147483648),
      db::ValueView::uint64(18446744073709551615ULL),
      db::ValueView::float64(3.5e-7),
      db::ValueView::text("héllo 😀"),
      db::ValueView::text(big),
      db::ValueView::bytes(std::string_view("\xde\xad\xbe\xef\x00", 5)),
      db::ValueView::time(t),
      db::ValueView::time(t),
      db::ValueView::time(19782LL * 86400000000),  // 2024-02-29
      db::ValueView::decimal("-12345.678"),
      db::ValueView::text("6f9619ff-8b86-d011-b42d-00c04fc964ff"),
      db::ValueView::int64(42),
      db::ValueView::decimal("0.000000000000000001")};
  if (auto s = enc.row(metas, row); !s.ok()) return s;
  std::vector<db::ValueView> nulls(metas.size());
  return enc.row(metas, nulls);
}

}  // namespace

int main() {
  const int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (ls < 0 || ::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(ls, 1) != 0 || ::getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return fail("cannot listen");
  std::printf("%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  timeval tv{10, 0};
  ::setsockopt(ls, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const int fd = ::accept(ls, nullptr, nullptr);
  if (fd < 0) return fail("no client within 10 s");
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

  MessageAssembler in;
  PacketWriter out;
  uint64_t tx = 0;
  int requests = 0;
  bool pending = false;  // a "slow" request not answered yet
  char buf[4096];
  for (;;) {
    Message m;
    std::string error;
    const DecodeStatus st = in.next(m, error);
    if (st == DecodeStatus::error) return fail(error);
    if (st == DecodeStatus::need_more) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n == 0) break;  // the client closed
      if (n < 0) return fail("read timed out or failed");
      in.feed(Bytes(reinterpret_cast<const uint8_t*>(buf), static_cast<size_t>(n)));
      continue;
    }
    if (std::getenv("TOKEN_SERVER_TRACE"))
      std::fprintf(stderr, "token_server: message type %d, %zu bytes\n", m.type, m.payload.size());
    std::string payload;
    TokenEncoder enc(payload);
    const Bytes body = as_bytes(m.payload);
    switch (static_cast<PacketType>(m.type)) {
      case PacketType::prelogin: {
        auto p = decode_prelogin(body);
        if (p.status != DecodeStatus::ok) return fail("PRELOGIN: " + p.error);
        encode_prelogin(
            payload, prelogin_response(p.message, encrypt::kNotSup, wirepool_prelogin_version()));
        break;
      }
      case PacketType::login7: {
        auto l = decode_login7(body);
        if (l.status != DecodeStatus::ok) return fail("LOGIN7: " + l.error);
        if (l.message.user_name != "demo" || l.message.password != "Pässwörd!1" ||
            l.message.database != "demo")
          return fail("LOGIN7 fields: " + l.message.user_name + "/" + l.message.database);
        enc.login_ack(LoginAck{.prog_version = {0, 1, 0, 0}});
        enc.env_change_text(env::kDatabase, "demo", "master");
        enc.env_collation(kDefaultCollation, Collation{});
        enc.env_change_text(env::kPacketSize, "8192", "4096");
        enc.message(ServerMessage{.is_error = false,
                                  .number = 5701,
                                  .state = 2,
                                  .severity = 0,
                                  .message = "Changed database context to 'demo'.",
                                  .server_name = "wirepool",
                                  .proc_name = "",
                                  .line = 1});
        enc.feature_ext_ack(feature_acks(l.message, true));
        enc.done(Done{});
        out.set_packet_size(8192);
        in.set_packet_size(8192);
        break;
      }
      case PacketType::sql_batch: {
        auto b = decode_sql_batch(body);
        if (b.status != DecodeStatus::ok) return fail("SQL batch: " + b.error);
        enc.done(Done{.status = done::kFinal});
        break;
      }
      case PacketType::rpc: {
        auto r = decode_rpc(body);
        if (r.status != DecodeStatus::ok) return fail("RPC: " + r.error);
        ++requests;
        const auto& params = r.message.params;
        // A named procedure (callProcedure) is the "statement" itself;
        // sp_executesql carries it as its first parameter, then @params.
        const bool named = !r.message.proc_name.empty();
        if (!named && params.empty()) return fail("sp_executesql without a statement");
        const std::string sql = named ? r.message.proc_name : params[0].value.value.str;
        const size_t first = named ? 0 : std::min<size_t>(2, params.size());
        if (sql.rfind("echo", 0) == 0) {
          std::vector<ColumnMeta> metas;
          std::vector<db::ValueView> row;
          for (size_t i = first; i < params.size(); ++i) {
            metas.push_back(meta(params[i].value.type, params[i].name.substr(1)));
            row.push_back(db::view_of(params[i].value.value));
          }
          enc.col_metadata(metas);
          if (auto s = enc.row(metas, row); !s.ok()) return fail("echo row: " + s.error().message);
          enc.done(Done{.token = token::kDoneInProc,
                        .status = done::kCount | done::kMore,
                        .current_command = 0xC1,
                        .row_count = 1});
          enc.return_status(0);
          enc.done(Done{.token = token::kDoneProc, .status = done::kFinal});
        } else if (sql.rfind("output", 0) == 0) {
          // Output parameters come back as RETURNVALUE with their own type.
          for (size_t i = first; i < params.size(); ++i) {
            if (!params[i].output()) continue;
            const db::Status s =
                enc.return_value(static_cast<uint16_t>(i), params[i].name, 0x01,
                                 params[i].value.type, db::view_of(params[i].value.value));
            if (!s.ok()) return fail("return value: " + s.error().message);
          }
          enc.return_status(0);
          enc.done(Done{.token = token::kDoneProc, .status = done::kFinal});
        } else if (sql.rfind("slow", 0) == 0) {
          // No answer: the client cancels with ATTENTION (answered below).
          pending = true;
        } else if (sql.rfind("mapped", 0) == 0) {
          if (auto s = mapped(enc); !s.ok()) return fail("mapped row: " + s.error().message);
          enc.done(Done{.token = token::kDoneInProc,
                        .status = done::kCount | done::kMore,
                        .current_command = 0xC1,
                        .row_count = 2});
          enc.return_status(0);
          enc.done(Done{.token = token::kDoneProc, .status = done::kFinal});
        } else {
          const auto code = error_for_sqlstate("23505");
          enc.message(ServerMessage{.is_error = true,
                                    .number = code.number,
                                    .state = 1,
                                    .severity = code.severity,
                                    .message = "Violation of PRIMARY KEY constraint 'pk'.",
                                    .server_name = "wirepool",
                                    .proc_name = "",
                                    .line = 1});
          enc.done(Done{.token = token::kDoneProc, .status = done::kError});
        }
        break;
      }
      case PacketType::transaction_manager: {
        auto t = decode_transaction_request(body);
        if (t.status != DecodeStatus::ok) return fail("TM: " + t.error);
        if (t.message.request == tm::kBeginXact) {
          tx = 0x0807060504030201ULL;
          enc.env_begin_transaction(tx);
        } else if (t.message.request == tm::kCommitXact) {
          enc.env_commit_transaction(tx);
        } else {
          enc.env_rollback_transaction(tx);
        }
        enc.done(Done{});
        break;
      }
      case PacketType::attention:
        // tedious reads the cancelled request's response as one message and
        // the acknowledgement (DONE with DONE_ATTN) as the next one.
        if (pending) {
          std::string end;
          TokenEncoder(end).done(Done{.status = done::kFinal});
          std::string wire;
          out.write(wire, PacketType::tabular_result, end);
          if (!send_all(fd, wire)) return fail("write failed");
          pending = false;
        }
        enc.done(Done{.status = done::kAttn});
        break;
      default:
        return fail("unexpected message type " + std::to_string(m.type));
    }
    if (payload.empty()) continue;  // "slow": nothing to send yet
    std::string wire;
    out.write(wire, PacketType::tabular_result, payload);  // every server answer is type 4
    if (!send_all(fd, wire)) return fail("write failed");
  }
  ::close(fd);
  ::close(ls);
  return requests >= 3 ? 0 : fail("the client sent fewer requests than expected");
}
