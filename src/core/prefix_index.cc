#include "core/prefix_index.h"

#include <algorithm>

namespace hkv::internal {

bool PrefixIndex::Contains(const PrefixKey& key, BlockId block) const {
  auto it = map_.find(key);
  return it != map_.end() && std::find(it->second.begin(), it->second.end(),
                                       block) != it->second.end();
}

void PrefixIndex::Insert(const PrefixKey& key, BlockId block) {
  map_[key].push_back(block);
}

bool PrefixIndex::Erase(const PrefixKey& key, BlockId block) {
  auto it = map_.find(key);
  if (it == map_.end()) return false;
  auto& blocks = it->second;
  auto pos = std::find(blocks.begin(), blocks.end(), block);
  if (pos == blocks.end()) return false;
  blocks.erase(pos);
  if (blocks.empty()) map_.erase(it);
  return true;
}

std::size_t PrefixIndex::NumEntries() const {
  std::size_t n = 0;
  for (const auto& [key, blocks] : map_) n += blocks.size();
  return n;
}

}  // namespace hkv::internal
