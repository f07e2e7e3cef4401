// TDS packets, PRELOGIN, LOGIN7, client requests and the token stream.
#include "protocol/tds/codec.hpp"

#include <openssl/crypto.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "protocol/tds/wire.hpp"

namespace wirepool::tds {

namespace {

using wire::Reader;

template <class M>
Decoded<M> fail(std::string message) {
  Decoded<M> d;
  d.status = DecodeStatus::error;
  d.error = std::move(message);
  return d;
}
/// A failure of an inner decode, with `prefix` before its message; keeps over_limit.
template <class M, class N>
Decoded<M> fail_from(std::string prefix, const Decoded<N>& inner) {
  Decoded<M> d = fail<M>(std::move(prefix) + inner.error);
  d.over_limit = inner.over_limit;
  return d;
}
/// need_more for an inner value at `offset` that needs `needed` bytes of its own (0: unknown).
template <class M>
Decoded<M> need_at(size_t offset, size_t needed) {
  Decoded<M> d;
  d.needed = needed == 0 ? 0 : offset + needed;
  return d;
}
template <class M>
Decoded<M> done_ok(M m, size_t consumed) {
  Decoded<M> d;
  d.status = DecodeStatus::ok;
  d.message = std::move(m);
  d.consumed = consumed;
  return d;
}

std::string hex2(uint8_t b) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  return {kHex[b >> 4], kHex[b & 15]};
}

/// Reads `chars` UCS-2 code units as UTF-8; false on a short read or bad text.
bool read_ucs2(Reader& r, size_t chars, std::string& out, std::string* error) {
  Bytes b = r.take(chars * 2);
  if (!r.ok()) return false;
  return ucs2_to_utf8(b, out, error);
}

/// UTF-8 -> UCS-2 cut to at most `max_units` code units (never inside a pair).
std::string ucs2_capped(std::string_view utf8, size_t max_units) {
  std::string u;
  if (!utf8_to_ucs2(utf8, u)) {
    u.clear();
    // Invalid UTF-8 from a backend message: keep the ASCII bytes only.
    for (char c : utf8) {
      if (static_cast<uint8_t>(c) < 0x80) wire::put_u16(u, static_cast<uint16_t>(c));
    }
  }
  if (u.size() > max_units * 2) {
    size_t n = max_units * 2;
    const uint16_t last = static_cast<uint16_t>(static_cast<uint8_t>(u[n - 2]) |
                                                (static_cast<uint8_t>(u[n - 1]) << 8));
    if (last >= 0xD800 && last <= 0xDBFF) n -= 2;  // do not split a surrogate pair
    u.resize(n);
  }
  return u;
}

/// B_VARCHAR: a character count byte and UCS-2.
void put_b_varchar(std::string& out, std::string_view utf8) {
  const std::string u = ucs2_capped(utf8, 255);
  wire::put_u8(out, static_cast<uint8_t>(u.size() / 2));
  out += u;
}
/// US_VARCHAR: a 2-byte character count and UCS-2.
void put_us_varchar(std::string& out, std::string_view utf8, size_t max_units) {
  const std::string u = ucs2_capped(utf8, max_units);
  wire::put_u16(out, static_cast<uint16_t>(u.size() / 2));
  out += u;
}

bool read_b_varchar(Reader& r, std::string& out, std::string* error) {
  const uint8_t n = r.u8();
  return r.ok() && read_ucs2(r, n, out, error);
}
bool read_us_varchar(Reader& r, std::string& out, std::string* error) {
  const uint16_t n = r.u16();
  return r.ok() && read_ucs2(r, n, out, error);
}

/// Starts a token with a 2-byte length; returns the length's position.
size_t begin_len_token(std::string& out, uint8_t token) {
  wire::put_u8(out, token);
  const size_t at = out.size();
  wire::put_u16(out, 0);
  return at;
}
void end_len_token(std::string& out, size_t at) {
  const size_t n = out.size() - at - 2;
  out[at] = static_cast<char>(n & 0xFF);
  out[at + 1] = static_cast<char>((n >> 8) & 0xFF);
}

}  // namespace

// ---------------------------------------------------------------------------
// Packets

std::string packet_type_name(uint8_t type) {
  switch (type) {
    case 1:
      return "SQL batch";
    case 2:
      return "pre-TDS7 login";
    case 3:
      return "RPC";
    case 4:
      return "tabular result";
    case 6:
      return "attention";
    case 7:
      return "bulk load";
    case 8:
      return "federated authentication token";
    case 14:
      return "transaction manager request";
    case 16:
      return "LOGIN7";
    case 17:
      return "SSPI";
    case 18:
      return "PRELOGIN";
    default:
      return "type " + std::to_string(type);
  }
}

bool packet_type_supported(uint8_t type) {
  switch (static_cast<PacketType>(type)) {
    case PacketType::sql_batch:
    case PacketType::rpc:
    case PacketType::attention:
    case PacketType::transaction_manager:
    case PacketType::login7:
    case PacketType::prelogin:
      return true;
    default:
      return false;
  }
}

std::optional<PacketHeader> peek_header(Bytes in) {
  if (in.size() < kHeaderSize) return std::nullopt;
  PacketHeader h;
  h.type = in[0];
  h.status = in[1];
  h.length = static_cast<uint16_t>((in[2] << 8) | in[3]);
  h.spid = static_cast<uint16_t>((in[4] << 8) | in[5]);
  h.packet_id = in[6];
  h.window = in[7];
  return h;
}

bool looks_like_tls(Bytes in) {
  return in.size() >= 2 && in[0] == 0x16 && in[1] == 0x03;
}

void MessageAssembler::set_packet_size(uint32_t size) {
  packet_size_ = std::clamp(size, kMinPacketSize, kMaxPacketSize);
}

