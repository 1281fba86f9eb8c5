#include "core/key_view.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>

namespace hkv::internal {
namespace {

// Each thread's buffer for the keys of the lookups it makes, reused: a
// 512-block prompt's keys take 16 KiB, whose malloc and free were a
// twentieth of its 1.4 µs lookup. Up to kReusedKeys keys (64 KiB); a
// longer lookup, or one made while another holds the buffer (its source
// calling back into a lookup), takes its own.
constexpr std::size_t kReusedKeys = 2048;

struct ThreadKeys {
  std::unique_ptr<BlockHash[]> keys;
  bool in_use = false;
};
thread_local ThreadKeys thread_keys;

BlockHash* TakeKeys(std::size_t size, bool& owned) {
  if (size <= kReusedKeys && !thread_keys.in_use) {
    if (!thread_keys.keys) {
      // Zeroed once, at the thread's first lookup.
      thread_keys.keys.reset(new BlockHash[kReusedKeys]);
    }
    thread_keys.in_use = true;
    owned = false;
    return thread_keys.keys.get();
  }
  // malloc creates the keys (an implicit-lifetime type) without
  // initializing them; at least one byte so that null means failure.
  auto* keys = static_cast<BlockHash*>(
      std::malloc(std::max<std::size_t>(1, size * sizeof(BlockHash))));
  if (keys == nullptr) throw std::bad_alloc();
  owned = true;
  return keys;
}

}  // namespace

LazyKeys::LazyKeys(const KeySource& source)
    : source_(source),
      size_(source.size()),
      loaded_((size_ + kChunk * 64 - 1) / (kChunk * 64), 0),
      keys_(TakeKeys(size_, owned_)) {}

LazyKeys::~LazyKeys() {
  if (owned_) {
    std::free(keys_);
  } else {
    thread_keys.in_use = false;
  }
}

void LazyKeys::LoadChunk(std::size_t chunk) const {
  const std::size_t first = chunk * kChunk;
  const std::size_t n = std::min(kChunk, size_ - first);
  source_.Read(first, std::span(keys_ + first, n));
  loaded_[chunk / 64] |= std::uint64_t{1} << (chunk % 64);
  num_read_ += n;
}

}  // namespace hkv::internal
