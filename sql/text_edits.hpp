#pragma once
// Edits of a statement's text by byte offset, applied in one pass: the output
// step of the rewriters' shared token walk (token_walk.hpp). Internal to sql/.

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wirepool::sql::detail {

class TextEdits {
 public:
  /// Replaces the bytes [from, to).
  void replace(size_t from, size_t to, std::string text) {
    edits_.push_back({from, to - from, std::move(text), seq_++});
  }
  /// Inserts before byte `at`; of two insertions at one place the later goes first.
  void insert(size_t at, std::string text) { edits_.push_back({at, 0, std::move(text), seq_++}); }
  bool empty() const { return edits_.empty(); }

  /// `text` with the edits applied; an edit inside a span already replaced is dropped.
  std::string apply(std::string_view text) {
    std::stable_sort(edits_.begin(), edits_.end(), [](const Edit& a, const Edit& b) {
      if (a.pos != b.pos) return a.pos < b.pos;
      if ((a.len > 0) != (b.len > 0)) return a.len == 0;
      return a.len == 0 && a.seq > b.seq;  // insertions: the outer (later) one first
    });
    std::string out;
    out.reserve(text.size() + 64);
    size_t copied = 0;
    for (const Edit& e : edits_) {
      if (e.pos < copied) continue;
      out.append(text.substr(copied, e.pos - copied));
      out.append(e.text);
      copied = e.pos + e.len;
    }
    out.append(text.substr(copied));
    return out;
  }

 private:
  struct Edit {
    size_t pos;
    size_t len;  // bytes replaced; 0 inserts
    std::string text;
    int seq;
  };
  std::vector<Edit> edits_;
  int seq_ = 0;
};

}  // namespace wirepool::sql::detail
