// libFuzzer target for the TDS codec (protocol/tds/).
//
// The input is read three ways:
// 1. as a client's byte stream: the message assembler, fed whole and then in
//    pieces of a size taken from the input, must yield the same messages; each
//    message is decoded by its type (PRELOGIN, LOGIN7, SQL batch, RPC,
//    transaction manager) and what decodes is re-encoded and decoded again;
// 2. as a message payload given directly to every request decoder;
// 3. as a server's token stream (TokenDecoder), and as TYPE_INFO + value.
//
// Checked on every input (a violation aborts, which libFuzzer reports):
// - consumed <= size; ok consumes something; need_more and error consume nothing;
// - the assembler's result does not depend on how the bytes were split;
// - decode -> encode -> decode keeps what was decoded (LOGIN7 strings and
//   password, PRELOGIN options, SQL text, RPC parameter values, TM requests,
//   values re-encoded with their own TYPE_INFO);
// - a proper prefix of a complete token answers need_more, never ok or error.
// Sanitizers (address, undefined) catch reads out of bounds and UB.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

#include "protocol/tds/codec.hpp"
#include "protocol/tds/errors.hpp"
#include "protocol/tds/types.hpp"

namespace {

using namespace wirepool;
using namespace wirepool::tds;

const Limits kLimits{.max_value = 1 << 20};

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_tds_decoder: postcondition violated: %s\n", what);
  std::abort();
}
void check(bool ok, const char* what) {
  if (!ok) fail(what);
}
/// `empty_ok`: a value of NULLTYPE (0x1F) legitimately takes no bytes.
template <class M>
void check_decoded(const Decoded<M>& d, size_t size, bool empty_ok = false) {
  check(d.consumed <= size, "consumed <= size");
  if (d.status == DecodeStatus::ok)
    check(d.consumed > 0 || size == 0 || empty_ok, "ok consumes");
  else
    check(d.consumed == 0, "need_more/error consume nothing");
  if (d.status == DecodeStatus::error) check(!d.error.empty(), "an error says what");
}

bool same_value(const db::Value& a, const db::Value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case db::Kind::Null:
      return true;
    case db::Kind::Bool:
      return a.b == b.b;
    case db::Kind::F64:
      return std::memcmp(&a.f64, &b.f64, sizeof a.f64) == 0 || (a.f64 != a.f64 && b.f64 != b.f64);
    case db::Kind::I64:
    case db::Kind::U64:
    case db::Kind::Time:
      return a.i64 == b.i64;
    default:
      return a.str == b.str;
  }
}

/// A decoded value re-encoded with its own type decodes to the same value.
void check_value_round_trip(const TypedValue& v) {
  // NBCROW can carry a NULL of a fixed-length type, which has no value form.
  if (v.value.is_null() && null_size(v.type) == 0) return;
  std::string out;
  const auto s = encode_value(out, v.type, db::view_of(v.value));
  // Whatever decodes must encode back into its own type.
  check(s.ok(), "a decoded value encodes back into its type");
  // 100 ns units (scale 7) are truncated to microseconds when decoded: those
  // do not round-trip by design.
  if ((v.type.type == type::kDateTime2N || v.type.type == type::kDateTimeOffsetN) &&
      v.type.scale == 7)
    return;
  const auto d = decode_value(v.type, as_bytes(out), kLimits);
  check(d.status == DecodeStatus::ok, "a re-encoded value decodes");
  check(d.consumed == out.size(), "a re-encoded value is consumed whole");
  check(same_value(d.message.value, v.value), "value round trip");
}

