#pragma once
// A hash map from integer ids (the relay's leases and batches) to small
// values, for entries that come and go once per lease or per batch: open
// addressing with linear probing in one array, so that an insertion or an
// erasure allocates nothing once the map has held its peak size, and a lookup
// reads one or two neighbouring slots.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace wirepool::pool {

/// How an erased value is made ready for reuse: by default it becomes V{};
/// a value may keep what is worth keeping (a vector's capacity).
template <class V>
struct ResetToDefault {
  void operator()(V& v) const { v = V{}; }
};

template <class V, class Reset = ResetToDefault<V>>
class IdMap {
 public:
  using Key = uint64_t;

  /// `k`'s value, or null. Valid until the next insertion or erasure.
  V* find(Key k) {
    if (slots_.empty()) return nullptr;
    for (size_t i = home(k);; i = next(i)) {
      Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == k) return &s.value;
    }
  }
  const V* find(Key k) const { return const_cast<IdMap*>(this)->find(k); }
  bool contains(Key k) const { return find(k) != nullptr; }

  /// `k`'s value; a new key gets a reset (default) value. Valid until the
  /// next insertion or erasure.
  V& operator[](Key k) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    size_t i = home(k);
    for (; slots_[i].used; i = next(i)) {
      if (slots_[i].key == k) return slots_[i].value;
    }
    slots_[i].used = true;
    slots_[i].key = k;
    ++size_;
    return slots_[i].value;
  }

  /// Erases `k`'s entry (false: there was none). Its value is reset first,
  /// so a pointer it held lets go now.
  bool erase(Key k) {
    if (slots_.empty()) return false;
    size_t hole = home(k);
    for (; slots_[hole].key != k || !slots_[hole].used; hole = next(hole)) {
      if (!slots_[hole].used) return false;
    }
    Reset{}(slots_[hole].value);
    slots_[hole].used = false;
    --size_;
    // Entries further along the run move back into the hole when it lies
    // between their home slot and where they are, so that lookups still
    // reach them; a moved entry leaves the hole's reset value behind.
    for (size_t j = next(hole); slots_[j].used; j = next(j)) {
      const size_t from_home = (j - home(slots_[j].key)) & mask();
      if (from_home >= ((j - hole) & mask())) {
        std::swap(slots_[hole].value, slots_[j].value);
        slots_[hole].key = slots_[j].key;
        slots_[hole].used = true;
        slots_[j].used = false;
        hole = j;
      }
    }
    return true;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Slot {
    Key key = 0;
    bool used = false;
    V value{};  ///< reset while unused
  };

  size_t mask() const { return slots_.size() - 1; }
  size_t next(size_t i) const { return (i + 1) & mask(); }
  /// Fibonacci hashing: the top bits of the id times 2^64 / phi.
  size_t home(Key k) const { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ULL) >> shift_); }

  /// Twice the slots (16 at first), at most three quarters used.
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_ = std::vector<Slot>(old.empty() ? 16 : old.size() * 2);
    shift_ = 64;
    for (size_t n = slots_.size(); n > 1; n >>= 1)
      --shift_;
    for (Slot& s : old) {
      if (!s.used) continue;
      size_t i = home(s.key);
      while (slots_[i].used)
        i = next(i);
      slots_[i].key = s.key;
      slots_[i].used = true;
      slots_[i].value = std::move(s.value);
    }
  }

  std::vector<Slot> slots_;  ///< a power of two of them
  size_t size_ = 0;
  unsigned shift_ = 64;  ///< 64 - log2(slots)
};

}  // namespace wirepool::pool
