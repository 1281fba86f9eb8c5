// A brute-force model of a single-group full-attention cache, for property
// tests. It keeps, for every block id, the token prefixes the block proves
// (its registrations) and computes hits from first principles: position p is
// resumable when every full block before p is proven by some cached block
// holding exactly that prefix of the request, and, when p ends inside a page,
// some cached block of that page proves a prefix of the request reaching at
// least p. The free queue is a std::list following spec §1.3 literally (or,
// with FreeOrder::kAppendAll, appending every freed block).
//
// It mirrors the real cache's observable choices (which duplicate a lookup
// returns, which ids an allocation pops) so a test can compare both exactly.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <vector>

#include "hkv/cache_manager.h"

namespace hkv::testing {

struct ModelConfig {
  std::uint32_t block_size;
  std::uint32_t hash_unit;
  std::uint32_t num_blocks;
  bool eagle;
  FreeOrder free_order = FreeOrder::kPrependUncached;
};

struct ModelHit {
  std::uint32_t num_tokens = 0;
  std::vector<BlockId> blocks;
};

class CacheModel {
 public:
  explicit CacheModel(const ModelConfig& config);

  // The hit for `tokens` (max num_tokens - 1), with the block the real
  // lookup must pick for each page: the first-registered block proving the
  // page's longest usable prefix.
  ModelHit Lookup(const std::vector<TokenId>& tokens) const;

  // Returns the ids the allocation places (copy-on-write destination first),
  // or std::nullopt when blocks are short (nothing changes then).
  std::optional<std::vector<BlockId>> Allocate(RequestId id,
                                               std::uint32_t num_computed,
                                               std::uint32_t num_slots,
                                               const ModelHit* hit);
  void Commit(RequestId id, const std::vector<TokenId>& tokens,
              std::uint32_t num_prompt, std::uint32_t num_tokens);
  void Free(RequestId id);
  std::vector<BlockCopy> TakeCopies();
  void FinishStep();

  std::vector<BlockId> FreeQueue() const {
    return {free_.begin(), free_.end()};
  }
  std::uint32_t ref_count(BlockId id) const {
    return blocks_[ToIndex(id)].ref_count;
  }
  // Longest prefix the block proves; 0 when none.
  std::uint32_t longest_proof(BlockId id) const;
  bool holds(RequestId id) const { return requests_.contains(id); }

 private:
  struct Proof {
    std::vector<TokenId> tokens;
    std::uint64_t order;  // registration order, for first-inserted-wins
  };
  struct Block {
    std::uint32_t ref_count = 0;
    std::vector<Proof> proofs;
  };
  struct Table {
    std::vector<BlockId> blocks;
    std::uint32_t committed = 0;
  };

  std::uint32_t alignment() const {
    return config_.hash_unit < config_.block_size ? config_.hash_unit
                                                  : config_.block_size;
  }
  // The first-registered block proving tokens[0, len), if any.
  std::optional<BlockId> Prover(const std::vector<TokenId>& tokens,
                                std::uint32_t len) const;
  bool Resumable(const std::vector<TokenId>& tokens, std::uint32_t p) const;
  // The block of page `page` proving the longest prefix of `tokens` that
  // reaches at least `p` (and at most what the request holds).
  std::optional<BlockId> PageProver(const std::vector<TokenId>& tokens,
                                    std::uint32_t page, std::uint32_t p) const;
  BlockId Pop();
  void Touch(BlockId id);
  void Release(const std::vector<BlockId>& ordered);
  void Register(BlockId id, const std::vector<TokenId>& tokens,
                std::uint32_t len, bool partial);

  ModelConfig config_;
  std::vector<Block> blocks_;
  std::list<BlockId> free_;
  std::map<RequestId, Table> requests_;
  std::vector<BlockCopy> copies_;
  std::vector<BlockId> pending_pins_;
  std::vector<BlockId> taken_pins_;
  std::uint64_t next_order_ = 0;
};

}  // namespace hkv::testing
