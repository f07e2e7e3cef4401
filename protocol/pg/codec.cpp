// PostgreSQL v3 frontend decoding and backend encoding. Sans-I/O: every
// function here works on the bytes it is given and nothing else.
//
// Decoding rules (PostgreSQL protocol chapter, "Message Formats"):
// - a startup packet is int32 length (including itself) + int32 code + body;
// - every later frontend message is a type byte + int32 length (including
//   itself, not the type byte) + body;
// - a length that is invalid is rejected as soon as its header is complete, so
//   a hostile peer can never make us wait for (or buffer) a body we will refuse.

#include "protocol/pg/codec.hpp"

#include <array>
#include <charconv>
#include <cstring>
#include <limits>

namespace wirepool::pg {
namespace {

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string num(uint64_t v) {
  return std::to_string(v);
}

/// "'Q'" for a printable type byte, "0x07" otherwise.
std::string type_name(uint8_t t) {
  if (t >= 0x21 && t <= 0x7e) return std::string("'") + static_cast<char>(t) + "'";
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[t >> 4] + kHex[t & 15];
}

/// A bounds-checked cursor over one message body. Every getter fails instead of
/// reading past `end_`.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}

  size_t remaining() const { return n_ - pos_; }
  bool at_end() const { return pos_ == n_; }

