// SCRAM-SHA-256 server side (RFC 5802, RFC 7677), as PostgreSQL's
// auth-scram.c runs it:
//
//   client-first  = gs2-header client-first-bare
//   gs2-header    = ("n" | "y" | "p=" cb-name) "," [authzid] ","
//   client-first-bare = ["m=" ext ","] "n=" user "," "r=" c-nonce ["," extensions]
//   server-first  = "r=" c-nonce s-nonce ",s=" salt ",i=" iterations
//   client-final  = "c=" base64(gs2-header cb-data) ",r=" nonce ["," extensions] ",p=" proof
//   server-final  = "v=" base64(ServerSignature)
//
//   SaltedPassword  = PBKDF2-HMAC-SHA-256(password, salt, i)
//   ClientKey       = HMAC(SaltedPassword, "Client Key"), StoredKey = SHA-256(ClientKey)
//   ServerKey       = HMAC(SaltedPassword, "Server Key")
//   AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
//   ClientSignature = HMAC(StoredKey, AuthMessage); proof = ClientKey XOR ClientSignature
//   ServerSignature = HMAC(ServerKey, AuthMessage)

#include "protocol/pg/scram.hpp"

#include "protocol/pg/saslprep.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <charconv>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace wirepool::pg::scram {
namespace {

using Key = std::array<uint8_t, 32>;

constexpr size_t kServerNonceBytes = 18;
constexpr size_t kSaltBytes = 16;
constexpr std::string_view kCbName = "tls-server-end-point";

/// SHA-256 and HMAC fetched once: OpenSSL 3 looks an algorithm named by
/// EVP_sha256() or HMAC() up in its provider tables on every use
/// (docs/performance-notes.md has what that costs).
const EVP_MD* fetched_sha256() {
  static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md;
}

/// One digest context per thread, reused.
EVP_MD_CTX* digest_context() {
  struct Free {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  thread_local std::unique_ptr<EVP_MD_CTX, Free> ctx(EVP_MD_CTX_new());
  return ctx.get();
}

/// One HMAC-SHA-256 context per thread, its digest set once; each use sets
/// only the key. Null when the provider offers no HMAC or SHA-256. (Its cost
/// against a hand-written HMAC: docs/performance-notes.md.)
EVP_MAC_CTX* hmac_context() {
  struct Free {
    void operator()(EVP_MAC_CTX* c) const { EVP_MAC_CTX_free(c); }
  };
  thread_local std::unique_ptr<EVP_MAC_CTX, Free> ctx([] {
    static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    EVP_MAC_CTX* c = mac ? EVP_MAC_CTX_new(mac) : nullptr;
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_END};
    if (c && EVP_MAC_CTX_set_params(c, params) != 1) {
      EVP_MAC_CTX_free(c);
      c = nullptr;
    }
    return c;
  }());
  return ctx.get();
}

/// Random bytes from a per-thread reserve refilled 512 bytes at a time:
/// OpenSSL 3's RAND_bytes costs ~6k instructions a call whatever its size.
/// Each byte is handed out once and wiped from the reserve.
bool random_bytes(std::span<uint8_t> out) {
  struct Reserve {
    std::array<uint8_t, 512> bytes{};
    size_t used = 512;
    ~Reserve() { OPENSSL_cleanse(bytes.data(), bytes.size()); }
  };
  thread_local Reserve r;
  if (out.size() > r.bytes.size()) return RAND_bytes(out.data(), static_cast<int>(out.size())) == 1;
  if (r.used + out.size() > r.bytes.size()) {
    if (RAND_bytes(r.bytes.data(), static_cast<int>(r.bytes.size())) != 1) return false;
    r.used = 0;
  }
  std::memcpy(out.data(), r.bytes.data() + r.used, out.size());
  OPENSSL_cleanse(r.bytes.data() + r.used, out.size());
  r.used += out.size();
  return true;
}

}  // namespace

std::array<uint8_t, 32> hmac_sha256(std::span<const uint8_t> key, std::string_view data) {
  std::array<uint8_t, 32> out{};
  EVP_MAC_CTX* ctx = hmac_context();
  size_t len = 0;
  // A null key pointer would keep the previous key: an empty key gets a real one.
  static constexpr uint8_t kNoKey = 0;
  const bool ok =
      ctx && EVP_MAC_init(ctx, key.empty() ? &kNoKey : key.data(), key.size(), nullptr) == 1 &&
      EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1 &&
      EVP_MAC_final(ctx, out.data(), &len, out.size()) == 1 && len == out.size();
  if (!ok) {  // no provider answer: OpenSSL's own one-shot
    unsigned int n = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &n);
  }
  return out;
}

