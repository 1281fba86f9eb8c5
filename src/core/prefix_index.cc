#include "core/prefix_index.h"

#include <algorithm>

#include "check.h"

namespace hkv::internal {
namespace {

constexpr std::size_t kInitialSlots = 64;

}  // namespace

PrefixIndex::PrefixIndex() : slots_(kInitialSlots), mask_(kInitialSlots - 1) {}

std::size_t PrefixIndex::SlotOf(const PrefixKey& key) const {
  std::size_t i = Home(key);
  while (slots_[i].block != kNullBlock && !(slots_[i].key == key))
    i = (i + 1) & mask_;
  return i;
}

bool PrefixIndex::Contains(const PrefixKey& key, BlockId block) const {
  const Slot& slot = slots_[SlotOf(key)];
  if (slot.block == kNullBlock) return false;
  if (slot.block == block) return true;
  auto it = duplicates_.find(key);
  return it != duplicates_.end() &&
         std::find(it->second.begin(), it->second.end(), block) !=
             it->second.end();
}

void PrefixIndex::Insert(const PrefixKey& key, BlockId block) {
  HKV_DCHECK(block != kNullBlock);
  Slot& slot = slots_[SlotOf(key)];
  if (slot.block != kNullBlock) {
    duplicates_[key].push_back(block);
    return;
  }
  slot = {.key = key, .block = block};
  // At most 3/8 full: most keys then sit in their home slot, which keeps
  // the lookup loop free of mispredicted branches (2x faster than at 3/4).
  if (++size_ * 8 > slots_.size() * 3) Grow();
}

bool PrefixIndex::Erase(const PrefixKey& key, BlockId block) {
  const std::size_t i = SlotOf(key);
  if (slots_[i].block == kNullBlock) return false;
  auto dup = duplicates_.find(key);
  if (slots_[i].block == block) {
    if (dup == duplicates_.end()) {
      RemoveSlot(i);
      --size_;
    } else {
      slots_[i].block = dup->second.front();
      dup->second.erase(dup->second.begin());
      if (dup->second.empty()) duplicates_.erase(dup);
    }
    return true;
  }
  if (dup == duplicates_.end()) return false;
  auto pos = std::find(dup->second.begin(), dup->second.end(), block);
  if (pos == dup->second.end()) return false;
  dup->second.erase(pos);
  if (dup->second.empty()) duplicates_.erase(dup);
  return true;
}

void PrefixIndex::RemoveSlot(std::size_t hole) {
  // Backward-shift deletion: a later member of the run moves into the hole
  // unless its home lies cyclically in (hole, j].
  for (std::size_t j = (hole + 1) & mask_; slots_[j].block != kNullBlock;
       j = (j + 1) & mask_) {
    const std::size_t home = Home(slots_[j].key);
    const bool stays =
        hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    hole = j;
  }
  slots_[hole] = Slot{};
}

void PrefixIndex::Grow() {
  std::vector<Slot> old =
      std::exchange(slots_, std::vector<Slot>(2 * slots_.size()));
  mask_ = slots_.size() - 1;
  for (const Slot& slot : old) {
    if (slot.block != kNullBlock) slots_[SlotOf(slot.key)] = slot;
  }
}

void PrefixIndex::Clear() {
  slots_.assign(kInitialSlots, Slot{});
  mask_ = kInitialSlots - 1;
  size_ = 0;
  duplicates_.clear();
}

std::size_t PrefixIndex::NumEntries() const {
  std::size_t n = size_;
  for (const auto& [key, blocks] : duplicates_) n += blocks.size();
  return n;
}

}  // namespace hkv::internal
