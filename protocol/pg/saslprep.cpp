#include "protocol/pg/saslprep.hpp"

#include <uninorm.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace wirepool::pg {
namespace {

struct CodeRange {
  uint32_t lo, hi;
};

#include "protocol/pg/saslprep_tables.inc"

template <size_t N>
bool in(const CodeRange (&table)[N], uint32_t c) {
  auto it = std::upper_bound(std::begin(table), std::end(table), c,
                             [](uint32_t v, const CodeRange& r) { return v < r.lo; });
  return it != std::begin(table) && c <= std::prev(it)->hi;
}

/// Strict UTF-8 (no overlongs, no surrogates, at most U+10FFFF) to code points.
std::optional<std::vector<uint32_t>> decode_utf8(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    uint32_t c;
    size_t n;
    if (b < 0x80) {
      c = b;
      n = 1;
    } else if (b >= 0xC2 && b <= 0xDF) {
      c = b & 0x1F;
      n = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      c = b & 0x0F;
      n = 3;
    } else if (b >= 0xF0 && b <= 0xF4) {
      c = b & 0x07;
      n = 4;
    } else {
      return std::nullopt;
    }
    if (i + n > s.size()) return std::nullopt;
    for (size_t k = 1; k < n; ++k) {
      const auto t = static_cast<uint8_t>(s[i + k]);
      if ((t & 0xC0) != 0x80) return std::nullopt;
      c = (c << 6) | (t & 0x3F);
    }
    if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
        (c >= 0xD800 && c <= 0xDFFF)) {
      return std::nullopt;
    }
    out.push_back(c);
    i += n;
  }
  return out;
}

void encode_utf8(uint32_t c, std::string& out) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace

std::optional<std::string> saslprep(std::string_view input) {
  if (std::all_of(input.begin(), input.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
    return std::string(input);
  }
  auto chars = decode_utf8(input);
  if (!chars) return std::nullopt;

  // 1. Map.
  std::vector<uint32_t> mapped;
  mapped.reserve(chars->size());
  for (uint32_t c : *chars) {
    if (in(kNonAsciiSpace, c)) {
      mapped.push_back(0x20);
    } else if (!in(kMappedToNothing, c)) {
      mapped.push_back(c);
    }
  }
  if (mapped.empty()) return std::nullopt;

  // 3. Prohibit and 4. bidi, on the mapped string as pg_saslprep checks them.
  bool rand_al = false;
  for (uint32_t c : mapped) {
    if (in(kProhibited, c) || in(kUnassigned, c)) return std::nullopt;
    rand_al = rand_al || in(kRandAL, c);
  }
  if (rand_al) {
    for (uint32_t c : mapped) {
      if (in(kL, c)) return std::nullopt;
    }
    if (!in(kRandAL, mapped.front()) || !in(kRandAL, mapped.back())) return std::nullopt;
  }

  // 2. Normalise (NFKC).
  size_t length = 0;
  std::unique_ptr<uint32_t, decltype(&std::free)> normal(
      u32_normalize(UNINORM_NFKC, mapped.data(), mapped.size(), nullptr, &length), &std::free);
  if (!normal) return std::nullopt;
  std::string out;
  out.reserve(length * 2);
  for (size_t i = 0; i < length; ++i)
    encode_utf8(normal.get()[i], out);
  return out;
}

std::string prepare_password(std::string_view password) {
  if (auto prepared = saslprep(password)) return std::move(*prepared);
  return std::string(password);
}

}  // namespace wirepool::pg
