// Helpers for the connector's tests: an engine that serves prompts through
// a CacheManager and a TierConnector and keeps what each block holds, so
// that a test can tell a part placed in the wrong block or carrying the
// wrong bytes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/tier_chain.h"
#include "hkv/tier_connector.h"

namespace hkv::testing {

// A chain of these stores in one test namespace.
template <typename... Stores>
TierChain ChainOf(Stores... stores) {
  std::vector<std::unique_ptr<ObjectStore>> list;
  (list.push_back(std::move(stores)), ...);
  return TierChain(
      {.ns = {.model = "test-model", .geometry = "test", .salt_domain = ""}},
      std::move(list));
}

// `n` tokens, distinct per `seed`.
inline std::vector<TokenId> Prompt(std::uint32_t n, std::uint32_t seed) {
  std::vector<TokenId> tokens(n);
  for (std::uint32_t i = 0; i < n; ++i) tokens[i] = seed * 100003 + i;
  return tokens;
}

// What an entry's block holds: its group, its boundary and its prefix.
inline std::string Content(GroupId group, std::uint32_t end,
                           const BlockHash& key) {
  std::string text = "g" + std::to_string(ToIndex(group)) + "@" +
                     std::to_string(end) + ":" + key.Hex(8);
  text.resize(48, '.');
  return text;
}

struct Served {
  std::uint32_t gpu_tokens = 0;     // the GPU's own hit
  std::uint32_t reused_tokens = 0;  // hit plus the tiers' tokens
  LoadState load = LoadState::kDone;
};

class Driver {
 public:
  // `config` is the cache's.
  Driver(const CacheConfig& config, CacheManager& cache,
         TierConnector& connector)
      : cache_(cache), connector_(connector) {
    for (const GroupSpec& group : config.groups) {
      recurrent_.push_back(group.kind == GroupKind::kRecurrent);
      block_sizes_.push_back(group.block_size);  // recurrent: not sharded
    }
  }

  std::uint32_t GpuHit(const std::vector<TokenId>& prompt) const {
    return cache_
        .Lookup(Request({.id = RequestId{999999}}, prompt, cache_.key_scheme()))
        .num_tokens;
  }

  // Serves `prompt` in chunks of at most `budget` tokens; stores it in the
  // tiers at the end when `store`. A failed load frees the request and
  // serves it again from a fresh lookup. None when the cache had no room.
  std::optional<Served> Run(const std::vector<TokenId>& prompt, bool store,
                            std::uint32_t budget = 8192) {
    Request r({.id = RequestId{next_id_++}}, prompt, cache_.key_scheme());
    Served served;
    for (int attempt = 0; attempt < 3; ++attempt) {
      const TierHit th = connector_.Lookup(cache_, r);
      served.gpu_tokens = th.gpu_tokens;
      served.reused_tokens = th.hit.num_tokens + th.num_external_tokens;
      served.load = LoadState::kDone;
      if (!Prefill(r, th, budget, served)) return std::nullopt;
      if (served.load == LoadState::kDone) break;
      cache_.Free(r.id());
      cache_.FinishStep();
    }
    if (store) {
      connector_.Store(cache_, r, [this](GroupId g, BlockId b) {
        return memory_[{ToIndex(g), ToIndex(b)}];
      });
    }
    cache_.Free(r.id());
    cache_.FinishStep();
    return served;
  }

 private:
  bool Prefill(const Request& r, const TierHit& th, std::uint32_t budget,
               Served& served) {
    std::uint32_t done = served.reused_tokens;
    bool first = true;
    while (first || done < r.num_tokens()) {
      const std::uint32_t want = std::min(budget, r.num_tokens() - done);
      std::uint32_t n = cache_.SplitPrefill(
          r, {.num_computed_tokens = done,
              .num_new_tokens = want,
              .max_num_scheduled_tokens = budget,
              .shared_prefix_boundary = th.hit.shared_prefix_boundary});
      if (n == 0) n = want;
      const std::optional<NewBlocks> placed =
          first ? cache_.Allocate(r, {.num_external_computed_tokens =
                                          th.num_external_tokens,
                                      .num_new_tokens = n,
                                      .hit = &th.hit})
                : cache_.Allocate(
                      r, {.num_computed_tokens = done, .num_new_tokens = n});
      if (!placed) return false;
      ApplyCopies();
      const bool loads = first && th.num_external_tokens > 0;
      if (loads) {
        const TierLoad load = connector_.Load(cache_, r, th, *placed);
        served.load = load.state;
        if (load.state == LoadState::kFailed) return true;
        for (const PartLoad& part : load.parts)
          memory_[{ToIndex(part.group), ToIndex(part.block)}] = part.bytes;
        ExpectStatesLoaded(r, done, placed->state_exports);
      }
      first = false;
      Compute(r, done, done + n);  // its commit registers the loaded tokens
      if (loads) ExpectEntriesHold(r, th.hit.num_tokens, done);
      done += n;
    }
    return true;
  }

