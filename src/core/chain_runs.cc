#include "core/chain_runs.h"

#include <algorithm>

#include "check.h"

namespace hkv::internal {

ChainRuns::ChainRuns(std::uint32_t num_blocks) : members_(num_blocks) {}

void ChainRuns::Append(BlockId block, std::uint32_t depth, BlockId previous) {
  HKV_DCHECK(block != kNullBlock && ToIndex(block) < members_.size());
  HKV_DCHECK(members_[ToIndex(block)].run == kNoRun);
  if (depth == 0) {
    StartRun(block, 0, kNoRun);
    return;
  }
  if (previous == kNullBlock) return;
  const Member at = members_[ToIndex(previous)];
  if (at.run == kNoRun) return;
  Run& run = runs_[at.run];
  HKV_DCHECK(run.first_depth + at.offset + 1 == depth);
  if (!run.sealed && at.offset + 1 == run.ids.size()) {
    members_[ToIndex(block)] = {.run = at.run, .offset = at.offset + 1};
    run.ids.push_back(block);
    return;
  }
  StartRun(block, depth, at.run);
}

void ChainRuns::StartRun(BlockId block, std::uint32_t depth,
                         std::uint32_t parent) {
  std::uint32_t index;
  if (!free_runs_.empty()) {
    index = free_runs_.back();
    free_runs_.pop_back();
  } else {
    index = static_cast<std::uint32_t>(runs_.size());
    runs_.emplace_back();
  }
  Run& run = runs_[index];
  run.stamp = next_stamp_++;
  run.first_depth = depth;
  run.parent = parent;
  run.parent_stamp = parent == kNoRun ? 0 : runs_[parent].stamp;
  run.sealed = false;
  run.ids.assign(1, block);
  members_[ToIndex(block)] = {.run = index, .offset = 0};
  ++num_runs_;
}

void ChainRuns::Forget(BlockId block) {
  const Member at = members_[ToIndex(block)];
  if (at.run == kNoRun) return;
  Run& run = runs_[at.run];
  for (std::size_t i = at.offset; i < run.ids.size(); ++i) {
    members_[ToIndex(run.ids[i])] = Member{};
  }
  run.ids.resize(at.offset);
  run.sealed = true;
  if (run.ids.empty()) {
    FreeRun(at.run);
  } else if (run.ids.size() < run.ids.capacity() / 4) {
    // A sealed run never grows again: give the room back, once it is
    // mostly spare (so cutting one member at a time stays O(1) amortized).
    std::vector<BlockId>(run.ids.begin(), run.ids.end()).swap(run.ids);
  }
}

void ChainRuns::FreeRun(std::uint32_t index) {
  Run& run = runs_[index];
  // Released, not kept: a free slot holds no capacity, so the runs' ids
  // stay bounded by the members.
  std::vector<BlockId>().swap(run.ids);
  run.stamp = 0;
  run.parent = kNoRun;
  free_runs_.push_back(index);
  --num_runs_;
}

bool ChainRuns::Certified(BlockId block, std::uint32_t depth) const {
  const Member at = members_[ToIndex(block)];
  if (at.run == kNoRun) return false;
  const Run* run = &runs_[at.run];
  if (run->first_depth + at.offset != depth) return false;
  while (run->first_depth > 0) {
    if (run->parent == kNoRun) return false;
    const Run& parent = runs_[run->parent];
    if (parent.stamp != run->parent_stamp) return false;  // freed since
    // The parent was linked holding first_depth - 1; cut below it since?
    if (parent.first_depth + parent.ids.size() < run->first_depth) {
      return false;
    }
    run = &parent;
  }
  return true;
}

void ChainRuns::AppendChain(BlockId block, std::uint32_t depth,
                            std::vector<BlockId>& out) const {
  HKV_DCHECK(Certified(block, depth));
  const Member at = members_[ToIndex(block)];
  const Run* run = &runs_[at.run];
  if (run->first_depth == 0) {
    // Not grown by nulls first: a vector fills them one at a time (a
    // third of a warm hybrid lookup's time), then the copy overwrites them.
    out.insert(out.end(), run->ids.begin(), run->ids.begin() + depth + 1);
    return;
  }
  const std::size_t start = out.size();
  out.insert(out.end(), std::size_t{depth} + 1, kNullBlock);
  BlockId* chain = out.data() + start;
  std::uint32_t end = depth + 1;  // depths [run->first_depth, end) from run
  for (;;) {
    const std::uint32_t first = run->first_depth;
    std::copy_n(run->ids.data(), end - first, chain + first);
    if (first == 0) return;
    end = first;
    run = &runs_[run->parent];
  }
}

void ChainRuns::Clear() {
  std::fill(members_.begin(), members_.end(), Member{});
  runs_.clear();
  free_runs_.clear();
  num_runs_ = 0;
}

std::size_t ChainRuns::MemoryBytes() const {
  std::size_t ids = 0;
  for (const Run& run : runs_) ids += run.ids.capacity();
  return members_.capacity() * sizeof(Member) + runs_.capacity() * sizeof(Run) +
         free_runs_.capacity() * sizeof(std::uint32_t) + ids * sizeof(BlockId);
}

bool ChainRuns::CheckInvariants() const {
  std::size_t members = 0;
  std::size_t live = 0;
  for (std::uint32_t r = 0; r < runs_.size(); ++r) {
    const Run& run = runs_[r];
    if (run.stamp == 0) {
      if (!run.ids.empty()) return false;
      continue;
    }
    ++live;
    if (run.ids.empty() || run.stamp >= next_stamp_) return false;
    if ((run.first_depth == 0) != (run.parent == kNoRun)) return false;
    if (run.parent != kNoRun &&
        (run.parent >= runs_.size() || run.parent_stamp >= run.stamp)) {
      return false;
    }
    for (std::uint32_t i = 0; i < run.ids.size(); ++i) {
      const BlockId id = run.ids[i];
      if (id == kNullBlock || ToIndex(id) >= members_.size()) return false;
      const Member& m = members_[ToIndex(id)];
      if (m.run != r || m.offset != i) return false;
    }
    members += run.ids.size();
  }
  const auto is_member = [](const Member& m) { return m.run != kNoRun; };
  return live == num_runs_ && live + free_runs_.size() == runs_.size() &&
         static_cast<std::size_t>(std::count_if(
             members_.begin(), members_.end(), is_member)) == members &&
         !is_member(members_[0]);
}

}  // namespace hkv::internal
