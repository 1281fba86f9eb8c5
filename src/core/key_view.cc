#include "core/key_view.h"

#include <algorithm>
#include <new>

namespace hkv::internal {

LazyKeys::LazyKeys(const KeySource& source)
    : source_(source),
      size_(source.size()),
      // malloc creates the keys (an implicit-lifetime type) without
      // initializing them; at least one byte so that null means failure.
      keys_(static_cast<BlockHash*>(
          std::malloc(std::max<std::size_t>(1, size_ * sizeof(BlockHash))))),
      loaded_((size_ + kChunk * 64 - 1) / (kChunk * 64), 0) {
  if (keys_ == nullptr) throw std::bad_alloc();
}

void LazyKeys::LoadChunk(std::size_t chunk) const {
  const std::size_t first = chunk * kChunk;
  const std::size_t n = std::min(kChunk, size_ - first);
  source_.Read(first, std::span(keys_.get() + first, n));
  loaded_[chunk / 64] |= std::uint64_t{1} << (chunk % 64);
  num_read_ += n;
}

}  // namespace hkv::internal