  void ApplyCopies() {
    for (const BlockCopy& copy : cache_.TakeCopies()) {
      memory_[{ToIndex(copy.group), ToIndex(copy.destination)}] =
          memory_[{ToIndex(copy.group), ToIndex(copy.source)}];
    }
  }

  // The step computes (from, to]: every entry the commit registers there
  // holds its content.
  void Compute(const Request& r, std::uint32_t from, std::uint32_t to) {
    cache_.Commit(r, to);
    for (const CachedEntry& e : cache_.CachedEntries(r)) {
      if (e.end_tokens <= from || e.end_tokens > to) continue;
      memory_[{ToIndex(e.group), ToIndex(e.block)}] =
          Content(e.group, e.end_tokens, KeyAt(r, e.end_tokens));
    }
    cache_.FinishStep();
  }

  // Every entry registered in (from, to] holds its content: a state
  // exactly, a page the request's tokens up to its end or further (a
  // partial page serves every boundary up to the tokens it holds).
  void ExpectEntriesHold(const Request& r, std::uint32_t from,
                         std::uint32_t to) {
    for (const CachedEntry& e : cache_.CachedEntries(r)) {
      if (e.end_tokens <= from || e.end_tokens > to) continue;
      const std::string& held = memory_[{ToIndex(e.group), ToIndex(e.block)}];
      const std::uint32_t held_end = EndOf(held);
      const bool exact =
          held == Content(e.group, e.end_tokens, KeyAt(r, e.end_tokens));
      const bool longer_page =
          !recurrent_[ToIndex(e.group)] && held_end > e.end_tokens &&
          held_end <= r.num_tokens() &&
          held == Content(e.group, held_end, KeyAt(r, held_end));
      EXPECT_TRUE(exact || longer_page)
          << "group " << ToIndex(e.group) << " entry at " << e.end_tokens
          << " holds " << held;
    }
  }

  // Every recurrent group's next step reads the state at `end`: the first
  // block placed at or after the slot of the state after `end` tokens that
  // is not a checkpoint's export (which the step writes, not reads).
  void ExpectStatesLoaded(const Request& r, std::uint32_t end,
                          std::span<const StateExport> exports) {
    for (std::uint32_t g = 0; g < block_sizes_.size(); ++g) {
      if (!recurrent_[g]) continue;
      const std::span<const BlockId> table =
          cache_.block_table(r.id(), GroupId{g});
      const auto exported = [&](BlockId id) {
        return std::any_of(exports.begin(), exports.end(),
                           [&](const StateExport& e) { return e.block == id; });
      };
      std::size_t i = (end + block_sizes_[g] - 1) / block_sizes_[g] - 1;
      while (i < table.size() && (table[i] == kNullBlock || exported(table[i])))
        ++i;
      ASSERT_LT(i, table.size()) << "group " << g;
      EXPECT_EQ((memory_[{g, ToIndex(table[i])}]),
                Content(GroupId{g}, end, KeyAt(r, end)))
          << "group " << g << " state at " << end;
    }
  }

  // The boundary a Content string names; 0 for none.
  static std::uint32_t EndOf(const std::string& content) {
    const std::size_t at = content.find('@');
    if (at == std::string::npos) return 0;
    return static_cast<std::uint32_t>(std::stoul(content.substr(at + 1)));
  }

  BlockHash KeyAt(const Request& r, std::uint32_t end) const {
    return r.keys()[end / cache_.key_scheme().hash_unit - 1];
  }

  CacheManager& cache_;
  TierConnector& connector_;
  std::vector<bool> recurrent_;  // by group
  std::vector<std::uint32_t> block_sizes_;
  std::uint64_t next_id_ = 1;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> memory_;
};

}  // namespace hkv::testing