  bool u8(uint8_t& v) {
    if (remaining() < 1) return false;
    v = p_[pos_++];
    return true;
  }
  bool i16(int16_t& v) {
    if (remaining() < 2) return false;
    v = static_cast<int16_t>((uint16_t{p_[pos_]} << 8) | uint16_t{p_[pos_ + 1]});
    pos_ += 2;
    return true;
  }
  bool i32(int32_t& v) {
    if (remaining() < 4) return false;
    v = static_cast<int32_t>(be32(p_ + pos_));
    pos_ += 4;
    return true;
  }
  /// A NUL-terminated string that ends inside the body.
  bool cstr(std::string_view& v) {
    const void* nul = std::memchr(p_ + pos_, 0, remaining());
    if (nul == nullptr) return false;
    const size_t len = static_cast<size_t>(static_cast<const uint8_t*>(nul) - (p_ + pos_));
    v = std::string_view(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len + 1;
    return true;
  }
  bool bytes(size_t len, std::string_view& v) {
    if (remaining() < len) return false;
    v = std::string_view(reinterpret_cast<const char*>(p_ + pos_), len);
    pos_ += len;
    return true;
  }
  std::string_view rest() {
    std::string_view v(reinterpret_cast<const char*>(p_ + pos_), remaining());
    pos_ = n_;
    return v;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

template <class M>
Decoded<M> fail(std::string why) {
  Decoded<M> d;
  d.status = DecodeStatus::error;
  d.error = std::move(why);
  return d;
}

template <class M>
Decoded<M> need_more() {
  return Decoded<M>{};
}

// ---------------------------------------------------------------------------
// Startup

using StartupResult = Decoded<StartupPacket>;

StartupResult parse_startup_body(uint32_t code, const uint8_t* body, size_t n, size_t consumed) {
  // Pairs of NUL-terminated name and value, then one final NUL as the last byte.
  StartupMessage m;
  m.protocol = code;
  Reader r(body, n);
  while (true) {
    std::string_view name;
    if (!r.cstr(name)) {
      return fail<StartupPacket>("invalid startup packet layout: expected terminator as last byte");
    }
    if (name.empty()) break;  // the terminator
    std::string_view value;
    if (!r.cstr(value)) {
      return fail<StartupPacket>("invalid startup packet layout: parameter \"" + std::string(name) +
                                 "\" has no value");
    }
    m.params.emplace_back(name, value);
  }
  if (!r.at_end()) {
    return fail<StartupPacket>("invalid startup packet layout: expected terminator as last byte");
  }
  StartupResult d;
  d.status = DecodeStatus::ok;
  d.message = std::move(m);
  d.consumed = consumed;
  return d;
}

// ---------------------------------------------------------------------------
// Frontend messages

using FrontendResult = Decoded<FrontendMessage>;

/// Smallest legal length field (including itself) per message type, and whether
/// that length is also the only legal one. 0 = unknown type.
struct LengthRule {
  uint32_t min = 0;
  bool exact = false;
};

constexpr std::array<LengthRule, 256> make_length_rules() {
  std::array<LengthRule, 256> t{};
  t['Q'] = {5, false};              // sql\0
  t['P'] = {4 + 1 + 1 + 2, false};  // name\0 sql\0 int16
  t['B'] = {4 + 1 + 1 + 2 + 2 + 2, false};
  t['D'] = {4 + 1 + 1, false};  // kind name\0
  t['E'] = {4 + 1 + 4, false};  // portal\0 int32
  t['C'] = {4 + 1 + 1, false};
  t['S'] = {4, true};
  t['H'] = {4, true};
  t['X'] = {4, true};
  t['p'] = {4, false};  // SASLResponse data may be empty
  t['d'] = {4, false};
  t['c'] = {4, true};
  t['f'] = {5, false};
  t['F'] = {4 + 4 + 2 + 2 + 2, false};  // oid, nformats, nargs, result format
  return t;
}
constexpr std::array<LengthRule, 256> kLengthRules = make_length_rules();

FrontendResult malformed(uint8_t type, const std::string& what) {
  return fail<FrontendMessage>("malformed " + type_name(type) + " message: " + what);
}

bool valid_format(int16_t f) {
  return f == 0 || f == 1;
}

FrontendResult parse_frontend_body(uint8_t type, Reader r, size_t consumed) {
  FrontendResult d;
  d.status = DecodeStatus::ok;
  d.consumed = consumed;
  auto done = [&](FrontendMessage m) -> FrontendResult {
    if (!r.at_end()) return malformed(type, num(r.remaining()) + " trailing bytes");
    d.message = std::move(m);
    return d;
  };

  switch (type) {
    case 'Q': {
      Query q;
      if (!r.cstr(q.sql)) return malformed(type, "query string is not NUL-terminated");
      return done(q);
    }
    case 'P': {
      Parse p;
      int16_t n = 0;
      if (!r.cstr(p.name)) return malformed(type, "statement name is not NUL-terminated");
      if (!r.cstr(p.sql)) return malformed(type, "query string is not NUL-terminated");
      if (!r.i16(n)) return malformed(type, "missing parameter type count");
      if (n < 0) return malformed(type, "negative parameter type count " + std::to_string(n));
      if (r.remaining() != size_t(n) * 4) {
        return malformed(type, std::to_string(n) + " parameter types need " + num(size_t(n) * 4) +
                                   " bytes, " + num(r.remaining()) + " remain");
      }
      p.param_types.resize(size_t(n));
      for (auto& oid : p.param_types) {
        int32_t v = 0;
        (void)r.i32(v);
        oid = static_cast<uint32_t>(v);
      }
      return done(std::move(p));
    }
    case 'B': {
      Bind b;
      int16_t nfmt = 0, nparams = 0, nres = 0;
      if (!r.cstr(b.portal)) return malformed(type, "portal name is not NUL-terminated");
      if (!r.cstr(b.statement)) return malformed(type, "statement name is not NUL-terminated");
      if (!r.i16(nfmt)) return malformed(type, "missing parameter format count");
      if (nfmt < 0) return malformed(type, "negative parameter format count");
      if (r.remaining() < size_t(nfmt) * 2) {
        return malformed(type, std::to_string(nfmt) + " parameter formats exceed the message");
      }
      b.param_formats.resize(size_t(nfmt));
      for (auto& f : b.param_formats) {
        (void)r.i16(f);
        if (!valid_format(f))
          return malformed(type, "unsupported format code " + std::to_string(f));
      }
      if (!r.i16(nparams)) return malformed(type, "missing parameter count");
      if (nparams < 0) return malformed(type, "negative parameter count");
      // A format count other than 0, 1 or nparams is well framed: the session
      // answers it with PostgreSQL's recoverable 08P01 error, not the codec.
      // Each parameter needs at least its int32 length: reject an impossible
      // count before reserving anything for it.
      if (r.remaining() < size_t(nparams) * 4) {
        return malformed(type, std::to_string(nparams) + " parameters exceed the message");
      }
      b.params.reserve(size_t(nparams));
      for (int i = 0; i < nparams; ++i) {
        int32_t len = 0;
        (void)r.i32(len);
        if (len == -1) {
          b.params.emplace_back(std::nullopt);
          continue;
        }
        if (len < 0) {
          return malformed(
              type, "parameter " + std::to_string(i + 1) + " has length " + std::to_string(len));
        }
        std::string_view v;
        if (!r.bytes(size_t(len), v)) {
          return malformed(type, "parameter " + std::to_string(i + 1) + " of " +
                                     std::to_string(len) + " bytes exceeds the message");
        }
        b.params.emplace_back(v);
      }
      if (!r.i16(nres)) return malformed(type, "missing result format count");
      if (nres < 0) return malformed(type, "negative result format count");
      if (r.remaining() != size_t(nres) * 2) {
        return malformed(type, std::to_string(nres) + " result formats need " +
                                   num(size_t(nres) * 2) + " bytes, " + num(r.remaining()) +
                                   " remain");
      }
      b.result_formats.resize(size_t(nres));
      for (auto& f : b.result_formats) {
        (void)r.i16(f);
        if (!valid_format(f))
          return malformed(type, "unsupported format code " + std::to_string(f));
      }
      return done(std::move(b));
    }
    case 'D':
    case 'C': {
      uint8_t kind = 0;
      std::string_view name;
      if (!r.u8(kind)) return malformed(type, "missing kind");
      if (kind != 'S' && kind != 'P') {
        return malformed(type, "kind " + type_name(kind) + " is neither 'S' nor 'P'");
      }
      if (!r.cstr(name)) return malformed(type, "name is not NUL-terminated");
      if (type == 'D') return done(Describe{static_cast<char>(kind), name});
      return done(Close{static_cast<char>(kind), name});
    }
    case 'E': {
      Execute e;
      if (!r.cstr(e.portal)) return malformed(type, "portal name is not NUL-terminated");
      if (!r.i32(e.max_rows)) return malformed(type, "missing row limit");
      if (e.max_rows < 0) e.max_rows = 0;  // PostgreSQL: <= 0 fetches all rows
      return done(e);
    }
    case 'S':
      return done(Sync{});
    case 'H':
      return done(Flush{});
    case 'X':
      return done(Terminate{});
    case 'c':
      return done(CopyDone{});
    case 'p':
      return done(PasswordMessage{r.rest()});
    case 'd':
      return done(CopyData{r.rest()});
    case 'f': {
      CopyFail f;
      if (!r.cstr(f.message)) return malformed(type, "error message is not NUL-terminated");
      return done(f);
    }
    case 'F': {
      // Validated for framing only: the server refuses function calls.
      int32_t oid = 0;
      int16_t nfmt = 0, nargs = 0, res = 0;
      if (!r.i32(oid)) return malformed(type, "missing function OID");
      if (!r.i16(nfmt) || nfmt < 0 || r.remaining() < size_t(nfmt) * 2) {
        return malformed(type, "bad argument format count");
      }
      for (int i = 0; i < nfmt; ++i) {
        int16_t f = 0;
        (void)r.i16(f);
        if (!valid_format(f))
          return malformed(type, "unsupported format code " + std::to_string(f));
      }
      if (!r.i16(nargs) || nargs < 0 || r.remaining() < size_t(nargs) * 4) {
        return malformed(type, "bad argument count");
      }
      for (int i = 0; i < nargs; ++i) {
        int32_t len = 0;
        std::string_view v;
        (void)r.i32(len);
        if (len < -1 || (len >= 0 && !r.bytes(size_t(len), v))) {
          return malformed(type, "bad argument length");
        }
      }
      if (!r.i16(res) || !valid_format(res)) return malformed(type, "bad result format");
      return done(FunctionCall{});
    }
    default:
      break;
  }
  return fail<FrontendMessage>("unknown frontend message type " + type_name(type));
}

}  // namespace

std::optional<std::string_view> StartupMessage::get(std::string_view name) const {
  // PostgreSQL lets a later duplicate override an earlier one.
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    if (it->first == name) return it->second;
  }
  return std::nullopt;
}

Decoded<StartupPacket> decode_startup(Bytes in, size_t max_len) {
  if (in.size() < 4) return need_more<StartupPacket>();
  const uint32_t len = be32(in.data());
  if (len < 8 || len > max_len || len > uint32_t(std::numeric_limits<int32_t>::max())) {
    return fail<StartupPacket>("invalid length of startup packet: " + num(len));
  }
  if (in.size() < 8) return need_more<StartupPacket>();
  const uint32_t code = be32(in.data() + 4);
  const uint32_t major = code >> 16, minor = code & 0xffff;

  auto fixed = [&](uint32_t want, const char* what) -> std::optional<StartupResult> {
    if (len != want) {
      return fail<StartupPacket>(std::string("invalid length ") + num(len) + " for " + what +
                                 " (must be " + num(want) + ")");
    }
    if (in.size() < want) return need_more<StartupPacket>();
    return std::nullopt;
  };

  StartupResult d;
  d.status = DecodeStatus::ok;
  d.consumed = len;
  switch (code) {
    case kSslRequestCode:
      if (auto r = fixed(8, "SSLRequest")) return *r;
      d.message = SslRequest{};
      return d;
    case kGssEncRequestCode:
      if (auto r = fixed(8, "GSSENCRequest")) return *r;
      d.message = GssEncRequest{};
      return d;
    case kCancelRequestCode: {
      if (auto r = fixed(16, "CancelRequest")) return *r;
      CancelRequest c;
      c.pid = static_cast<int32_t>(be32(in.data() + 8));
      c.secret = static_cast<int32_t>(be32(in.data() + 12));
      d.message = c;
      return d;
    }
    default:
      break;
  }
  if (major == 1234) {
    return fail<StartupPacket>("unsupported startup request code 1234." + num(minor) + " (" +
                               num(code) + ")");
  }
  if (major != 3) {
    return fail<StartupPacket>("unsupported frontend protocol " + num(major) + "." + num(minor) +
                               ": server supports 3.0");
  }
  if (len < 9) {
    return fail<StartupPacket>("invalid length of startup packet: " + num(len) +
                               " (no room for the terminator)");
  }
  if (in.size() < len) return need_more<StartupPacket>();
  return parse_startup_body(code, in.data() + 8, len - 8, len);
}

std::optional<uint32_t> peek_length(Bytes in) {
  if (in.size() < 5) return std::nullopt;
  return be32(in.data() + 1);
}

Decoded<FrontendMessage> decode_frontend(Bytes in, size_t max_len) {
  if (in.empty()) return need_more<FrontendMessage>();
  const uint8_t type = in[0];
  const LengthRule rule = kLengthRules[type];
  if (rule.min == 0)
    return fail<FrontendMessage>("unknown frontend message type " + type_name(type));
  if (in.size() < 5) return need_more<FrontendMessage>();
  const uint32_t len = be32(in.data() + 1);
  if (len < 4 || len > uint32_t(std::numeric_limits<int32_t>::max())) {
    return fail<FrontendMessage>("invalid length " + num(len) + " of message " + type_name(type));
  }
  if (len > max_len) {
    return fail<FrontendMessage>("message of " + num(len) + " bytes exceeds max_message_size " +
                                 num(max_len));
  }
  if (rule.exact && len != rule.min) {
    return fail<FrontendMessage>("invalid length " + num(len) + " of message " + type_name(type) +
                                 " (must be " + num(rule.min) + ")");
  }
  if (len < rule.min) {
    return fail<FrontendMessage>("invalid length " + num(len) + " of message " + type_name(type) +
                                 " (at least " + num(rule.min) + ")");
  }
  const size_t total = size_t(len) + 1;
  if (in.size() < total) return need_more<FrontendMessage>();
  return parse_frontend_body(type, Reader(in.data() + 5, len - 4), total);
}

std::optional<SaslInitialResponse> parse_sasl_initial(std::string_view body) {
  Reader r(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  SaslInitialResponse s;
  int32_t len = 0;
  if (!r.cstr(s.mechanism) || !r.i32(len)) return std::nullopt;
  if (len == -1) {
    if (!r.at_end()) return std::nullopt;
    return s;
  }
  std::string_view data;
  if (len < 0 || !r.bytes(size_t(len), data) || !r.at_end()) return std::nullopt;
  s.data = data;
  return s;
}

// ---------------------------------------------------------------------------
// Encoder

void Encoder::begin(char type) {
  msg_start_ = out_.size();
  out_.push_back(type);
  out_.append(4, '\0');  // length, patched by end()
}

void Encoder::end() {
  const size_t len = out_.size() - msg_start_ - 1;
  const auto v = static_cast<uint32_t>(len);
  char* p = out_.data() + msg_start_ + 1;
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}

void Encoder::put_u8(uint8_t v) {
  out_.push_back(static_cast<char>(v));
}

void Encoder::put_i16(int16_t v) {
  const auto u = static_cast<uint16_t>(v);
  const char b[2] = {static_cast<char>(u >> 8), static_cast<char>(u)};
  out_.append(b, 2);
}

void Encoder::put_i32(int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  const char b[4] = {static_cast<char>(u >> 24), static_cast<char>(u >> 16),
                     static_cast<char>(u >> 8), static_cast<char>(u)};
  out_.append(b, 4);
}

void Encoder::put_cstr(std::string_view s) {
  // A C string cannot hold a NUL: cut there rather than break the framing.
  const size_t nul = s.find('\0');
  if (nul != std::string_view::npos) s = s.substr(0, nul);
  out_.append(s);
  out_.push_back('\0');
}

void Encoder::put_bytes(std::string_view s) {
  out_.append(s);
}

void Encoder::ssl_response(char answer) {
  out_.push_back(answer);
}

void Encoder::auth_ok() {
  begin('R');
  put_i32(0);
  end();
}

void Encoder::auth_cleartext() {
  begin('R');
  put_i32(3);
  end();
}

void Encoder::auth_sasl(std::span<const std::string_view> mechanisms) {
  begin('R');
  put_i32(10);
  for (auto m : mechanisms)
    put_cstr(m);
  put_u8(0);
  end();
}

void Encoder::auth_sasl_continue(std::string_view data) {
  begin('R');
  put_i32(11);
  put_bytes(data);
  end();
}

void Encoder::auth_sasl_final(std::string_view data) {
  begin('R');
  put_i32(12);
  put_bytes(data);
  end();
}

void Encoder::parameter_status(std::string_view name, std::string_view value) {
  begin('S');
  put_cstr(name);
  put_cstr(value);
  end();
}

void Encoder::backend_key_data(int32_t pid, int32_t secret) {
  begin('K');
  put_i32(pid);
  put_i32(secret);
  end();
}

void Encoder::negotiate_protocol_version(uint32_t newest_minor,
                                         std::span<const std::string_view> unrecognized) {
  begin('v');
  put_i32(static_cast<int32_t>(newest_minor));
  put_i32(static_cast<int32_t>(unrecognized.size()));
  for (auto o : unrecognized)
    put_cstr(o);
  end();
}

void Encoder::ready_for_query(char status) {
  begin('Z');
  put_u8(static_cast<uint8_t>(status));
  end();
}

void Encoder::row_description(std::span<const FieldDescription> fields) {
  begin('T');
  put_i16(static_cast<int16_t>(fields.size()));
  for (const auto& f : fields) {
    put_cstr(f.name);
    put_i32(static_cast<int32_t>(f.table_oid));
    put_i16(f.column);
    put_i32(static_cast<int32_t>(f.type_oid));
    put_i16(f.type_size);
    put_i32(f.type_modifier);
    put_i16(f.format);
  }
  end();
}

void Encoder::parameter_description(std::span<const uint32_t> oids) {
  begin('t');
  put_i16(static_cast<int16_t>(oids.size()));
  for (auto o : oids)
    put_i32(static_cast<int32_t>(o));
  end();
}

void Encoder::no_data() {
  begin('n');
  end();
}
void Encoder::parse_complete() {
  begin('1');
  end();
}
void Encoder::bind_complete() {
  begin('2');
  end();
}
void Encoder::close_complete() {
  begin('3');
  end();
}
void Encoder::portal_suspended() {
  begin('s');
  end();
}
void Encoder::empty_query_response() {
  begin('I');
  end();
}

void Encoder::command_complete(std::string_view tag) {
  begin('C');
  put_cstr(tag);
  end();
}

namespace {
/// Error and notice fields: code byte + C string each, then a NUL.
void put_error_fields(std::string& out, const ErrorFields& e) {
  auto field = [&](char code, std::string_view v) {
    if (v.empty()) return;
    out.push_back(code);
    const size_t nul = v.find('\0');
    out.append(nul == std::string_view::npos ? v : v.substr(0, nul));
    out.push_back('\0');
  };
  field('S', e.severity);
  field('V', e.severity);
  field('C', e.sqlstate);
  field('M', e.message);
  field('D', e.detail);
  field('H', e.hint);
  if (e.position > 0) {
    char buf[16];
    auto r = std::to_chars(buf, buf + sizeof buf, e.position);
    field('P', std::string_view(buf, size_t(r.ptr - buf)));
  }
  out.append(e.more);
  out.push_back('\0');
}
}  // namespace

void Encoder::error_response(const ErrorFields& e) {
  begin('E');
  put_error_fields(out_, e);
  end();
}

void Encoder::notice_response(const ErrorFields& e) {
  begin('N');
  put_error_fields(out_, e);
  end();
}

void Encoder::notification_response(int32_t pid, std::string_view channel,
                                    std::string_view payload) {
  begin('A');
  put_i32(pid);
  put_cstr(channel);
  put_cstr(payload);
  end();
}

void Encoder::copy_in_response(int8_t format, std::span<const int16_t> column_formats) {
  begin('G');
  put_u8(static_cast<uint8_t>(format));
  put_i16(static_cast<int16_t>(column_formats.size()));
  for (auto f : column_formats)
    put_i16(f);
  end();
}

void Encoder::copy_out_response(int8_t format, std::span<const int16_t> column_formats) {
  begin('H');
  put_u8(static_cast<uint8_t>(format));
  put_i16(static_cast<int16_t>(column_formats.size()));
  for (auto f : column_formats)
    put_i16(f);
  end();
}

void Encoder::copy_data(std::string_view data) {
  begin('d');
  put_bytes(data);
  end();
}

void Encoder::copy_done() {
  begin('c');
  end();
}

void Encoder::begin_data_row(int16_t fields) {
  begin('D');
  put_i16(fields);
}

void Encoder::null_field() {
  put_i32(-1);
}

void Encoder::field(std::string_view bytes) {
  put_i32(static_cast<int32_t>(bytes.size()));
  put_bytes(bytes);
}

void Encoder::begin_field() {
  field_start_ = out_.size();
  out_.append(4, '\0');  // length, patched by end_field()
}

void Encoder::end_field() {
  const auto v = static_cast<uint32_t>(out_.size() - field_start_ - 4);
  char* p = out_.data() + field_start_;
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}

void Encoder::end_data_row() {
  end();
}

}  // namespace wirepool::pg
