// libFuzzer target for the PostgreSQL v3 codec (protocol/pg/).
//
// The input is read as a client's byte stream: first a startup packet, then
// frontend messages until the bytes run out or the decoder reports an error.
// Along the way every message body is also fed to what parses it later:
// parse_sasl_initial and a SCRAM exchange for 'p', decode_param (text and
// binary, several types) for Bind parameters, the text parsers for Query text.
//
// Checked on every input (a violation aborts, which libFuzzer reports):
// - consumed <= size, consumed > 0 on ok, consumed == 0 otherwise;
// - a decoded message's proper prefix answers need_more, never ok or error;
// - decoding is deterministic;
// - decode_param -> encode_value -> decode_param gives the same value back;
// - numeric binary -> text -> binary -> text is stable;
// - encoder output frames are consistent (each length matches its bytes).
// Sanitizers (address, undefined) catch reads out of bounds and UB.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <variant>

#include "protocol/pg/codec.hpp"
#include "protocol/pg/scram.hpp"
#include "protocol/pg/types.hpp"

namespace {

using namespace wirepool;
using namespace wirepool::pg;

constexpr size_t kMaxLen = 1 << 20;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_pg_decoder: postcondition violated: %s\n", what);
  std::abort();
}

void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

template <class M>
void check_decoded(const Decoded<M>& d, size_t size) {
  check(d.consumed <= size, "consumed <= size");
  if (d.status == DecodeStatus::ok) {
    check(d.consumed > 0, "consumed > 0 when ok");
  } else {
    check(d.consumed == 0, "consumed == 0 unless ok");
  }
  if (d.status == DecodeStatus::error) check(!d.error.empty(), "an error says why");
}

/// The frames an Encoder produced: type byte, int32 length matching the bytes.
void check_frames(std::string_view out) {
  size_t pos = 0;
  while (pos < out.size()) {
    check(out.size() - pos >= 5, "encoded frame has a header");
    const auto* p = reinterpret_cast<const uint8_t*>(out.data() + pos + 1);
    const uint32_t len = uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
    check(len >= 4 && out.size() - pos - 1 >= len, "encoded length within the output");
    pos += 1 + len;
  }
}

bool same_value(const db::Value& a, const db::Value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case db::Kind::Null:
      return true;
    case db::Kind::Bool:
      return a.b == b.b;
    case db::Kind::I64:
    case db::Kind::Time:
      return a.i64 == b.i64;
    case db::Kind::U64:
      return a.u64 == b.u64;
    case db::Kind::F64:
      return (std::isnan(a.f64) && std::isnan(b.f64)) ||
             std::memcmp(&a.f64, &b.f64, sizeof(double)) == 0;
    default:
      return a.str == b.str;
  }
}

constexpr uint32_t kParamTypes[] = {0,
                                    oid::kBool,
                                    oid::kInt2,
                                    oid::kInt4,
                                    oid::kInt8,
                                    oid::kFloat4,
                                    oid::kFloat8,
                                    oid::kNumeric,
                                    oid::kText,
                                    oid::kBytea,
                                    oid::kDate,
                                    oid::kTimestamp,
                                    oid::kTimestamptz,
                                    oid::kUuid,
                                    oid::kJsonb,
                                    oid::kOid};

void fuzz_param(std::string_view bytes, uint32_t type_oid, int16_t format) {
  auto r = decode_param(bytes, type_oid, format);
  if (!r.ok()) {
    check(r.error().sqlstate.size() == 5, "SQLSTATE has five characters");
    check(r.error().code == db::Errc::invalid_query, "decode errors are invalid_query");
    return;
  }
  const db::Value& v = r->value;
  if (v.is_null() || r->untyped) return;
  // Whatever decoded must encode back as the same type and decode to itself.
  std::string wire, error;
  if (!encode_value(db::view_of(v), type_oid == 0 ? oid::kBytea : type_oid, format, wire, &error)) {
    fail("a decoded parameter does not encode back");
  }
  auto again = decode_param(wire, type_oid == 0 ? oid::kBytea : type_oid, format);
  check(again.ok(), "re-encoded parameter decodes");
  check(same_value(again->value, v), "decode/encode/decode round trip");
}

void fuzz_text(std::string_view text) {
  // The text parsers must accept or refuse anything without harm.
  if (auto t = parse_time(text)) (void)format_time(*t, db::TimeForm::timestamptz);
  if (auto raw = bytea_from_text(text)) check(bytea_from_text(bytea_to_hex(*raw)) == *raw, "bytea");
  if (auto b = numeric_to_binary(text)) {
    auto t1 = numeric_from_binary(*b);
    check(t1.has_value(), "numeric_to_binary output decodes");
    auto b2 = numeric_to_binary(*t1);
    check(b2 && *b2 == *b, "numeric text/binary round trip");
  }
  if (auto t = numeric_from_binary(text)) {
    auto b = numeric_to_binary(*t);
    check(b.has_value(), "numeric_from_binary output encodes");
    check(numeric_from_binary(*b) == t, "numeric binary/text round trip");
  }
  (void)scram::parse_verifier(text);
  (void)scram::base64_decode(text);
}

