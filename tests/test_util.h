// Helpers shared by the cache tests: token lists in the spec's notation and
// a driver that looks up, allocates and commits like the reference
// scheduler's allocate_slots (which caches the scheduled tokens).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache_core.h"
#include "hkv/key_source.h"
#include "hkv/request.h"

namespace hkv::testing {

// A request's keys as a KeySource, counting the keys read.
class CountingKeys : public KeySource {
 public:
  explicit CountingKeys(std::span<const BlockHash> keys) : keys_(keys) {}
  std::size_t size() const override { return keys_.size(); }
  void Read(std::size_t first, std::span<BlockHash> out) const override {
    std::copy_n(keys_.begin() + static_cast<std::ptrdiff_t>(first), out.size(),
                out.begin());
    num_read_ += out.size();
  }
  std::size_t num_read() const { return num_read_; }

 private:
  std::span<const BlockHash> keys_;
  mutable std::size_t num_read_ = 0;
};

// Whether LookupKeys over `request`'s keys gives the hit Lookup gave.
inline bool SameAsLookupKeys(const internal::CacheCore& cache,
                             const Request& request, const CacheHit& hit) {
  const CacheHit lazy =
      cache.LookupKeys(request.id(), request.num_tokens(),
                       CountingKeys(request.keys()), request.cache_read());
  return lazy.num_tokens == hit.num_tokens && lazy.blocks == hit.blocks &&
         lazy.chain_tokens == hit.chain_tokens &&
         lazy.miss_cause == hit.miss_cause &&
         lazy.limiting_group == hit.limiting_group &&
         lazy.key_generation == hit.key_generation &&
         lazy.origin.cache == hit.origin.cache &&
         lazy.origin.request == hit.origin.request &&
         lazy.origin.num_tokens == hit.origin.num_tokens &&
         lazy.origin.key == hit.origin.key;
}

// Full attention and a recurrent group, both 16 tokens a block and a key,
// in a pool of 64 blocks.
inline CacheConfig FullAndRecurrent16() {
  return {.groups = {{.kind = GroupKind::kFullAttention, .block_size = 16},
                     {.kind = GroupKind::kRecurrent, .block_size = 16}},
          .num_blocks = 64,
          .keys = {.hash_unit = 16}};
}

// [value] * count
inline std::vector<TokenId> Repeat(TokenId value, std::uint32_t count) {
  return std::vector<TokenId>(count, value);
}

// range(from, to)
inline std::vector<TokenId> Range(TokenId from, TokenId to) {
  std::vector<TokenId> v(to - from);
  std::iota(v.begin(), v.end(), from);
  return v;
}

inline std::vector<TokenId> Concat(std::vector<TokenId> a,
                                   const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// `text` as a test-name identifier: letters and digits, other runs as '_'
// ("input_length" is 0 -> input_length_is_0).
inline std::string Identifier(std::string_view text) {
  std::string name;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      name += c;
    } else if (!name.empty() && name.back() != '_') {
      name += '_';
    }
  }
  while (!name.empty() && name.back() == '_') name.pop_back();
  return name;
}

inline std::vector<BlockId> Ids(std::initializer_list<std::uint32_t> ids) {
  std::vector<BlockId> out;
  for (std::uint32_t id : ids) out.push_back(BlockId{id});
  return out;
}

inline std::vector<BlockId> Table(const internal::CacheCore& cache,
                                  RequestId id, std::uint32_t group = 0) {
  auto table = cache.block_table(id, GroupId{group});
  return {table.begin(), table.end()};
}

// Allocates `num_new` tokens after `num_computed` (plus the adopted `hit`)
// and commits what that covers, capped at the request's tokens. Returns the
// new blocks of group 0, or std::nullopt.
inline std::optional<std::vector<BlockId>> AllocateAndCommit(
    internal::CacheCore& cache, const Request& r, std::uint32_t num_new,
    const CacheHit* hit = nullptr, std::uint32_t num_computed = 0) {
  std::optional<NewBlocks> placed =
      cache.Allocate(r, {.num_computed_tokens = num_computed,
                         .num_new_tokens = num_new,
                         .hit = hit});
  if (!placed) return std::nullopt;
  const std::uint32_t hit_tokens = hit ? hit->num_tokens : 0;
  cache.Commit(r, num_computed + hit_tokens + num_new);
  return placed->blocks[0];
}

}  // namespace hkv::testing