namespace {
/// Wipes s's unused capacity beyond its first `keep` bytes (resize writes it
/// first, so the whole block is addressable).
void wipe_beyond(std::string& s, size_t keep) {
  s.resize(s.capacity());
  OPENSSL_cleanse(s.data() + keep, s.size() - keep);
  s.resize(keep);
}
/// Appends, moving to a larger block by hand so the old one is wiped before it is freed.
void append_wiped(std::string& s, std::string_view more) {
  if (s.capacity() - s.size() < more.size()) {
    std::string bigger;
    bigger.reserve(std::max(s.size() + more.size(), 2 * s.capacity()));
    bigger = s;
    wipe_beyond(s, 0);
    s.swap(bigger);
  }
  s.append(more);
}
}  // namespace

MessageAssembler::~MessageAssembler() {
  if (!wipe_) return;
  wipe_beyond(buf_, 0);
  wipe_beyond(partial_.payload, 0);
}

void MessageAssembler::set_wipe(bool on) {
  if (wipe_ && !on) {
    // What LOGIN7 left behind in the blocks kept: consumed bytes and the tails.
    if (pos_ > 0) buf_.erase(0, pos_);
    pos_ = 0;
    wipe_beyond(buf_, buf_.size());
    wipe_beyond(partial_.payload, partial_.payload.size());
  }
  wipe_ = on;
}