const scram::Verifier& verifier() {
  // One PBKDF2 iteration: the fuzzer exercises parsing, not key stretching.
  static const scram::Verifier v = scram::make_verifier("pencil", "fuzzsaltfuzzsalt", 1);
  return v;
}

/// Drives one SCRAM exchange from the 'p' messages of the stream.
struct Sasl {
  std::optional<scram::ServerExchange> exchange;
  bool done = false;

  void feed(std::string_view body) {
    if (done) return;
    if (!exchange) {
      auto init = parse_sasl_initial(body);
      if (!init) return;
      // Channel binding data is offered when the mechanism name has an even length
      // (so SCRAM-SHA-256-PLUS gets it and SCRAM-SHA-256 does not).
      exchange.emplace(verifier(), init->mechanism.size() % 2 == 0 ? "cb-data" : "", "srvnonce");
      auto a = exchange->client_first(init->mechanism, init->data.value_or(""));
      if (a.outcome == scram::ServerExchange::Outcome::failure) done = true;
      if (a.outcome == scram::ServerExchange::Outcome::next) {
        check(a.message.rfind("r=", 0) == 0, "server-first starts with r=");
      }
      return;
    }
    auto a = exchange->client_final(body);
    check(a.outcome != scram::ServerExchange::Outcome::next, "client-final never answers next");
    if (a.outcome == scram::ServerExchange::Outcome::success) {
      check(a.message.rfind("v=", 0) == 0, "server-final starts with v=");
    }
    done = true;
  }
};

void fuzz_message(const FrontendMessage& m, Sasl& sasl) {
  std::string out;
  Encoder enc(out);
  if (const auto* q = std::get_if<Query>(&m)) {
    fuzz_text(q->sql);
    ErrorFields e;
    e.message = q->sql;
    e.detail = q->sql;
    e.position = int32_t(q->sql.size());
    enc.error_response(e);
    enc.command_complete(q->sql);
    enc.begin_data_row(2);
    enc.field(q->sql);
    enc.begin_field();
    std::string error;
    (void)encode_value(db::ValueView::text(q->sql), oid::kNumeric, 1, enc.buffer(), &error);
    enc.end_field();
    enc.end_data_row();
  } else if (const auto* p = std::get_if<Parse>(&m)) {
    enc.parameter_description(p->param_types);
  } else if (const auto* b = std::get_if<Bind>(&m)) {
    for (size_t i = 0; i < b->params.size(); ++i) {
      if (!b->params[i]) continue;
      int16_t format = 0;
      if (b->param_formats.size() == 1) format = b->param_formats[0];
      if (b->param_formats.size() > 1 && i < b->param_formats.size()) format = b->param_formats[i];
      const size_t t = (i + b->statement.size()) % std::size(kParamTypes);
      fuzz_param(*b->params[i], kParamTypes[t], format);
      fuzz_param(*b->params[i], kParamTypes[t], int16_t(1 - format));
    }
  } else if (const auto* pw = std::get_if<PasswordMessage>(&m)) {
    sasl.feed(pw->data);
  } else if (const auto* d = std::get_if<CopyData>(&m)) {
    enc.copy_data(d->data);
    fuzz_text(d->data);
  }
  check_frames(out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Bytes in(data, size);

  size_t offset = 0;
  const auto s = decode_startup(in, kMaxStartupPacket);
  check_decoded(s, size);
  if (s.status == DecodeStatus::ok) {
    check(s.consumed >= 8, "a startup packet is at least 8 bytes");
    check(decode_startup(in.first(s.consumed - 1)).status == DecodeStatus::need_more,
          "startup prefix needs more");
    if (const auto* m = std::get_if<StartupMessage>(&s.message)) {
      for (const auto& [name, value] : m->params) {
        check(name.data() >= reinterpret_cast<const char*>(data) &&
                  value.data() + value.size() <= reinterpret_cast<const char*>(data) + size,
              "startup parameters point into the input");
      }
      (void)m->get("user");
    }
    offset = s.consumed;
  }

  Sasl sasl;
  for (int guard = 0; offset < size && guard < 10000; ++guard) {
    const Bytes rest = in.subspan(offset);
    const auto d = decode_frontend(rest, kMaxLen);
    check_decoded(d, rest.size());
    if (d.status != DecodeStatus::ok) break;
    check(d.consumed >= 5, "a frontend message is at least 5 bytes");
    const auto len = peek_length(rest);
    check(len && size_t(*len) + 1 == d.consumed, "consumed is the announced length + 1");
    // A proper prefix of a message that decodes is never complete nor wrong.
    check(decode_frontend(rest.first(d.consumed - 1), kMaxLen).status == DecodeStatus::need_more,
          "frontend prefix needs more");
    const auto again = decode_frontend(rest.first(d.consumed), kMaxLen);
    check(again.status == DecodeStatus::ok && again.consumed == d.consumed &&
              again.message.index() == d.message.index(),
          "decoding is deterministic");
    fuzz_message(d.message, sasl);
    offset += d.consumed;
  }
  return 0;
}
