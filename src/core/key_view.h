// A request's unit keys as a lookup reads them: a span of keys held, or a
// caller's KeySource read into a buffer a chunk at a time as the lookup
// probes it (LazyKeys). Lookups take a KeyView; everything that changes
// state takes a Request's keys, all held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "hkv/key_source.h"
#include "hkv/types.h"

namespace hkv::internal {

class LazyKeys;

class KeyView {
 public:
  // NOLINTNEXTLINE(google-explicit-constructor): a span is a view.
  KeyView(std::span<const BlockHash> keys)
      : data_(keys.data()), size_(keys.size()) {}
  // NOLINTNEXTLINE(google-explicit-constructor)
  KeyView(const std::vector<BlockHash>& keys)
      : KeyView(std::span<const BlockHash>(keys)) {}

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // REQUIRES: i < size(). May throw what the source's Read throws.
  const BlockHash& operator[](std::size_t i) const;
  // Keys [first, first + n). REQUIRES: first + n <= size().
  std::span<const BlockHash> Range(std::size_t first, std::size_t n) const;

 private:
  friend class LazyKeys;
  KeyView(const BlockHash* data, std::size_t size, const LazyKeys* lazy)
      : data_(data), size_(size), lazy_(lazy) {}

  const BlockHash* data_;
  std::size_t size_;
  const LazyKeys* lazy_ = nullptr;
};

// The keys of a KeySource, read on demand in chunks of kChunk keys. Owns
// the buffer its views point into; not thread-safe (reading loads).
class LazyKeys {
 public:
  static constexpr std::size_t kChunk = 16;

  explicit LazyKeys(const KeySource& source);
  ~LazyKeys();
  LazyKeys(const LazyKeys&) = delete;
  LazyKeys& operator=(const LazyKeys&) = delete;

  KeyView view() const { return KeyView(keys_, size_, this); }
  // Loads keys [first, first + n). REQUIRES: first + n <= size.
  void Load(std::size_t first, std::size_t n) const {
    if (n == 0) return;
    const std::size_t last = (first + n - 1) / kChunk;
    for (std::size_t c = first / kChunk; c <= last; ++c) {
      if ((loaded_[c / 64] >> (c % 64) & 1) == 0) LoadChunk(c);
    }
  }
  // Keys read from the source so far.
  std::size_t num_read() const { return num_read_; }

 private:
  void LoadChunk(std::size_t chunk) const;

  const KeySource& source_;
  std::size_t size_;
  mutable std::vector<std::uint64_t> loaded_;  // a bit per chunk
  mutable std::size_t num_read_ = 0;
  // Not zero-filled: a long prompt's buffer is mostly never read. The
  // thread's reused buffer (owned_ false) or one of its own; taken last,
  // so that nothing after it in the constructor can throw.
  bool owned_ = false;
  BlockHash* keys_;
};

inline const BlockHash& KeyView::operator[](std::size_t i) const {
  if (lazy_ != nullptr) lazy_->Load(i, 1);
  return data_[i];
}

inline std::span<const BlockHash> KeyView::Range(std::size_t first,
                                                 std::size_t n) const {
  if (lazy_ != nullptr) lazy_->Load(first, n);
  return {data_ + first, n};
}

}  // namespace hkv::internal
