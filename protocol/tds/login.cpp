// PRELOGIN and LOGIN7 (login.hpp).
#include "protocol/tds/login.hpp"

#include <openssl/crypto.h>

#include <cstring>

#include "protocol/tds/wire.hpp"

namespace wirepool::tds {

namespace {
using namespace wire;
}  // namespace

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

}  // namespace wirepool::tds