namespace {

Key sha256(std::span<const uint8_t> data) {
  Key out{};
  const EVP_MD* md = fetched_sha256();
  EVP_MD_CTX* ctx = digest_context();
  if (!md || !ctx) {
    SHA256(data.data(), data.size(), out.data());
    return out;
  }
  EVP_DigestInit_ex2(ctx, md, nullptr);
  EVP_DigestUpdate(ctx, data.data(), data.size());
  EVP_DigestFinal_ex(ctx, out.data(), nullptr);
  return out;
}

/// One "x=value" attribute of a comma-separated SCRAM message.
struct Attr {
  char name = 0;
  std::string_view value;
};

/// Reads the attribute at `pos` (up to the next ',' or the end) and moves past
/// its comma. Fails unless it is a letter followed by '='.
std::optional<Attr> read_attr(std::string_view msg, size_t& pos) {
  if (pos >= msg.size()) return std::nullopt;
  const size_t comma = msg.find(',', pos);
  const std::string_view item =
      msg.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
  pos = comma == std::string_view::npos ? msg.size() : comma + 1;
  if (item.size() < 2 || item[1] != '=') return std::nullopt;
  const char c = item[0];
  if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return std::nullopt;
  return Attr{c, item.substr(2)};
}

/// RFC 5802 "printable": 0x21..0x7E except ','.
bool printable(std::string_view s) {
  for (char c : s) {
    if (c < 0x21 || c > 0x7e || c == ',') return false;
  }
  return !s.empty();
}

ServerExchange::Answer failure(std::string why) {
  return {ServerExchange::Outcome::failure, std::move(why)};
}

}  // namespace

// ---------------------------------------------------------------------------
// base64 (RFC 4648, with padding; decoding is strict: alphabet, padding, canonical bits)

std::string base64_encode(std::span<const uint8_t> data) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    const uint32_t v = uint32_t{data[i]} << 16 | uint32_t{data[i + 1]} << 8 | data[i + 2];
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  if (const size_t rest = data.size() - i; rest > 0) {
    uint32_t v = uint32_t{data[i]} << 16;
    if (rest == 2) v |= uint32_t{data[i + 1]} << 8;
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string base64_encode(std::string_view data) {
  return base64_encode(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size()));
}

std::optional<std::string> base64_decode(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && last && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after padding
      v[k] = value(c);
      if (v[k] < 0) return std::nullopt;
    }
    const uint32_t n = uint32_t(v[0]) << 18 | uint32_t(v[1]) << 12 | uint32_t(v[2]) << 6 | v[3];
    // Canonical form only: the bits under the padding must be zero, so one
    // byte string has exactly one encoding.
    if ((pad == 1 && (n & 0xFF) != 0) || (pad == 2 && (n & 0xFFFF) != 0)) return std::nullopt;
    out.push_back(static_cast<char>(n >> 16));
    if (pad < 2) out.push_back(static_cast<char>(n >> 8));
    if (pad < 1) out.push_back(static_cast<char>(n));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Verifiers

