// A long steady-state run of prefills on one cache, shared by the benchmarks
// at 10^6 blocks: each request is looked up, allocated (adopting its hit),
// committed, and kept running until kRunning newer ones are; then freed.
// Once the pool is full, every allocation evicts cached blocks, so the run
// keeps registering new keys and evicting old ones however long it lasts.
#pragma once

#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "common.h"
#include "hkv/cache_manager.h"
#include "hkv/request.h"

namespace hkv::bench {

enum class Call { kLookup, kAllocate, kCommit, kFree };

class SteadyWorkload {
 public:
  static constexpr std::uint32_t kBlock = 16;
  static constexpr std::uint32_t kPromptTokens = 2048;  // 128 blocks
  // Half the prompts start with one of kPrefixes shared prefixes of
  // kSharedTokens tokens (a 64-block hit); the rest share nothing.
  static constexpr std::uint32_t kPrefixes = 64;
  static constexpr std::uint32_t kSharedTokens = 1024;
  static constexpr std::size_t kRunning = 16;

  static CacheConfig Config(std::uint32_t num_blocks) {
    return {.groups = {{.block_size = kBlock}},
            .num_blocks = num_blocks,
            .keys = {.hash_unit = kBlock}};
  }

  SteadyWorkload() {
    for (std::uint32_t i = 0; i < kPrefixes; ++i) {
      prefixes_.push_back(RandomTokens(kSharedTokens, 1000 + i));
    }
    tokens_.reserve(kPromptTokens);
  }
  SteadyWorkload(const SteadyWorkload&) = delete;
  SteadyWorkload& operator=(const SteadyWorkload&) = delete;

  // Admits one new request (and frees the oldest running one past
  // kRunning), calling timer(Call, f) around each cache call f. Returns
  // false when the pool could not hold the request.
  template <typename Timer>
  bool Step(CacheManager& cache, Timer&& timer) {
    NextPrompt();
    const Request& request =
        running_.emplace_back(RequestOptions{.id = RequestId{next_id_++}},
                              tokens_, cache.key_scheme());
    const std::uint32_t n = request.num_tokens();
    CacheHit hit;
    timer(Call::kLookup, [&] { hit = cache.Lookup(request); });
    bool allocated = false;
    timer(Call::kAllocate, [&] {
      allocated = cache
                      .Allocate(request, {.num_new_tokens = n - hit.num_tokens,
                                          .hit = &hit})
                      .has_value();
    });
    if (!allocated) return false;
    timer(Call::kCommit, [&] { cache.Commit(request, n); });
    if (running_.size() > kRunning) {
      const RequestId oldest = running_.front().id();
      timer(Call::kFree, [&] { cache.Free(oldest); });
      running_.pop_front();
    }
    cache.FinishStep();
    return true;
  }

  // Frees every running request: all their blocks stay cached.
  void FreeAll(CacheManager& cache) {
    for (const Request& request : running_) cache.Free(request.id());
    running_.clear();
  }

 private:
  void NextPrompt() {
    tokens_.clear();
    if (generator_() % 2 == 0) {
      const std::vector<TokenId>& prefix = prefixes_[generator_() % kPrefixes];
      tokens_.insert(tokens_.end(), prefix.begin(), prefix.end());
    }
    while (tokens_.size() < kPromptTokens) {
      tokens_.push_back(static_cast<TokenId>(generator_() % kVocabSize));
    }
  }

  std::vector<std::vector<TokenId>> prefixes_;
  std::vector<TokenId> tokens_;
  std::deque<Request> running_;
  std::mt19937 generator_{42};
  std::uint64_t next_id_ = 1;
};

}  // namespace hkv::bench