void MessageAssembler::feed(Bytes in) {
  if (!error_.empty()) return;
  if (pos_ > 0 && (pos_ == buf_.size() || pos_ >= 65536)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  const std::string_view more(reinterpret_cast<const char*>(in.data()), in.size());
  if (wipe_) {
    append_wiped(buf_, more);
  } else {
    buf_.append(more);
  }
}

void MessageAssembler::shrink() {
  if (pos_ > 0) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  if (wipe_) wipe_beyond(buf_, buf_.size());
  buf_.shrink_to_fit();
  if (!in_message_) {
    if (wipe_) wipe_beyond(partial_.payload, 0);
    partial_.payload.clear();
    partial_.payload.shrink_to_fit();
  }
}

DecodeStatus MessageAssembler::next(Message& out, std::string& error) {
  auto fail_with = [&](std::string e) {
    error_ = std::move(e);
    error = error_;
    return DecodeStatus::error;
  };
  if (!error_.empty()) {
    error = error_;
    return DecodeStatus::error;
  }
  for (;;) {
    const Bytes avail = as_bytes(std::string_view(buf_).substr(pos_));
    const auto h = peek_header(avail);
    if (!h) return DecodeStatus::need_more;
    if (limits_.from_server ? h->type != static_cast<uint8_t>(PacketType::tabular_result) &&
                                  h->type != static_cast<uint8_t>(PacketType::prelogin)
                            : !packet_type_supported(h->type)) {
      return fail_with("unsupported TDS packet type " + std::to_string(h->type) + " (" +
                       packet_type_name(h->type) + ")");
    }
    if (h->length < kHeaderSize)
      return fail_with("TDS packet length " + std::to_string(h->length) + " is below 8");
    if (h->length > packet_size_)
      return fail_with("TDS packet of " + std::to_string(h->length) +
                       " bytes exceeds the packet size " + std::to_string(packet_size_));
    if (in_message_ && h->type != partial_.type)
      return fail_with("TDS packet of type " + std::to_string(h->type) +
                       " inside a message of type " + std::to_string(partial_.type));
    const size_t body = h->length - kHeaderSize;
    if ((in_message_ ? partial_.payload.size() : 0) + body > limits_.max_message)
      return fail_with("TDS message exceeds the limit of " + std::to_string(limits_.max_message) +
                       " bytes");
    if (avail.size() < h->length) return DecodeStatus::need_more;
    if (!in_message_) {
      partial_.type = h->type;
      partial_.status = h->status;
      partial_.payload.clear();
      in_message_ = true;
    }
    const std::string_view packet_body = std::string_view(buf_).substr(pos_ + kHeaderSize, body);
    if (wipe_) {
      append_wiped(partial_.payload, packet_body);
    } else {
      partial_.payload.append(packet_body);
    }
    pos_ += h->length;
    if (pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    }
    if ((h->status & status::kEom) == 0) continue;
    in_message_ = false;
    if ((h->status & status::kIgnore) != 0) {
      partial_.payload.clear();  // the client cancelled this message
      continue;
    }
    out = std::move(partial_);
    partial_ = Message{};
    return DecodeStatus::ok;
  }
}

void PacketWriter::set_packet_size(uint32_t size) {
  packet_size_ = std::clamp(size, kMinPacketSize, kMaxPacketSize);
}

void PacketWriter::write(std::string& out, PacketType type, std::string_view payload,
                         uint8_t first_status) const {
  const size_t max_body = packet_size_ - kHeaderSize;
  size_t off = 0;
  uint8_t id = 1;
  bool first = true;
  do {
    const size_t n = std::min(max_body, payload.size() - off);
    const bool last = off + n == payload.size();
    uint8_t st = last ? status::kEom : 0;
    if (first) st |= first_status;
    wire::put_u8(out, static_cast<uint8_t>(type));
    wire::put_u8(out, st);
    wire::put_u16be(out, static_cast<uint16_t>(n + kHeaderSize));
    wire::put_u16be(out, spid_);
    wire::put_u8(out, id++);
    wire::put_u8(out, 0);
    out.append(payload.substr(off, n));
    off += n;
    first = false;
  } while (off < payload.size());
}

// ---------------------------------------------------------------------------
// PRELOGIN

Decoded<Prelogin> decode_prelogin(Bytes payload) {
  Reader r(payload);
  Prelogin p;
  bool first = true;
  bool seen[8] = {};
  struct Opt {
    uint8_t token;
    uint16_t off, len;
  };
  std::vector<Opt> opts;
  for (;;) {
    const uint8_t token = r.u8();
    if (!r.ok()) return fail<Prelogin>("PRELOGIN option table without its 0xFF terminator");
    if (token == 0xFF) break;
    const uint16_t off = r.u16be();
    const uint16_t len = r.u16be();
    if (!r.ok()) return fail<Prelogin>("PRELOGIN option table cut short");
    if (first && token != 0) return fail<Prelogin>("PRELOGIN must start with VERSION");
    first = false;
    if (size_t{off} + len > payload.size())
      return fail<Prelogin>("PRELOGIN option " + std::to_string(token) + " points outside the " +
                            std::to_string(payload.size()) + "-byte payload");
    if (opts.size() >= 64) return fail<Prelogin>("PRELOGIN with too many options");
    opts.push_back({token, off, len});
  }
  if (first) return fail<Prelogin>("PRELOGIN without VERSION");
  const size_t table_end = r.pos();
  for (const Opt& o : opts) {
    if (o.len > 0 && o.off < table_end)
      return fail<Prelogin>("PRELOGIN option data overlaps the option table");
    const Bytes d = payload.subspan(o.off, o.len);
    const std::string name = "PRELOGIN option " + std::to_string(o.token);
    if (o.token < 8) {
      if (seen[o.token]) return fail<Prelogin>(name + " appears twice");
      seen[o.token] = true;
    }
    auto want = [&](size_t n) { return d.size() == n; };
    switch (o.token) {
      case 0:
        if (!want(6)) return fail<Prelogin>("PRELOGIN VERSION must be 6 bytes");
        p.version = PreloginVersion{d[0], d[1], static_cast<uint16_t>((d[2] << 8) | d[3]),
                                    static_cast<uint16_t>((d[4] << 8) | d[5])};
        break;
      case 1:
        if (!want(1)) return fail<Prelogin>("PRELOGIN ENCRYPTION must be 1 byte");
        p.encryption = d[0];
        break;
      case 2: {
        std::string s(wire::as_view(d));
        if (!s.empty() && s.back() == '\0') s.pop_back();
        p.instance = std::move(s);
        break;
      }
      case 3:
        if (!want(0) && !want(4)) return fail<Prelogin>("PRELOGIN THREADID must be 0 or 4 bytes");
        p.thread_id = std::string(wire::as_view(d));
        break;
      case 4:
        if (!want(1)) return fail<Prelogin>("PRELOGIN MARS must be 1 byte");
        p.mars = d[0];
        break;
      case 5:
        if (!want(36)) return fail<Prelogin>("PRELOGIN TRACEID must be 36 bytes");
        p.trace_id = std::string(wire::as_view(d));
        break;
      case 6:
        if (!want(1)) return fail<Prelogin>("PRELOGIN FEDAUTHREQUIRED must be 1 byte");
        p.fed_auth_required = d[0];
        break;
      case 7:
        if (!want(32)) return fail<Prelogin>("PRELOGIN NONCEOPT must be 32 bytes");
        p.nonce = std::string(wire::as_view(d));
        break;
      default:
        p.unknown.emplace_back(o.token, std::string(wire::as_view(d)));
        break;
    }
  }
  return done_ok(std::move(p), payload.size());
}

void encode_prelogin(std::string& out, const Prelogin& p) {
  std::vector<std::pair<uint8_t, std::string>> opts;
  if (p.version) {
    std::string v;
    wire::put_u8(v, p.version->major);
    wire::put_u8(v, p.version->minor);
    wire::put_u16be(v, p.version->build);
    wire::put_u16be(v, p.version->sub_build);
    opts.emplace_back(0, v);
  }
  if (p.encryption) opts.emplace_back(1, std::string(1, static_cast<char>(*p.encryption)));
  if (p.instance) opts.emplace_back(2, *p.instance + std::string(1, '\0'));
  if (p.thread_id) opts.emplace_back(3, *p.thread_id);
  if (p.mars) opts.emplace_back(4, std::string(1, static_cast<char>(*p.mars)));
  if (p.trace_id) opts.emplace_back(5, *p.trace_id);
  if (p.fed_auth_required)
    opts.emplace_back(6, std::string(1, static_cast<char>(*p.fed_auth_required)));
  if (p.nonce) opts.emplace_back(7, *p.nonce);
  for (const auto& u : p.unknown)
    opts.push_back(u);
  size_t off = opts.size() * 5 + 1;
  for (const auto& [token, data] : opts) {
    wire::put_u8(out, token);
    wire::put_u16be(out, static_cast<uint16_t>(off));
    wire::put_u16be(out, static_cast<uint16_t>(data.size()));
    off += data.size();
  }
  wire::put_u8(out, 0xFF);
  for (const auto& o : opts)
    out += o.second;
}

Prelogin prelogin_response(const Prelogin& client, uint8_t encryption, PreloginVersion version) {
  Prelogin p;
  p.version = version;
  p.encryption = encryption;
  p.instance = std::string();  // a single NUL: "the instance matches"
  p.thread_id = std::string();
  p.mars = 0;
  if (client.fed_auth_required) p.fed_auth_required = 0;
  return p;
}

PreloginVersion wirepool_prelogin_version() {
  return PreloginVersion{16, 0, 1, 0};
}

// ---------------------------------------------------------------------------
// LOGIN7

std::string feature_name(uint8_t id) {
  switch (id) {
    case feature::kSessionRecovery:
      return "SESSIONRECOVERY";
    case feature::kFedAuth:
      return "FEDAUTH";
    case feature::kColumnEncryption:
      return "COLUMNENCRYPTION";
    case feature::kGlobalTransactions:
      return "GLOBALTRANSACTIONS";
    case feature::kAzureSqlSupport:
      return "AZURESQLSUPPORT";
    case feature::kDataClassification:
      return "DATACLASSIFICATION";
    case feature::kUtf8Support:
      return "UTF8_SUPPORT";
    case feature::kAzureSqlDnsCaching:
      return "AZURESQLDNSCACHING";
    case feature::kJsonSupport:
      return "JSONSUPPORT";
    case feature::kVectorSupport:
      return "VECTORSUPPORT";
    default:
      return "0x" + hex2(id);
  }
}

const FeatureExt* Login7::find_feature(uint8_t id) const {
  for (const auto& f : features) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

std::vector<FeatureExt> feature_acks(const Login7& login, bool utf8_supported) {
  std::vector<FeatureExt> acks;
  if (utf8_supported && login.find_feature(feature::kUtf8Support) != nullptr)
    acks.push_back({feature::kUtf8Support, std::string(1, '\x01')});
  return acks;
}

std::string obfuscate_password(std::string_view ucs2) {
  std::string s(ucs2);
  for (char& c : s) {
    const auto b = static_cast<uint8_t>(c);
    c = static_cast<char>((((b & 0x0F) << 4) | (b >> 4)) ^ 0xA5);
  }
  return s;
}

std::string deobfuscate_password(std::string_view wire_bytes) {
  std::string s(wire_bytes);
  for (char& c : s) {
    const auto b = static_cast<uint8_t>(static_cast<uint8_t>(c) ^ 0xA5);
    c = static_cast<char>(((b & 0x0F) << 4) | (b >> 4));
  }
  return s;
}

namespace {
constexpr size_t kLoginFixed = 94;
constexpr size_t kMaxName = 128;
constexpr size_t kMaxPath = 260;
constexpr size_t kMaxSspi = 8000;
}  // namespace

Decoded<Login7> decode_login7(Bytes payload) {
  if (payload.size() < kLoginFixed)
    return fail<Login7>("LOGIN7 of " + std::to_string(payload.size()) +
                        " bytes is shorter than its 94-byte fixed part");
  Reader r(payload);
  Login7 l;
  const uint32_t length = r.u32();
  if (length != payload.size())
    return fail<Login7>("LOGIN7 length field " + std::to_string(length) +
                        " does not match the message's " + std::to_string(payload.size()) +
                        " bytes");
  l.tds_version = r.u32();
  l.packet_size = r.u32();
  l.client_prog_ver = r.u32();
  l.client_pid = r.u32();
  l.connection_id = r.u32();
  l.option_flags1 = r.u8();
  l.option_flags2 = r.u8();
  l.type_flags = r.u8();
  l.option_flags3 = r.u8();
  l.client_time_zone = static_cast<int32_t>(r.u32());
  l.client_lcid = r.u32();
  struct Field {
    uint16_t ib = 0, cch = 0;
  };
  auto field = [&] { return Field{r.u16(), r.u16()}; };
  const Field host = field(), user = field(), password = field(), app = field(), server = field(),
              extension = field(), interface = field(), language = field(), database = field();
  Bytes client_id = r.take(6);
  const Field sspi = field(), attach = field(), change = field();
  const uint32_t sspi_long = r.u32();
  if (!r.ok()) return fail<Login7>("LOGIN7 fixed part cut short");
  std::memcpy(l.client_id.data(), client_id.data(), 6);

  std::string error;
  auto text = [&](const Field& f, size_t max_chars, const char* what, std::string& out,
                  bool password_field) -> bool {
    if (f.cch == 0) return true;
    if (f.cch > max_chars) {
      error = std::string("LOGIN7 ") + what + " is longer than " + std::to_string(max_chars) +
              " characters";
      return false;
    }
    const size_t bytes = size_t{f.cch} * 2;
    if (f.ib < kLoginFixed || size_t{f.ib} + bytes > payload.size()) {
      error = std::string("LOGIN7 ") + what + " points outside the message";
      return false;
    }
    std::string raw(wire::as_view(payload.subspan(f.ib, bytes)));
    if (password_field) {
      // Every copy of the password is wiped before it is freed, and `out` is
      // sized up front (up to 3 UTF-8 bytes per UCS-2 unit) so that it never
      // reallocates and leaves a partial copy behind.
      std::string plain = deobfuscate_password(raw);
      OPENSSL_cleanse(raw.data(), raw.size());
      raw.swap(plain);
      out.reserve(f.cch * size_t{3});
    }
    std::string e;
    const bool ok = ucs2_to_utf8(as_bytes(raw), out, &e);
    if (password_field) OPENSSL_cleanse(raw.data(), raw.size());
    if (!ok) {
      error = std::string("LOGIN7 ") + what + ": " + e;
      return false;
    }
    return true;
  };
  if (!text(host, kMaxName, "host name", l.host_name, false) ||
      !text(user, kMaxName, "user name", l.user_name, false) ||
      !text(password, kMaxName, "password", l.password, true) ||
      !text(app, kMaxName, "application name", l.app_name, false) ||
      !text(server, kMaxName, "server name", l.server_name, false) ||
      !text(interface, kMaxName, "client interface name", l.client_interface, false) ||
      !text(language, kMaxName, "language", l.language, false) ||
      !text(database, kMaxName, "database", l.database, false) ||
      !text(attach, kMaxPath, "attach DB file", l.attach_db_file, false) ||
      !text(change, kMaxName, "change password", l.change_password, true))
    return fail<Login7>(std::move(error));

  // SSPI: a byte count; 0xFFFF means the long count at the end of the fixed part.
  const size_t sspi_len = sspi.cch == 0xFFFF ? sspi_long : sspi.cch;
  if (sspi_len > 0) {
    if (sspi_len > kMaxSspi) return fail<Login7>("LOGIN7 SSPI data is too long");
    if (sspi.ib < kLoginFixed || sspi.ib + sspi_len > payload.size())
      return fail<Login7>("LOGIN7 SSPI data points outside the message");
    l.sspi = std::string(wire::as_view(payload.subspan(sspi.ib, sspi_len)));
  }

  // FeatureExt: the extension field holds a 4-byte offset to the feature list.
  if ((l.option_flags3 & kOptionFlags3Extension) != 0 && extension.cch > 0) {
    if (extension.cch != 4 || extension.ib < kLoginFixed ||
        size_t{extension.ib} + 4 > payload.size())
      return fail<Login7>("LOGIN7 extension field points outside the message");
    Reader pr(payload.subspan(extension.ib, 4));
    const uint32_t off = pr.u32();
    if (off < kLoginFixed || off >= payload.size())
      return fail<Login7>("LOGIN7 FeatureExt offset points outside the message");
    Reader fr(payload.subspan(off));
    for (;;) {
      const uint8_t id = fr.u8();
      if (!fr.ok()) return fail<Login7>("LOGIN7 FeatureExt list without its 0xFF terminator");
      if (id == feature::kTerminator) break;
      const uint32_t len = fr.u32();
      if (!fr.ok() || len > fr.remaining())
        return fail<Login7>("LOGIN7 feature " + feature_name(id) + " points outside the message");
      if (l.features.size() >= 64) return fail<Login7>("LOGIN7 with too many features");
      l.features.push_back({id, std::string(wire::as_view(fr.take(len)))});
    }
  }
  return done_ok(std::move(l), payload.size());
}

void encode_login7(std::string& out, const Login7& l) {
  std::string fixed;
  std::string data;
  auto offset = [&] { return static_cast<uint16_t>(kLoginFixed + data.size()); };
  struct Field {
    uint16_t ib, cch;
  };
  // Sized up front: growing would free buffers holding the (obfuscated) password.
  data.reserve(2 * (l.host_name.size() + l.user_name.size() + l.password.size() +
                    l.app_name.size() + l.server_name.size() + l.client_interface.size() +
                    l.language.size() + l.database.size() + l.attach_db_file.size() +
                    l.change_password.size() + l.sspi.size()) +
               1024);
  for (const auto& f : l.features)
    data.reserve(data.capacity() + f.data.size() + 5);
  auto add_text = [&](std::string_view utf8, bool password) {
    std::string u;
    if (password) u.reserve(utf8.size() * 2);
    if (!utf8_to_ucs2(utf8, u)) u.clear();
    if (password) {
      std::string hidden = obfuscate_password(u);
      OPENSSL_cleanse(u.data(), u.size());
      u.swap(hidden);
    }
    const Field f{offset(), static_cast<uint16_t>(u.size() / 2)};
    data += u;
    if (password) OPENSSL_cleanse(u.data(), u.size());
    return f;
  };
  const bool has_features = !l.features.empty();
  const Field host = add_text(l.host_name, false);
  const Field user = add_text(l.user_name, false);
  const Field password = add_text(l.password, true);
  const Field app = add_text(l.app_name, false);
  const Field server = add_text(l.server_name, false);
  Field extension{offset(), 0};
  size_t ext_ptr_at = 0;
  if (has_features) {
    extension.cch = 4;
    ext_ptr_at = data.size();
    wire::put_u32(data, 0);  // patched below
  }
  const Field interface = add_text(l.client_interface, false);
  const Field language = add_text(l.language, false);
  const Field database = add_text(l.database, false);
  // SSPI of 64 KiB or more: 0xFFFF here and the real length in cbSSPILong.
  const bool sspi_long = l.sspi.size() >= 0xFFFF;
  const Field sspi{offset(), static_cast<uint16_t>(sspi_long ? 0xFFFF : l.sspi.size())};
  data += l.sspi;
  const Field attach = add_text(l.attach_db_file, false);
  const Field change = add_text(l.change_password, true);
  if (has_features) {
    const uint32_t off = static_cast<uint32_t>(kLoginFixed + data.size());
    for (int i = 0; i < 4; ++i)
      data[ext_ptr_at + i] = static_cast<char>((off >> (8 * i)) & 0xFF);
    for (const auto& f : l.features) {
      wire::put_u8(data, f.id);
      wire::put_u32(data, static_cast<uint32_t>(f.data.size()));
      data += f.data;
    }
    wire::put_u8(data, feature::kTerminator);
  }
  wire::put_u32(fixed, static_cast<uint32_t>(kLoginFixed + data.size()));
  wire::put_u32(fixed, l.tds_version);
  wire::put_u32(fixed, l.packet_size);
  wire::put_u32(fixed, l.client_prog_ver);
  wire::put_u32(fixed, l.client_pid);
  wire::put_u32(fixed, l.connection_id);
  wire::put_u8(fixed, l.option_flags1);
  wire::put_u8(fixed, l.option_flags2);
  wire::put_u8(fixed, l.type_flags);
  wire::put_u8(fixed, has_features ? (l.option_flags3 | kOptionFlags3Extension)
                                   : (l.option_flags3 & ~kOptionFlags3Extension));
  wire::put_u32(fixed, static_cast<uint32_t>(l.client_time_zone));
  wire::put_u32(fixed, l.client_lcid);
  for (const Field& f :
       {host, user, password, app, server, extension, interface, language, database}) {
    wire::put_u16(fixed, f.ib);
    wire::put_u16(fixed, f.cch);
  }
  fixed.append(reinterpret_cast<const char*>(l.client_id.data()), 6);
  for (const Field& f : {sspi, attach, change}) {
    wire::put_u16(fixed, f.ib);
    wire::put_u16(fixed, f.cch);
  }
  wire::put_u32(fixed, sspi_long ? static_cast<uint32_t>(l.sspi.size()) : 0);  // cbSSPILong
  out.reserve(out.size() + fixed.size() + data.size());
  out += fixed;
  out += data;
  OPENSSL_cleanse(data.data(), data.size());
}

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

// ---------------------------------------------------------------------------
// Token encoders

uint16_t current_command(std::string_view verb) {
  if (verb == "SELECT") return command::kSelect;
  if (verb == "INSERT") return command::kInsert;
  if (verb == "DELETE") return command::kDelete;
  if (verb == "UPDATE") return command::kUpdate;
  return 0;
}

void TokenEncoder::login_ack(const LoginAck& a) {
  const size_t at = begin_len_token(out_, token::kLoginAck);
  wire::put_u8(out_, a.interface);
  // TDSVersion goes out big-endian here (0x74000004 -> 74 00 00 04).
  for (int s = 24; s >= 0; s -= 8)
    wire::put_u8(out_, static_cast<uint8_t>(a.tds_version >> s));
  put_b_varchar(out_, a.prog_name);
  out_.append(reinterpret_cast<const char*>(a.prog_version.data()), 4);
  end_len_token(out_, at);
}

void TokenEncoder::env_change_text(uint8_t type, std::string_view nv, std::string_view ov) {
  const size_t at = begin_len_token(out_, token::kEnvChange);
  wire::put_u8(out_, type);
  put_b_varchar(out_, nv);
  put_b_varchar(out_, ov);
  end_len_token(out_, at);
}

namespace {
void env_bytes(std::string& out, uint8_t type, std::string_view nv, std::string_view ov) {
  const size_t at = begin_len_token(out, token::kEnvChange);
  wire::put_u8(out, type);
  wire::put_u8(out, static_cast<uint8_t>(nv.size()));
  out += nv;
  wire::put_u8(out, static_cast<uint8_t>(ov.size()));
  out += ov;
  end_len_token(out, at);
}
std::string descriptor_bytes(uint64_t d) {
  std::string s;
  wire::put_u64(s, d);
  return s;
}
std::string_view collation_view(const Collation& c) {
  return {reinterpret_cast<const char*>(c.bytes.data()), 5};
}
}  // namespace

void TokenEncoder::env_collation(const Collation& nv, const Collation& ov) {
  env_bytes(out_, env::kSqlCollation, collation_view(nv), collation_view(ov));
}
void TokenEncoder::env_begin_transaction(uint64_t d) {
  env_bytes(out_, env::kBeginTransaction, descriptor_bytes(d), {});
}
void TokenEncoder::env_commit_transaction(uint64_t d) {
  env_bytes(out_, env::kCommitTransaction, {}, descriptor_bytes(d));
}
void TokenEncoder::env_rollback_transaction(uint64_t d) {
  env_bytes(out_, env::kRollbackTransaction, {}, descriptor_bytes(d));
}
void TokenEncoder::env_reset_connection_ack() {
  env_bytes(out_, env::kResetConnectionAck, {}, {});
}

void TokenEncoder::message(const ServerMessage& m) {
  const size_t at = begin_len_token(out_, m.is_error ? token::kError : token::kInfo);
  wire::put_u32(out_, static_cast<uint32_t>(m.number));
  wire::put_u8(out_, m.state);
  wire::put_u8(out_, m.severity);
  // The token's length is 2 bytes: the message is cut to 30,000 characters.
  put_us_varchar(out_, m.message, 30000);
  put_b_varchar(out_, m.server_name);
  put_b_varchar(out_, m.proc_name);
  wire::put_u32(out_, static_cast<uint32_t>(m.line));
  end_len_token(out_, at);
}

void TokenEncoder::feature_ext_ack(std::span<const FeatureExt> acks) {
  wire::put_u8(out_, token::kFeatureExtAck);
  for (const auto& f : acks) {
    wire::put_u8(out_, f.id);
    wire::put_u32(out_, static_cast<uint32_t>(f.data.size()));
    out_ += f.data;
  }
  wire::put_u8(out_, feature::kTerminator);
}

void TokenEncoder::col_metadata(std::span<const ColumnMeta> columns) {
  wire::put_u8(out_, token::kColMetadata);
  wire::put_u16(out_, static_cast<uint16_t>(columns.size()));
  for (const auto& c : columns) {
    wire::put_u32(out_, c.user_type);
    wire::put_u16(out_, c.flags);
    encode_type_info(out_, c.type);
    const std::string u = ucs2_capped(c.name, 128);
    wire::put_u8(out_, static_cast<uint8_t>(u.size() / 2));
    out_ += u;
  }
}

void TokenEncoder::col_metadata_none() {
  wire::put_u8(out_, token::kColMetadata);
  wire::put_u16(out_, 0xFFFF);
}

namespace {
db::Error row_error(std::string message) {
  db::Error e;
  e.code = db::Errc::invalid_query;
  e.sqlstate = "08P01";
  e.message = std::move(message);
  return e;
}
}  // namespace

db::Status TokenEncoder::row(std::span<const ColumnMeta> columns,
                             std::span<const db::ValueView> values) {
  if (columns.size() != values.size())
    return row_error("row of " + std::to_string(values.size()) + " values for " +
                     std::to_string(columns.size()) + " columns");
  // NBCROW when its bitmap is smaller than the NULLs it leaves out, or when a
  // fixed-length column (no NULL form of its own) is NULL.
  size_t saved = 0;
  bool fixed_null = false;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (!values[i].is_null()) continue;
    const size_t n = null_size(columns[i].type);
    saved += n;
    fixed_null = fixed_null || (n == 0 && columns[i].type.type != type::kNull);
  }
  const size_t bitmap = (columns.size() + 7) / 8;
  if (saved <= bitmap && !fixed_null) return plain_row(columns, values);
  const size_t before = out_.size();
  wire::put_u8(out_, token::kNbcRow);
  const size_t bits_at = out_.size();
  out_.append(bitmap, '\0');
  for (size_t i = 0; i < columns.size(); ++i) {
    if (values[i].is_null()) {
      out_[bits_at + i / 8] = static_cast<char>(out_[bits_at + i / 8] | (1 << (i % 8)));
      continue;
    }
    db::Status s = encode_value(out_, columns[i].type, values[i]);
    if (!s.ok()) {
      out_.resize(before);
      return s;
    }
  }
  return {};
}

db::Status TokenEncoder::plain_row(std::span<const ColumnMeta> columns,
                                   std::span<const db::ValueView> values) {
  if (columns.size() != values.size())
    return row_error("row of " + std::to_string(values.size()) + " values for " +
                     std::to_string(columns.size()) + " columns");
  const size_t before = out_.size();
  wire::put_u8(out_, token::kRow);
  for (size_t i = 0; i < columns.size(); ++i) {
    db::Status s = encode_value(out_, columns[i].type, values[i]);
    if (!s.ok()) {
      out_.resize(before);
      return s;
    }
  }
  return {};
}

void TokenEncoder::done(const Done& d) {
  wire::put_u8(out_, d.token);
  wire::put_u16(out_, d.status);
  wire::put_u16(out_, d.current_command);
  wire::put_u64(out_, d.row_count);
}

void TokenEncoder::return_status(int32_t value) {
  wire::put_u8(out_, token::kReturnStatus);
  wire::put_u32(out_, static_cast<uint32_t>(value));
}

db::Status TokenEncoder::return_value(uint16_t ordinal, std::string_view name, uint8_t st,
                                      const TypeInfo& type, const db::ValueView& v) {
  const size_t before = out_.size();
  wire::put_u8(out_, token::kReturnValue);
  wire::put_u16(out_, ordinal);
  put_b_varchar(out_, name);
  wire::put_u8(out_, st);
  wire::put_u32(out_, 0);
  wire::put_u16(out_, col_flag::kNullable);
  encode_type_info(out_, type);
  db::Status s = encode_value(out_, type, v);
  if (!s.ok()) out_.resize(before);
  return s;
}

// ---------------------------------------------------------------------------
// Token decoder

namespace {

/// Parses one length-prefixed token's body; false + error on malformed input.
bool parse_login_ack(Bytes body, LoginAck& a, std::string& e) {
  Reader r(body);
  a.interface = r.u8();
  a.tds_version = 0;
  for (int i = 0; i < 4; ++i)
    a.tds_version = (a.tds_version << 8) | r.u8();
  a.prog_name.clear();
  if (!read_b_varchar(r, a.prog_name, &e)) {
    if (e.empty()) e = "malformed LOGINACK";
    return false;
  }
  Bytes v = r.take(4);
  if (!r.ok() || r.remaining() != 0) {
    e = "malformed LOGINACK";
    return false;
  }
  std::memcpy(a.prog_version.data(), v.data(), 4);
  return true;
}

bool parse_env_change(Bytes body, EnvChange& c, std::string& e) {
  Reader r(body);
  c.type = r.u8();
  if (!r.ok()) {
    e = "empty ENVCHANGE";
    return false;
  }
  switch (c.type) {
    case 1:
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 13:
    case 19:  // user instance name
      if (!read_b_varchar(r, c.new_value, &e) || !read_b_varchar(r, c.old_value, &e)) {
        if (e.empty()) e = "malformed ENVCHANGE";
        return false;
      }
      break;
    case 7:     // SQL collation
    case 8:     // begin transaction
    case 9:     // commit transaction
    case 10:    // rollback transaction
    case 11:    // enlist DTC transaction
    case 12:    // defect transaction
    case 16:    // transaction manager address
    case 17:    // transaction ended
    case 18: {  // reset connection ack
      const uint8_t n = r.u8();
      c.new_value = std::string(wire::as_view(r.take(n)));
      const uint8_t o = r.u8();
      c.old_value = std::string(wire::as_view(r.take(o)));
      if (!r.ok()) {
        e = "malformed ENVCHANGE";
        return false;
      }
      break;
    }
    default:  // routing (20), promote transaction (15), newer types: kept raw
      c.new_value = std::string(wire::as_view(r.rest()));
      r.take(r.remaining());
      break;
  }
  if (r.remaining() != 0) {
    e = "trailing bytes in ENVCHANGE type " + std::to_string(c.type);
    return false;
  }
  return true;
}

bool parse_message(Bytes body, bool is_error, ServerMessage& m, std::string& e) {
  Reader r(body);
  m.is_error = is_error;
  m.number = static_cast<int32_t>(r.u32());
  m.state = r.u8();
  m.severity = r.u8();
  if (!r.ok() || !read_us_varchar(r, m.message, &e) || !read_b_varchar(r, m.server_name, &e) ||
      !read_b_varchar(r, m.proc_name, &e)) {
    if (e.empty()) e = "malformed INFO/ERROR token";
    return false;
  }
  m.line = static_cast<int32_t>(r.u32());
  if (!r.ok() || r.remaining() != 0) {
    e = "malformed INFO/ERROR token";
    return false;
  }
  return true;
}

}  // namespace

#ifdef WIREPOOL_PLANTED_DEFECTS
namespace {
std::atomic<PlantedDefect> g_defect{PlantedDefect::none};
}  // namespace

void set_planted_defect_for_test(PlantedDefect d) {
  g_defect.store(d);
}
PlantedDefect planted_defect() {
  return g_defect.load();
}
PlantedDefect planted_defect_from_name(std::string_view name) {
  if (name == "nbcrow") return PlantedDefect::nbcrow_bitmap_wrong_end;
  if (name == "brackets") return PlantedDefect::marker_in_brackets;
  if (name == "select_count") return PlantedDefect::select_count_as_affected;
  return PlantedDefect::none;
}
#endif

Decoded<Token> TokenDecoder::next(Bytes all) {
  size_t base = 0;
  for (;;) {
    const Bytes in = all.subspan(base);
    Reader r(in);
    const uint8_t tok = r.u8();
    if (!r.ok()) return {};
    auto ok = [&](Token t) { return done_ok(std::move(t), base + r.pos()); };
    // Tokens with a 2-byte length: wait for the whole body first.
    auto body = [&](Bytes& b) {
      const uint16_t n = r.u16();
      b = r.take(n);
      return r.ok();
    };
    std::string e;
    Bytes b;
    switch (tok) {
      case token::kTabName:
      case token::kColInfo:
      case token::kSspi:
        if (!body(b)) return {};
        base += r.pos();
        continue;
      case token::kLoginAck: {
        if (!body(b)) return {};
        LoginAck a;
        if (!parse_login_ack(b, a, e)) return fail<Token>(e);
        return ok(std::move(a));
      }
      case token::kEnvChange: {
        if (!body(b)) return {};
        EnvChange c;
        if (!parse_env_change(b, c, e)) return fail<Token>(e);
        return ok(std::move(c));
      }
      case token::kError:
      case token::kInfo: {
        if (!body(b)) return {};
        ServerMessage m;
        if (!parse_message(b, tok == token::kError, m, e)) return fail<Token>(e);
        return ok(std::move(m));
      }
      case token::kOrder: {
        if (!body(b)) return {};
        if (b.size() % 2 != 0) return fail<Token>("ORDER token of odd length");
        Order o;
        Reader br(b);
        while (br.remaining() > 0)
          o.columns.push_back(br.u16());
        return ok(std::move(o));
      }
      case token::kFeatureExtAck: {
        std::vector<FeatureExt> acks;
        for (;;) {
          const uint8_t id = r.u8();
          if (!r.ok()) return {};
          if (id == feature::kTerminator) break;
          const uint32_t n = r.u32();
          if (!r.ok()) return {};
          if (n > limits_.max_value) return fail<Token>("FEATUREEXTACK data too long");
          Bytes d = r.take(n);
          if (!r.ok()) return {};
          if (acks.size() >= 64) return fail<Token>("FEATUREEXTACK with too many features");
          acks.push_back({id, std::string(wire::as_view(d))});
        }
        return ok(std::move(acks));
      }
      case token::kColMetadata: {
        const uint16_t count = r.u16();
        if (!r.ok()) return {};
        if (count == 0xFFFF) return ok(std::vector<ColumnMeta>{});  // NoMetaData: keep columns_
        if (count > 4096)
          return fail<Token>("COLMETADATA with " + std::to_string(count) +
                             " columns (the limit is 4096)");
        std::vector<ColumnMeta> cols;
        cols.reserve(count);
        for (uint16_t i = 0; i < count; ++i) {
          ColumnMeta c;
          c.user_type = r.u32();
          c.flags = r.u16();
          if (!r.ok()) return {};
          auto t = decode_type_info(r.rest());
          if (t.status == DecodeStatus::need_more) return {};
          if (t.status == DecodeStatus::error) return fail<Token>("COLMETADATA: " + t.error);
          r.take(t.consumed);
          c.type = t.message;
          const uint8_t n = r.u8();
          Bytes name = r.take(size_t{n} * 2);
          if (!r.ok()) return {};
          if (!ucs2_to_utf8(name, c.name, &e)) return fail<Token>("column name: " + e);
          cols.push_back(std::move(c));
        }
        columns_ = cols;
        return ok(std::move(cols));
      }
      case token::kRow:
      case token::kNbcRow: {
        if (columns_.empty()) return fail<Token>("ROW without COLMETADATA");
        Bytes bitmap;
        if (tok == token::kNbcRow) {
          bitmap = r.take((columns_.size() + 7) / 8);
          if (!r.ok()) return {};
        }
        Row row;
        row.values.reserve(columns_.size());
        for (size_t i = 0; i < columns_.size(); ++i) {
          // Bit i of the bitmap (least significant first) is column i ([MS-TDS] 2.2.7.17).
#ifdef WIREPOOL_PLANTED_DEFECTS
          const int bit = g_defect.load() == PlantedDefect::nbcrow_bitmap_wrong_end
                              ? (0x80 >> (i % 8))
                              : (1 << (i % 8));
#else
          const int bit = 1 << (i % 8);
#endif
          if (!bitmap.empty() && (bitmap[i / 8] & bit) != 0) {
            TypedValue null;
            null.type = columns_[i].type;
            row.values.push_back(std::move(null));
            continue;
          }
          auto v = decode_value(columns_[i].type, r.rest(), limits_);
          if (v.status == DecodeStatus::need_more) return need_at<Token>(r.pos(), v.needed);
          if (v.status == DecodeStatus::error)
            return fail_from<Token>("column " + columns_[i].name + ": ", v);
          r.take(v.consumed);
          row.values.push_back(std::move(v.message));
        }
        return ok(std::move(row));
      }
      case token::kDone:
      case token::kDoneProc:
      case token::kDoneInProc: {
        Done d;
        d.token = tok;
        d.status = r.u16();
        d.current_command = r.u16();
        d.row_count = r.u64();
        if (!r.ok()) return {};
        return ok(d);
      }
      case token::kReturnStatus: {
        const uint32_t v = r.u32();
        if (!r.ok()) return {};
        return ok(static_cast<int32_t>(v));
      }
      case token::kReturnValue: {
        ReturnValue rv;
        rv.ordinal = r.u16();
        const uint8_t n = r.u8();
        Bytes name = r.take(size_t{n} * 2);
        rv.status = r.u8();
        rv.user_type = r.u32();
        rv.flags = r.u16();
        if (!r.ok()) return {};
        if (!ucs2_to_utf8(name, rv.name, &e)) return fail<Token>("RETURNVALUE name: " + e);
        auto t = decode_type_info(r.rest());
        if (t.status == DecodeStatus::need_more) return {};
        if (t.status == DecodeStatus::error) return fail<Token>("RETURNVALUE: " + t.error);
        r.take(t.consumed);
        auto v = decode_value(t.message, r.rest(), limits_);
        if (v.status == DecodeStatus::need_more) return need_at<Token>(r.pos(), v.needed);
        if (v.status == DecodeStatus::error) return fail_from<Token>("RETURNVALUE: ", v);
        r.take(v.consumed);
        rv.value = std::move(v.message);
        return ok(std::move(rv));
      }
      default:
        return fail<Token>("unknown TDS token 0x" + hex2(tok));
    }
  }
}

}  // namespace wirepool::tds
