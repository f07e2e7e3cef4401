// Client requests: ALL_HEADERS, SQL batch, RPC, transaction manager (request.hpp).
#include "protocol/tds/request.hpp"

#include "protocol/tds/wire.hpp"

namespace wirepool::tds {

namespace {
using namespace wire;
}  // namespace

// ---------------------------------------------------------------------------
// Client requests

Decoded<AllHeaders> decode_all_headers(Bytes in) {
  Reader r(in);
  AllHeaders h;
  const uint32_t total = r.u32();
  if (!r.ok()) return fail<AllHeaders>("request without ALL_HEADERS");
  if (total < 4 || total > in.size())
    return fail<AllHeaders>("ALL_HEADERS length " + std::to_string(total) +
                            " points outside the request");
  Reader hr(in.subspan(4, total - 4));
  while (hr.remaining() > 0) {
    const uint32_t len = hr.u32();
    const uint16_t type = hr.u16();
    if (!hr.ok() || len < 6 || len - 6 > hr.remaining())
      return fail<AllHeaders>("malformed ALL_HEADERS header");
    Reader dr(hr.take(len - 6));
    switch (type) {
      case 1:
        h.has_query_notification = true;
        break;
      case 2:
        h.transaction_descriptor = dr.u64();
        h.outstanding_requests = dr.u32();
        if (!dr.ok() || dr.remaining() != 0)
          return fail<AllHeaders>("ALL_HEADERS transaction descriptor header must be 12 bytes");
        h.has_transaction_descriptor = true;
        break;
      case 3:
        h.has_trace_activity = true;
        break;
      default:
        return fail<AllHeaders>("unknown ALL_HEADERS header type " + std::to_string(type));
    }
  }
  return done_ok(h, total);
}

void encode_all_headers(std::string& out, uint64_t descriptor, uint32_t outstanding) {
  wire::put_u32(out, 22);  // total: itself + one 18-byte header
  wire::put_u32(out, 18);
  wire::put_u16(out, 2);
  wire::put_u64(out, descriptor);
  wire::put_u32(out, outstanding);
}

Decoded<SqlBatch> decode_sql_batch(Bytes payload) {
  auto h = decode_all_headers(payload);
  if (h.status != DecodeStatus::ok) return fail<SqlBatch>(std::move(h.error));
  SqlBatch b;
  b.headers = h.message;
  std::string e;
  if (!ucs2_to_utf8(payload.subspan(h.consumed), b.sql, &e))
    return fail<SqlBatch>("SQL batch text: " + e);
  return done_ok(std::move(b), payload.size());
}

bool encode_sql_batch(std::string& out, std::string_view sql, uint64_t descriptor) {
  std::string u;
  if (!utf8_to_ucs2(sql, u)) return false;
  encode_all_headers(out, descriptor);
  out += u;
  return true;
}

std::string proc_name(uint16_t id) {
  static constexpr const char* kNames[] = {nullptr,
                                           "sp_cursor",
                                           "sp_cursoropen",
                                           "sp_cursorprepare",
                                           "sp_cursorexecute",
                                           "sp_cursorprepexec",
                                           "sp_cursorunprepare",
                                           "sp_cursorfetch",
                                           "sp_cursoroption",
                                           "sp_cursorclose",
                                           "sp_executesql",
                                           "sp_prepare",
                                           "sp_execute",
                                           "sp_prepexec",
                                           "sp_prepexecrpc",
                                           "sp_unprepare"};
  if (id >= 1 && id <= 15) return kNames[id];
  return "proc " + std::to_string(id);
}

Decoded<RpcRequest> decode_rpc(Bytes payload, const Limits& limits) {
  auto h = decode_all_headers(payload);
  if (h.status != DecodeStatus::ok) return fail<RpcRequest>(std::move(h.error));
  RpcRequest rpc;
  rpc.headers = h.message;
  Reader r(payload.subspan(h.consumed));
  const uint16_t name_len = r.u16();
  if (!r.ok()) return fail<RpcRequest>("RPC request without a procedure");
  std::string e;
  if (name_len == 0xFFFF) {
    rpc.proc_id = r.u16();
    if (!r.ok()) return fail<RpcRequest>("RPC request cut inside its procedure id");
  } else {
    if (name_len == 0 || name_len > 1046)
      return fail<RpcRequest>("RPC procedure name of " + std::to_string(name_len) + " characters");
    if (!read_ucs2(r, name_len, rpc.proc_name, &e))
      return fail<RpcRequest>(r.ok() ? "RPC procedure name: " + e
                                     : "RPC request cut inside its procedure name");
  }
  rpc.option_flags = r.u16();
  if (!r.ok()) return fail<RpcRequest>("RPC request cut before its option flags");
  while (r.remaining() > 0) {
    const Bytes rest = r.rest();
    if (rest[0] == 0xFF || rest[0] == 0xFE)
      return fail<RpcRequest>(
          "several RPCs in one request (batch separator) are not supported: send them one "
          "by one");
    if (rpc.params.size() >= 2100)
      return fail<RpcRequest>("RPC request with more than 2100 parameters");
    RpcParam p;
    if (!read_b_varchar(r, p.name, &e))
      return fail<RpcRequest>(r.ok() ? "RPC parameter name: " + e
                                     : "RPC request cut inside a parameter name");
    p.status = r.u8();
    if (!r.ok()) return fail<RpcRequest>("RPC request cut inside a parameter");
    if ((p.status & 0x08) != 0)
      return fail<RpcRequest>("encrypted RPC parameters (Always Encrypted) are not supported");
    auto t = decode_type_info(r.rest());
    if (t.status != DecodeStatus::ok)
      return fail<RpcRequest>("RPC parameter " + p.name + ": " +
                              (t.status == DecodeStatus::error ? t.error : "TYPE_INFO cut short"));
    r.take(t.consumed);
    auto v = decode_value(t.message, r.rest(), limits);
    if (v.status != DecodeStatus::ok)
      return fail<RpcRequest>("RPC parameter " + p.name + ": " +
                              (v.status == DecodeStatus::error ? v.error : "value cut short"));
    r.take(v.consumed);
    p.value = std::move(v.message);
    rpc.params.push_back(std::move(p));
  }
  return done_ok(std::move(rpc), payload.size());
}

db::Status encode_rpc(std::string& out, const RpcRequest& rpc) {
  std::string body;
  encode_all_headers(body, rpc.headers.transaction_descriptor, rpc.headers.outstanding_requests);
  if (rpc.proc_name.empty()) {
    wire::put_u16(body, 0xFFFF);
    wire::put_u16(body, rpc.proc_id);
  } else {
    const std::string u = ucs2_capped(rpc.proc_name, 1046);
    wire::put_u16(body, static_cast<uint16_t>(u.size() / 2));
    body += u;
  }
  wire::put_u16(body, rpc.option_flags);
  for (const RpcParam& p : rpc.params) {
    put_b_varchar(body, p.name);
    wire::put_u8(body, p.status);
    encode_type_info(body, p.value.type);
    db::Status s = encode_value(body, p.value.type, db::view_of(p.value.value));
    if (!s.ok()) return s;
  }
  out += body;
  return {};
}

Decoded<TransactionRequest> decode_transaction_request(Bytes payload) {
  auto h = decode_all_headers(payload);
  if (h.status != DecodeStatus::ok) return fail<TransactionRequest>(std::move(h.error));
  TransactionRequest t;
  t.headers = h.message;
  Reader r(payload.subspan(h.consumed));
  t.request = r.u16();
  if (!r.ok()) return fail<TransactionRequest>("transaction manager request without a type");
  std::string e;
  // Transaction names: a byte count and UCS-2 (what tedious and SQL Server use).
  auto name = [&](std::string& out) {
    const uint8_t n = r.u8();
    if (!r.ok()) {
      e = "transaction manager request cut short";
      return false;
    }
    if (n % 2 != 0) {
      e = "transaction name of odd byte length " + std::to_string(n);
      return false;
    }
    if (!read_ucs2(r, n / 2, out, &e)) {
      if (!r.ok()) e = "transaction manager request cut inside a name";
      return false;
    }
    return true;
  };
  switch (t.request) {
    case tm::kBeginXact:
      t.isolation_level = r.u8();
      if (!name(t.name)) return fail<TransactionRequest>(e);
      if (t.isolation_level > isolation::kSnapshot)
        return fail<TransactionRequest>("unknown isolation level " +
                                        std::to_string(t.isolation_level));
      break;
    case tm::kCommitXact:
    case tm::kRollbackXact:
      if (!name(t.name)) return fail<TransactionRequest>(e);
      t.flags = r.u8();
      if (!r.ok()) return fail<TransactionRequest>("transaction manager request cut short");
      if ((t.flags & tm::kFlagBeginXact) != 0) {
        t.new_isolation_level = r.u8();
        if (!name(t.new_name)) return fail<TransactionRequest>(e);
      }
      break;
    case tm::kSaveXact:
      if (!name(t.name)) return fail<TransactionRequest>(e);
      break;
    case tm::kGetDtcAddress:
    case tm::kPropagateXact:
    case tm::kPromoteXact:
      t.raw = std::string(wire::as_view(r.rest()));
      r.take(r.remaining());
      break;
    default:
      return fail<TransactionRequest>("unknown transaction manager request " +
                                      std::to_string(t.request));
  }
  if (r.remaining() != 0)
    return fail<TransactionRequest>("trailing bytes after a transaction manager request");
  return done_ok(std::move(t), payload.size());
}

void encode_transaction_request(std::string& out, const TransactionRequest& t) {
  encode_all_headers(out, t.headers.transaction_descriptor, t.headers.outstanding_requests);
  wire::put_u16(out, t.request);
  auto name = [&](std::string_view n) {
    const std::string u = ucs2_capped(n, 127);
    wire::put_u8(out, static_cast<uint8_t>(u.size()));
    out += u;
  };
  switch (t.request) {
    case tm::kBeginXact:
      wire::put_u8(out, t.isolation_level);
      name(t.name);
      break;
    case tm::kCommitXact:
    case tm::kRollbackXact:
      name(t.name);
      wire::put_u8(out, t.flags);
      if ((t.flags & tm::kFlagBeginXact) != 0) {
        wire::put_u8(out, t.new_isolation_level);
        name(t.new_name);
      }
      break;
    case tm::kSaveXact:
      name(t.name);
      break;
    default:
      out += t.raw;
      break;
  }
}

}  // namespace wirepool::tds