std::optional<Verifier> parse_verifier(std::string_view text) {
  // SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>
  constexpr std::string_view kPrefix = "SCRAM-SHA-256$";
  if (text.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  text.remove_prefix(kPrefix.size());
  const size_t colon1 = text.find(':');
  const size_t dollar = text.find('$');
  if (colon1 == std::string_view::npos || dollar == std::string_view::npos || dollar < colon1) {
    return std::nullopt;
  }
  const size_t colon2 = text.find(':', dollar);
  if (colon2 == std::string_view::npos) return std::nullopt;
  const std::string_view iter = text.substr(0, colon1);
  const std::string_view salt = text.substr(colon1 + 1, dollar - colon1 - 1);
  const std::string_view stored = text.substr(dollar + 1, colon2 - dollar - 1);
  const std::string_view server = text.substr(colon2 + 1);

  Verifier v;
  auto r = std::from_chars(iter.data(), iter.data() + iter.size(), v.iterations);
  if (iter.empty() || r.ec != std::errc() || r.ptr != iter.data() + iter.size() ||
      v.iterations <= 0) {
    return std::nullopt;
  }
  auto s = base64_decode(salt);
  auto sk = base64_decode(stored);
  auto vk = base64_decode(server);
  if (!s || s->empty() || !sk || sk->size() != 32 || !vk || vk->size() != 32) return std::nullopt;
  v.salt = std::move(*s);
  std::memcpy(v.stored_key.data(), sk->data(), 32);
  std::memcpy(v.server_key.data(), vk->data(), 32);
  return v;
}

std::string format_verifier(const Verifier& v) {
  return "SCRAM-SHA-256$" + std::to_string(v.iterations) + ":" + base64_encode(v.salt) + "$" +
         base64_encode(v.stored_key) + ":" + base64_encode(v.server_key);
}

Verifier make_verifier(std::string_view password, std::string_view salt, int iterations) {
  // As PostgreSQL and libpq: the SASLprep'd password, or the raw bytes when
  // SASLprep refuses it.
  std::string prepared = prepare_password(password);
  Key salted{};
  PKCS5_PBKDF2_HMAC(prepared.data(), static_cast<int>(prepared.size()),
                    reinterpret_cast<const unsigned char*>(salt.data()),
                    static_cast<int>(salt.size()), iterations, EVP_sha256(),
                    static_cast<int>(salted.size()), salted.data());
  Verifier v;
  v.iterations = iterations;
  v.salt = std::string(salt);
  v.stored_key = sha256(hmac_sha256(salted, "Client Key"));
  v.server_key = hmac_sha256(salted, "Server Key");
  OPENSSL_cleanse(salted.data(), salted.size());
  OPENSSL_cleanse(prepared.data(), prepared.size());
  return v;
}

Verifier make_verifier(std::string_view password) {
  std::array<uint8_t, kSaltBytes> salt{};
  if (RAND_bytes(salt.data(), static_cast<int>(salt.size())) != 1) {
    // Start-up path (configuration): an exception is the documented way out.
    throw std::runtime_error("RAND_bytes failed while generating a SCRAM salt");
  }
  return make_verifier(password,
                       std::string_view(reinterpret_cast<const char*>(salt.data()), salt.size()));
}

Verifier fake_verifier(std::string_view user, std::span<const uint8_t> secret) {
  const std::string name(user);
  Verifier v;
  v.iterations = kDefaultIterations;
  const Key salt = hmac_sha256(secret, "salt:" + name);
  v.salt.assign(reinterpret_cast<const char*>(salt.data()), kSaltBytes);
  v.stored_key = hmac_sha256(secret, "stored-key:" + name);
  v.server_key = hmac_sha256(secret, "server-key:" + name);
  return v;
}

bool verify_password(const Verifier& v, std::string_view password) {
  if (v.iterations <= 0) return false;
  const Verifier candidate = make_verifier(password, v.salt, v.iterations);
  return CRYPTO_memcmp(candidate.stored_key.data(), v.stored_key.data(), v.stored_key.size()) == 0;
}

// ---------------------------------------------------------------------------
// The exchange

ServerExchange::ServerExchange(Verifier verifier, std::string channel_binding,
                               std::string nonce_for_test)
    : verifier_(std::move(verifier)),
      channel_binding_(std::move(channel_binding)),
      nonce_override_(std::move(nonce_for_test)) {}

ServerExchange::Answer ServerExchange::client_first(std::string_view mechanism,
                                                    std::string_view message) {
  if (first_done_) return failure("unexpected SCRAM client-first message");
  const bool plus = mechanism == kMechanismPlus;
  if (mechanism != kMechanism && !plus) {
    return failure("unsupported SASL mechanism \"" + std::string(mechanism.substr(0, 64)) + "\"");
  }
  if (plus && channel_binding_.empty()) {
    return failure("SCRAM-SHA-256-PLUS selected but the connection offers no channel binding");
  }

  // gs2-header: the channel-binding flag, then an empty authzid.
  size_t pos = 0;
  if (message.empty()) return failure("malformed SCRAM message: empty client-first");
  switch (message[0]) {
    case 'n':
      if (plus) {
        return failure(
            "SCRAM-SHA-256-PLUS selected but the client-first message carries no channel binding");
      }
      pos = 1;
      break;
    case 'y':
      // The client supports binding but believes the server does not. If we
      // offered PLUS, somebody removed it from our list: a downgrade.
      if (plus) return failure("malformed SCRAM message: \"y\" with SCRAM-SHA-256-PLUS");
      if (!channel_binding_.empty()) {
        return failure(
            "SCRAM channel binding negotiation error: the client thinks the server "
            "does not support channel binding (possible downgrade)");
      }
      pos = 1;
      break;
    case 'p': {
      if (message.substr(0, 2) != "p=") return failure("malformed SCRAM message: bad gs2 flag");
      const size_t comma = message.find(',');
      if (comma == std::string_view::npos) return failure("malformed SCRAM message: no gs2 header");
      const std::string_view cb = message.substr(2, comma - 2);
      if (cb != kCbName) {
        return failure("unsupported SCRAM channel-binding type \"" + std::string(cb.substr(0, 64)) +
                       "\"");
      }
      if (!plus) {
        return failure("channel binding requested but SCRAM-SHA-256 (without -PLUS) selected");
      }
      pos = comma;
      break;
    }
    default:
      return failure("malformed SCRAM message: unexpected channel-binding flag");
  }
  if (pos >= message.size() || message[pos] != ',') {
    return failure("malformed SCRAM message: bad gs2 header");
  }
  ++pos;
  if (pos < message.size() && message[pos] == 'a') {
    return failure("client uses authorization identity, but it is not supported");
  }
  if (pos >= message.size() || message[pos] != ',') {
    return failure("malformed SCRAM message: bad gs2 header");
  }
  ++pos;
  gs2_header_ = std::string(message.substr(0, pos));
  const std::string_view bare = message.substr(pos);

  // client-first-bare: no mandatory extension, then n= and r=.
  size_t p = 0;
  if (!bare.empty() && bare[0] == 'm') {
    return failure("client requires an unsupported SCRAM extension");
  }
  auto user = read_attr(bare, p);
  if (!user || user->name != 'n') return failure("malformed SCRAM message: expected n=");
  auto nonce = read_attr(bare, p);
  if (!nonce || nonce->name != 'r' || !printable(nonce->value)) {
    return failure("malformed SCRAM message: expected a client nonce r=");
  }
  while (p < bare.size()) {  // optional extensions: well-formed, ignored
    if (!read_attr(bare, p)) return failure("malformed SCRAM message: bad attribute");
  }
  if (!bare.empty() && bare.back() == ',') return failure("malformed SCRAM message: trailing ','");

  std::string server_nonce = nonce_override_;
  if (server_nonce.empty()) {
    std::array<uint8_t, kServerNonceBytes> raw{};
    if (!random_bytes(raw)) {
      return failure("could not generate a SCRAM nonce");
    }
    server_nonce = base64_encode(raw);
  }
  mechanism_ = std::string(mechanism);
  client_first_bare_ = std::string(bare);
  nonce_ = std::string(nonce->value) + server_nonce;
  server_first_ = "r=" + nonce_ + ",s=" + base64_encode(verifier_.salt) +
                  ",i=" + std::to_string(verifier_.iterations);
  first_done_ = true;
  return {Outcome::next, server_first_};
}

ServerExchange::Answer ServerExchange::client_final(std::string_view message) {
  if (!first_done_) return failure("unexpected SCRAM client-final message");
  first_done_ = false;  // one attempt per exchange
  const std::string nonce = std::move(nonce_);
  nonce_.clear();

  size_t p = 0;
  auto cb = read_attr(message, p);
  if (!cb || cb->name != 'c') return failure("malformed SCRAM message: expected c=");
  auto cb_data = base64_decode(cb->value);
  if (!cb_data) return failure("malformed SCRAM message: c= is not base64");
  std::string expected_cb = gs2_header_;
  if (gs2_header_[0] == 'p') expected_cb += channel_binding_;
  if (*cb_data != expected_cb) {
    return failure("SCRAM channel binding check failed");
  }
  auto r = read_attr(message, p);
  if (!r || r->name != 'r') return failure("malformed SCRAM message: expected r=");
  if (r->value != nonce) return failure("SCRAM nonce mismatch");

  // Extensions may follow; the proof is the last attribute.
  size_t proof_at = std::string_view::npos;
  std::string_view proof_b64;
  while (p < message.size()) {
    const size_t at = p;
    auto a = read_attr(message, p);
    if (!a) return failure("malformed SCRAM message: bad attribute");
    if (a->name == 'p') {
      if (p != message.size() || message.back() == ',') {
        return failure("malformed SCRAM message: attributes after the proof");
      }
      proof_at = at;
      proof_b64 = a->value;
    }
  }
  if (proof_at == std::string_view::npos) return failure("malformed SCRAM message: no proof p=");
  auto proof = base64_decode(proof_b64);
  if (!proof || proof->size() != 32) return failure("malformed SCRAM message: bad proof");

  const std::string_view without_proof = message.substr(0, proof_at - 1);  // drop ",p=..."
  std::string auth_message;
  auth_message.reserve(client_first_bare_.size() + server_first_.size() + without_proof.size() + 2);
  auth_message.append(client_first_bare_).append(",").append(server_first_).append(",");
  auth_message.append(without_proof);

  const Key client_signature = hmac_sha256(verifier_.stored_key, auth_message);
  Key client_key{};
  for (size_t i = 0; i < client_key.size(); ++i) {
    client_key[i] = static_cast<uint8_t>((*proof)[i]) ^ client_signature[i];
  }
  const Key computed = sha256(client_key);
  if (CRYPTO_memcmp(computed.data(), verifier_.stored_key.data(), computed.size()) != 0) {
    return failure("SCRAM proof does not match: wrong password");
  }
  const Key server_signature = hmac_sha256(verifier_.server_key, auth_message);
  return {Outcome::success, "v=" + base64_encode(server_signature)};
}

}  // namespace wirepool::pg::scram
