#include "protocol/pg/arrays.hpp"

#include <utility>
#include <vector>

#include "protocol/pg/types.hpp"

namespace wirepool::pg {

namespace {

/// Built-in array types and their elements (pg_type.typelem).
constexpr std::pair<uint32_t, uint32_t> kArrays[] = {
    {1000, 16},    // bool[]
    {1001, 17},    // bytea[]
    {1005, 21},    // int2[]
    {1007, 23},    // int4[]
    {1016, 20},    // int8[]
    {1021, 700},   // float4[]
    {1022, 701},   // float8[]
    {1231, 1700},  // numeric[]
    {1009, 25},    // text[]
    {1015, 1043},  // varchar[]
    {1014, 1042},  // bpchar[]
    {1002, 18},    // char[]
    {1003, 19},    // name[]
    {1182, 1082},  // date[]
    {1115, 1114},  // timestamp[]
    {1185, 1184},  // timestamptz[]
    {2951, 2950},  // uuid[]
    {199, 114},    // json[]
    {3807, 3802},  // jsonb[]
    {1028, 26},    // oid[]
};

void put_i32(std::string& out, int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  out.push_back(static_cast<char>(u >> 24));
  out.push_back(static_cast<char>(u >> 16));
  out.push_back(static_cast<char>(u >> 8));
  out.push_back(static_cast<char>(u));
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/// array_in's grammar: optional dimensions, then nested braces of elements.
class Parser {
 public:
  Parser(std::string_view text, std::string* why) : s_(text), why_(why) {}

  struct Element {
    std::optional<std::string> text;  ///< nullopt: NULL
  };

  bool parse() {
    skip_space();
    if (peek() == '[') {
      while (peek() == '[') {
        ++i_;
        int64_t lo = 0, hi = 0;
        if (!integer(lo)) return fail("array bound");
        if (peek() == ':') {
          ++i_;
          if (!integer(hi)) return fail("array bound");
        } else {
          hi = lo;
          lo = 1;
        }
        if (peek() != ']') return fail("array bound");
        ++i_;
        lower_.push_back(static_cast<int32_t>(lo));
        declared_.push_back(hi - lo + 1);
        skip_space();
      }
      if (peek() != '=') return fail("array dimensions");
      ++i_;
      skip_space();
    }
    if (peek() != '{') return fail("array text does not start with {");
    if (!level(0)) return false;
    skip_space();
    if (i_ != s_.size()) return fail("junk after the array");
    if (!declared_.empty()) {
      if (declared_.size() != sizes_.size()) return fail("array dimensions");
      for (size_t d = 0; d < sizes_.size(); ++d)
        if (declared_[d] != sizes_[d]) return fail("array dimensions");
    }
    return true;
  }

  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<int32_t>& lower() const { return lower_; }
  const std::vector<Element>& elements() const { return elements_; }
  bool has_null() const { return has_null_; }

 private:
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && is_space(s_[i_]))
      ++i_;
  }
  bool fail(std::string_view what) {
    *why_ = "malformed array literal (" + std::string(what) + ")";
    return false;
  }
  bool integer(int64_t& v) {
    bool neg = false;
    if (peek() == '-' || peek() == '+') neg = s_[i_++] == '-';
    size_t start = i_;
    v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9' && i_ - start < 10)
      v = v * 10 + (s_[i_++] - '0');
    if (neg) v = -v;
    return i_ > start;
  }

  /// One brace level at depth `d`: either all sub-arrays or all elements.
  bool level(size_t d) {
    ++i_;  // '{'
    int64_t count = 0;
    skip_space();
    if (peek() == '}') {
      ++i_;
      if (d == 0) return true;  // '{}': no dimensions
      return fail("empty sub-array");
    }
    for (;;) {
      skip_space();
      if (peek() == '{') {
        if (leaf_depth_ && *leaf_depth_ == d) return fail("mixed elements and sub-arrays");
        if (!level(d + 1)) return false;
      } else {
        if (leaf_depth_ && *leaf_depth_ != d) return fail("uneven nesting");
        leaf_depth_ = d;
        if (!element()) return false;
      }
      ++count;
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (peek() == '}') {
        ++i_;
        break;
      }
      return fail("expected , or }");
    }
    if (sizes_.size() <= d) sizes_.resize(d + 1, -1);
    if (sizes_[d] == -1) {
      sizes_[d] = count;
    } else if (sizes_[d] != count) {
      return fail("sub-arrays of different sizes");
    }
    return true;
  }

