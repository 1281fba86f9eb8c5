#include "hkv/cache_manager.h"

#include <string>

#include "cache/cache_core.h"

namespace hkv {
namespace {

Result<void> Invalid(std::string message) {
  return Fail(ErrorCode::kInvalidArgument, std::move(message));
}

}  // namespace

Result<void> CacheConfig::Validate() const {
  if (groups.empty()) return Invalid("a cache needs at least one group");
  // TODO(#3): hybrid models: several groups and kinds reconciled by the
  // coordinator.
  if (groups.size() > 1)
    return Invalid("more than one cache group is not supported yet");
  if (num_blocks < 2) {
    return Invalid(
        "num_blocks must be at least 2 (the null block and one usable block), "
        "got " +
        std::to_string(num_blocks));
  }
  if (keys.hash_unit == 0) return Invalid("hash unit must be at least 1 token");
  if (max_model_len == 0)
    return Invalid("max_model_len must be at least 1 token");
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const GroupSpec& group = groups[i];
    const std::string name = "group " + std::to_string(i) + ": ";
    const std::uint32_t b = group.block_size;
    if (b == 0 || b % keys.hash_unit != 0) {
      return Invalid(name + "block size " + std::to_string(b) +
                     " is not a positive multiple of the hash unit " +
                     std::to_string(keys.hash_unit));
    }
    if (group.kind == GroupKind::kSlidingWindow) {
      if (group.sliding_window == 0)
        return Invalid(name + "sliding window must be >= 1");
      // TODO(#3): fine-grained sliding-window hits (hash unit finer than the
      // block).
      if (keys.hash_unit != b) {
        return Invalid(
            name +
            "a sliding-window group needs hash unit == block size for now");
      }
    }
  }
  return {};
}

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
std::optional<NewBlocks> CacheManager::Allocate(const Request& request,
                                                const AllocationRequest& args) {
  return impl_->core.Allocate(request, args);
}
void CacheManager::Commit(const Request& request,
                          std::uint32_t num_computed_tokens) {
  impl_->core.Commit(request, num_computed_tokens);
}
void CacheManager::Free(RequestId id) { impl_->core.Free(id); }
std::vector<BlockCopy> CacheManager::TakeCopies() {
  return impl_->core.TakeCopies();
}
void CacheManager::FinishStep() { impl_->core.FinishStep(); }
bool CacheManager::ResetPrefixCache() { return impl_->core.ResetPrefixCache(); }
std::vector<KvEvent> CacheManager::TakeEvents() {
  return impl_->core.TakeEvents();
}
PrefixCacheStats CacheManager::TakeStats() { return impl_->core.TakeStats(); }
PoolCounters CacheManager::counters() const {
  return {.evicted_blocks = impl_->core.pool().stats().evicted_blocks};
}
double CacheManager::usage() const { return impl_->core.pool().usage(); }
std::uint32_t CacheManager::num_free_blocks() const {
  return impl_->core.pool().num_free_blocks();
}
std::span<const BlockId> CacheManager::block_table(RequestId id,
                                                   GroupId group) const {
  return impl_->core.block_table(id, group);
}

}  // namespace hkv