void fuzz_requests(Bytes payload) {
  {
    const auto d = decode_prelogin(payload);
    check_decoded(d, payload.size());
    if (d.status == DecodeStatus::ok) {
      std::string out;
      encode_prelogin(out, d.message);
      const auto again = decode_prelogin(as_bytes(out));
      check(again.status == DecodeStatus::ok, "PRELOGIN round trip decodes");
      check(again.message.encryption == d.message.encryption, "PRELOGIN encryption kept");
      check(again.message.instance == d.message.instance, "PRELOGIN instance kept");
      std::string resp;
      encode_prelogin(resp,
                      prelogin_response(d.message, encrypt::kReq, wirepool_prelogin_version()));
      check(decode_prelogin(as_bytes(resp)).status == DecodeStatus::ok, "response decodes");
    }
  }
  {
    const auto d = decode_login7(payload);
    check_decoded(d, payload.size());
    if (d.status == DecodeStatus::ok) {
      std::string out;
      encode_login7(out, d.message);
      const auto again = decode_login7(as_bytes(out));
      check(again.status == DecodeStatus::ok, "LOGIN7 round trip decodes");
      check(again.message.user_name == d.message.user_name, "LOGIN7 user kept");
      check(again.message.password == d.message.password, "LOGIN7 password kept");
      check(again.message.database == d.message.database, "LOGIN7 database kept");
      check(again.message.features.size() == d.message.features.size(), "features kept");
    }
  }
  {
    const auto d = decode_sql_batch(payload);
    check_decoded(d, payload.size());
    if (d.status == DecodeStatus::ok) {
      std::string out;
      check(encode_sql_batch(out, d.message.sql, d.message.headers.transaction_descriptor),
            "decoded SQL is valid UTF-8");
      const auto again = decode_sql_batch(as_bytes(out));
      check(again.status == DecodeStatus::ok && again.message.sql == d.message.sql,
            "SQL batch round trip");
    }
  }
  {
    const auto d = decode_rpc(payload, kLimits);
    check_decoded(d, payload.size());
    if (d.status == DecodeStatus::ok) {
      for (const auto& p : d.message.params)
        check_value_round_trip(p.value);
      std::string out;
      if (encode_rpc(out, d.message).ok()) {
        const auto again = decode_rpc(as_bytes(out), kLimits);
        check(again.status == DecodeStatus::ok, "RPC round trip decodes");
        check(again.message.params.size() == d.message.params.size(), "RPC params kept");
      }
    }
  }
  {
    const auto d = decode_transaction_request(payload);
    check_decoded(d, payload.size());
    if (d.status == DecodeStatus::ok) {
      std::string out;
      encode_transaction_request(out, d.message);
      const auto again = decode_transaction_request(as_bytes(out));
      check(again.status == DecodeStatus::ok, "TM round trip decodes");
      check(again.message.request == d.message.request && again.message.name == d.message.name,
            "TM request kept");
    }
  }
}

std::vector<Message> assemble(Bytes in, size_t step, std::string& error) {
  MessageAssembler a(AssemblerLimits{.max_message = 1 << 20});
  std::vector<Message> out;
  for (size_t i = 0; i < in.size(); i += step) {
    a.feed(in.subspan(i, std::min(step, in.size() - i)));
    for (;;) {
      Message m;
      const auto st = a.next(m, error);
      if (st == DecodeStatus::ok) {
        out.push_back(std::move(m));
        continue;
      }
      if (st == DecodeStatus::error) return out;
      break;
    }
  }
  return out;
}

void fuzz_tokens(Bytes in) {
  TokenDecoder dec(kLimits);
  size_t off = 0;
  for (int guard = 0; off < in.size() && guard < 10000; ++guard) {
    const Bytes rest = in.subspan(off);
    // The decoder's column state changes on COLMETADATA: probe prefixes on a copy.
    TokenDecoder probe = dec;
    const auto d = dec.next(rest);
    check_decoded(d, rest.size());
    if (d.status != DecodeStatus::ok) break;
    if (d.consumed > 1) {
      const auto p = probe.next(rest.first(d.consumed - 1));
      // A prefix may end with whole skipped tokens (TABNAME ...) and still need more.
      check(p.status == DecodeStatus::need_more, "a token's prefix needs more");
    }
    if (const auto* row = std::get_if<Row>(&d.message)) {
      for (const auto& v : row->values)
        check_value_round_trip(v);
    }
    off += d.consumed;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Bytes in(data, size);

  // 1. A client stream through the assembler, split two ways.
  std::string e1, e2;
  const auto whole = assemble(in, in.size() ? in.size() : 1, e1);
  const size_t step = size ? (data[0] % 13) + 1 : 1;
  const auto split = assemble(in, step, e2);
  check(whole.size() == split.size(), "assembly does not depend on the split");
  check(e1.empty() == e2.empty(), "errors do not depend on the split");
  for (size_t i = 0; i < whole.size(); ++i) {
    check(whole[i].payload == split[i].payload && whole[i].type == split[i].type,
          "same messages whatever the split");
    fuzz_requests(as_bytes(whole[i].payload));
  }

  // 2. The input as a payload.
  fuzz_requests(in);

  // 3. A server's token stream, and a TYPE_INFO + value.
  fuzz_tokens(in);
  const auto t = decode_type_info(in);
  check_decoded(t, size);
  if (t.status == DecodeStatus::ok) {
    std::string out;
    encode_type_info(out, t.message);
    const auto t2 = decode_type_info(as_bytes(out));
    check(t2.status == DecodeStatus::ok && t2.message.type == t.message.type &&
              t2.message.scale == t.message.scale && t2.message.precision == t.message.precision,
          "TYPE_INFO round trip");
    const auto v = decode_value(t.message, in.subspan(t.consumed), kLimits);
    check_decoded(v, size - t.consumed, t.message.type == type::kNull);
    if (v.status == DecodeStatus::ok) check_value_round_trip(v.message);
  }
  (void)sqlstate_for_error(size ? data[0] * 7 : 0, {}, size ? data[size - 1] : 0);
  return 0;
}