  bool element() {
    Element e;
    if (peek() == '"') {
      ++i_;
      std::string v;
      for (;;) {
        if (i_ >= s_.size()) return fail("unterminated quoted element");
        char c = s_[i_++];
        if (c == '"') break;
        if (c == '\\') {
          if (i_ >= s_.size()) return fail("unterminated quoted element");
          c = s_[i_++];
        }
        v.push_back(c);
      }
      e.text = std::move(v);
    } else {
      std::string v;
      bool escaped = false;
      while (i_ < s_.size() && s_[i_] != ',' && s_[i_] != '}') {
        char c = s_[i_++];
        if (c == '"' || c == '{') return fail("misplaced quote or brace");
        if (c == '\\') {
          if (i_ >= s_.size()) return fail("trailing backslash");
          c = s_[i_++];
          escaped = true;
        }
        v.push_back(c);
      }
      while (!v.empty() && is_space(v.back()))
        v.pop_back();
      if (v.empty()) return fail("empty element");
      if (!escaped && v.size() == 4 && (v[0] | 32) == 'n' && (v[1] | 32) == 'u' &&
          (v[2] | 32) == 'l' && (v[3] | 32) == 'l') {
        has_null_ = true;
      } else {
        e.text = std::move(v);
      }
    }
    elements_.push_back(std::move(e));
    return true;
  }

  std::string_view s_;
  std::string* why_;
  size_t i_ = 0;
  std::optional<size_t> leaf_depth_;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> declared_;
  std::vector<int32_t> lower_;
  std::vector<Element> elements_;
  bool has_null_ = false;
};

}  // namespace

std::optional<uint32_t> array_element(uint32_t array_oid) {
  for (const auto& [array, element] : kArrays)
    if (array == array_oid) return element;
  return std::nullopt;
}

bool array_text_to_binary(std::string_view text, uint32_t array_oid, std::string& out,
                          std::string* why) {
  const auto element = array_element(array_oid);
  if (!element) {
    *why = "type OID " + std::to_string(array_oid) + " is not a known array type";
    return false;
  }
  Parser p(text, why);
  if (!p.parse()) return false;
  const size_t before = out.size();
  const auto& sizes = p.sizes();
  put_i32(out, static_cast<int32_t>(sizes.size()));
  put_i32(out, p.has_null() ? 1 : 0);
  put_i32(out, static_cast<int32_t>(*element));
  for (size_t d = 0; d < sizes.size(); ++d) {
    put_i32(out, static_cast<int32_t>(sizes[d]));
    put_i32(out, d < p.lower().size() ? p.lower()[d] : 1);
  }
  for (const auto& e : p.elements()) {
    if (!e.text) {
      put_i32(out, -1);
      continue;
    }
    auto decoded = decode_param(std::string_view(*e.text), *element, 0);
    if (!decoded.ok()) {
      out.resize(before);
      *why = decoded.error().message;
      return false;
    }
    const size_t len_at = out.size();
    put_i32(out, 0);
    std::string err;
    if (!encode_value(db::view_of(decoded.value().value), *element, 1, out, &err)) {
      out.resize(before);
      *why = err;
      return false;
    }
    const auto len = static_cast<uint32_t>(out.size() - len_at - 4);
    out[len_at] = static_cast<char>(len >> 24);
    out[len_at + 1] = static_cast<char>(len >> 16);
    out[len_at + 2] = static_cast<char>(len >> 8);
    out[len_at + 3] = static_cast<char>(len);
  }
  return true;
}

}  // namespace wirepool::pg
