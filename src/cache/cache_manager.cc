#include "hkv/cache_manager.h"

#include <string>

#include "cache/cache_core.h"
#include "check.h"

namespace hkv {
struct CacheManager::Impl {
  explicit Impl(const CacheConfig& config) : core(config) {}
  internal::CacheCore core;
};

Result<CacheManager> CacheManager::Create(const CacheConfig& config) {
  if (Result<void> valid = config.Validate(); !valid)
    return tl::unexpected(valid.error());
  return CacheManager(std::make_unique<Impl>(config));
}

CacheManager::CacheManager(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
CacheManager::CacheManager(CacheManager&&) noexcept = default;
CacheManager& CacheManager::operator=(CacheManager&&) noexcept = default;
CacheManager::~CacheManager() = default;

const KeyScheme& CacheManager::key_scheme() const {
  return impl_->core.key_scheme();
}
std::uint32_t CacheManager::num_groups() const {
  return impl_->core.num_groups();
}
CacheHit CacheManager::Lookup(const Request& request) const {
  return impl_->core.Lookup(request);
}
CacheHit CacheManager::LookupKeys(RequestId id, std::uint32_t num_tokens,
                                  const KeySource& keys,
                                  CacheRead cache_read) const {
  return impl_->core.LookupKeys(id, num_tokens, keys, cache_read);
}
std::optional<NewBlocks> CacheManager::Allocate(const Request& request,
                                                const AllocationRequest& args) {
  return impl_->core.Allocate(request, args);
}
CacheHit CacheManager::TruncateHit(const CacheHit& hit,
                                   std::uint32_t num_tokens) const {
  return impl_->core.TruncateHit(hit, num_tokens);
}

std::uint32_t CacheManager::SplitPrefill(const Request& request,
                                         const PrefillChunk& chunk) const {
  return impl_->core.SplitPrefill(request, chunk);
}
void CacheManager::Commit(const Request& request,
                          std::uint32_t num_computed_tokens) {
  impl_->core.Commit(request, num_computed_tokens);
}
void CacheManager::Free(RequestId id) { impl_->core.Free(id); }
std::vector<BlockCopy> CacheManager::TakeCopies() {
  return impl_->core.TakeCopies();
}
PoolMoves CacheManager::TakePoolMoves() { return impl_->core.TakePoolMoves(); }
void CacheManager::FinishStep() { impl_->core.FinishStep(); }
bool CacheManager::ResetPrefixCache() { return impl_->core.ResetPrefixCache(); }
std::vector<KvEvent> CacheManager::TakeEvents() {
  return impl_->core.TakeEvents();
}
PrefixCacheStats CacheManager::TakeStats() { return impl_->core.TakeStats(); }
PoolCounters CacheManager::counters() const {
  const internal::PoolStats& stats = impl_->core.pool().stats();
  return {.evicted_blocks = stats.evicted_blocks,
          .parked_blocks = stats.parked_blocks};
}
double CacheManager::usage() const { return impl_->core.pool().usage(); }
std::uint32_t CacheManager::num_block_ids() const {
  return impl_->core.pool().num_blocks();
}
std::uint32_t CacheManager::num_free_blocks() const {
  return impl_->core.pool().num_free_blocks();
}
std::vector<std::pair<GroupId, BlockHash>> CacheManager::CachedKeys() const {
  return impl_->core.CachedKeys();
}
std::vector<std::uint64_t> CacheManager::CachedBlocksPerGroup() const {
  return impl_->core.CachedBlocksPerGroup();
}
bool CacheManager::HoldsEntry(GroupId group, const BlockHash& key) const {
  return impl_->core.HoldsEntry(group, key);
}
std::vector<CachedEntry> CacheManager::CachedEntries(
    const Request& request) const {
  return impl_->core.CachedEntries(request);
}
std::uint32_t CacheManager::ref_count(BlockId id) const {
  HKV_REQUIRE(ToIndex(id) < impl_->core.pool().num_blocks(),
              "block id out of range");
  return impl_->core.pool().ref_count(id);
}
std::optional<std::pair<GroupId, BlockHash>> CacheManager::BlockKey(
    BlockId id) const {
  return impl_->core.BlockKey(id);
}
std::vector<BlockId> CacheManager::FreeQueue() const {
  return impl_->core.pool().FreeQueueSnapshot();
}
std::optional<BlockId> CacheManager::FindCached(GroupId group,
                                                const BlockHash& key) const {
  return impl_->core.FindCached(group, key);
}
std::size_t CacheManager::num_cached_entries() const {
  return impl_->core.pool().num_keys();
}
void CacheManager::EvictBlocks(std::span<const BlockId> ids) {
  impl_->core.EvictBlocks(ids);
}
std::uint32_t CacheManager::NumCommonPrefixBlocks(RequestId id,
                                                  GroupId group) const {
  return impl_->core.NumCommonPrefixBlocks(id, group);
}
void CacheManager::RemoveSkippedBlocks(RequestId id,
                                       std::uint32_t num_computed_tokens) {
  impl_->core.RemoveSkippedBlocks(id, num_computed_tokens);
}
std::span<const BlockId> CacheManager::block_table(RequestId id,
                                                   GroupId group) const {
  return impl_->core.block_table(id, group);
}

}  // namespace hkv
