#include "cache_model.h"

#include <algorithm>
#include <functional>

namespace hkv::testing {
namespace {

bool IsPrefixOf(const std::vector<TokenId>& proof,
                const std::vector<TokenId>& tokens) {
  return proof.size() <= tokens.size() &&
         std::equal(proof.begin(), proof.end(), tokens.begin());
}

}  // namespace

CacheModel::CacheModel(const ModelConfig& config)
    : config_(config), blocks_(config.num_blocks) {
  for (std::uint32_t i = 1; i < config.num_blocks; ++i)
    free_.push_back(BlockId{i});
}

std::uint32_t CacheModel::longest_proof(BlockId id) const {
  std::size_t longest = 0;
  for (const Proof& p : blocks_[ToIndex(id)].proofs)
    longest = std::max(longest, p.tokens.size());
  return static_cast<std::uint32_t>(longest);
}

std::optional<BlockId> CacheModel::Prover(const std::vector<TokenId>& tokens,
                                          std::uint32_t len) const {
  std::optional<BlockId> best;
  std::uint64_t best_order = 0;
  for (std::uint32_t i = 1; i < blocks_.size(); ++i) {
    for (const Proof& p : blocks_[i].proofs) {
      if (p.tokens.size() != len || !IsPrefixOf(p.tokens, tokens)) continue;
      if (!best || p.order < best_order) {
        best = BlockId{i};
        best_order = p.order;
      }
    }
  }
  return best;
}

std::optional<BlockId> CacheModel::PageProver(
    const std::vector<TokenId>& tokens, std::uint32_t page,
    std::uint32_t p) const {
  const std::uint32_t b = config_.block_size;
  const std::uint32_t held = static_cast<std::uint32_t>(tokens.size()) /
                             config_.hash_unit * config_.hash_unit;
  const std::uint32_t limit = std::min((page + 1) * b, held);
  std::uint32_t best_len = 0;
  for (std::uint32_t i = 1; i < blocks_.size(); ++i) {
    for (const Proof& proof : blocks_[i].proofs) {
      const auto q = static_cast<std::uint32_t>(proof.tokens.size());
      if (q >= p && q <= limit && q > page * b &&
          IsPrefixOf(proof.tokens, tokens)) {
        best_len = std::max(best_len, q);
      }
    }
  }
  if (best_len == 0) return std::nullopt;
  return Prover(tokens, best_len);
}

bool CacheModel::Resumable(const std::vector<TokenId>& tokens,
                           std::uint32_t p) const {
  const std::uint32_t b = config_.block_size;
  for (std::uint32_t j = 0; j < p / b; ++j) {
    if (!Prover(tokens, (j + 1) * b)) return false;
  }
  return p % b == 0 || PageProver(tokens, p / b, p).has_value();
}

ModelHit CacheModel::Lookup(const std::vector<TokenId>& tokens) const {
  ModelHit hit;
  if (tokens.empty()) return hit;
  const std::uint32_t a = alignment();
  const std::uint32_t b = config_.block_size;
  for (std::uint32_t p = static_cast<std::uint32_t>(tokens.size() - 1) / a * a;
       p > 0; p -= a) {
    if (Resumable(tokens, p)) {
      hit.num_tokens = p;
      break;
    }
  }
  if (config_.eagle && hit.num_tokens > 0) hit.num_tokens -= a;
  for (std::uint32_t j = 0; j < hit.num_tokens / b; ++j) {
    hit.blocks.push_back(*Prover(tokens, (j + 1) * b));
  }
  if (hit.num_tokens % b != 0) {
    hit.blocks.push_back(
        *PageProver(tokens, hit.num_tokens / b, hit.num_tokens));
  }
  return hit;
}

BlockId CacheModel::Pop() {
  const BlockId id = free_.front();
  free_.pop_front();
  blocks_[ToIndex(id)].proofs.clear();
  blocks_[ToIndex(id)].ref_count = 1;
  return id;
}

void CacheModel::Touch(BlockId id) {
  if (blocks_[ToIndex(id)].ref_count++ == 0) free_.remove(id);
}

void CacheModel::Release(const std::vector<BlockId>& ordered) {
  std::vector<BlockId> uncached;
  for (BlockId id : ordered) {
    if (id == kNullBlock || --blocks_[ToIndex(id)].ref_count > 0) continue;
    if (blocks_[ToIndex(id)].proofs.empty() &&
        config_.free_order == FreeOrder::kPrependUncached) {
      uncached.push_back(id);
    } else {
      free_.push_back(id);
    }
  }
  free_.insert(free_.begin(), uncached.begin(), uncached.end());
}

std::optional<std::vector<BlockId>> CacheModel::Allocate(
    RequestId id, std::uint32_t num_computed, std::uint32_t num_slots,
    const ModelHit* hit) {
  const std::uint32_t b = config_.block_size;
  const std::uint32_t required = (num_slots + b - 1) / b;
  const std::vector<BlockId> hit_blocks =
      hit ? hit->blocks : std::vector<BlockId>{};
  const std::uint32_t local = num_computed + (hit ? hit->num_tokens : 0);
  const bool running = requests_.contains(id);
  const std::size_t held =
      running ? requests_[id].blocks.size() : hit_blocks.size();
  std::size_t need = required > held ? required - held : 0;
  const bool copy = !hit_blocks.empty() && local % b != 0;
  for (BlockId h : hit_blocks) need += ref_count(h) == 0;
  need += copy ? 1 : 0;
  if (need > free_.size()) return std::nullopt;

  Table& table = requests_[id];
  std::vector<BlockId> placed;
  if (!running) {
    for (BlockId h : hit_blocks) Touch(h);
    table.blocks = hit_blocks;
    table.committed = static_cast<std::uint32_t>(hit_blocks.size());
    if (copy) {
      const std::uint32_t index = local / b;
      const BlockId destination = Pop();
      ++blocks_[ToIndex(destination)].ref_count;  // pinned until the copy ran
      copies_.push_back({hit_blocks.back(), destination, GroupId{0}});
      pending_pins_.push_back(hit_blocks.back());
      pending_pins_.push_back(destination);
      table.blocks[index] = destination;
      table.committed = index;
      placed.push_back(destination);
    }
  }
  while (table.blocks.size() < required) {
    table.blocks.push_back(Pop());
    placed.push_back(table.blocks.back());
  }
  return placed;
}

void CacheModel::Register(BlockId id, const std::vector<TokenId>& tokens,
                          std::uint32_t len, bool partial) {
  if (id == kNullBlock) return;
  std::vector<Proof>& proofs = blocks_[ToIndex(id)].proofs;
  std::vector<TokenId> prefix(tokens.begin(), tokens.begin() + len);
  const bool already =
      std::any_of(proofs.begin(), proofs.end(),
                  [&](const Proof& p) { return p.tokens == prefix; });
  if (!partial || (!already && longest_proof(id) < len)) proofs.clear();
  if (partial && already) return;
  proofs.push_back({std::move(prefix), next_order_++});
}

void CacheModel::Commit(RequestId id, const std::vector<TokenId>& tokens,
                        std::uint32_t num_prompt, std::uint32_t num_tokens) {
  const std::uint32_t b = config_.block_size;
  const std::uint32_t u = config_.hash_unit;
  const std::uint32_t n =
      std::min(num_tokens, static_cast<std::uint32_t>(tokens.size()));
  Table& table = requests_.at(id);
  for (std::uint32_t j = table.committed; j < n / b; ++j) {
    Register(table.blocks[j], tokens, (j + 1) * b, /*partial=*/false);
  }
  table.committed = std::max(table.committed, n / b);
  if (b == u) return;
  // The prompt's last unit boundary, and where a resend or a rewind lands.
  std::vector<std::uint32_t> boundaries = {num_prompt / u * u};
  if (num_prompt > 0) {
    for (std::uint32_t a : {u, b}) {
      const std::uint32_t aligned = (num_prompt - 1) / a * a;
      boundaries.push_back(aligned);
      if (config_.eagle && aligned >= a) boundaries.push_back(aligned - a);
    }
  }
  std::sort(boundaries.begin(), boundaries.end(), std::greater<>());
  boundaries.erase(std::unique(boundaries.begin(), boundaries.end()),
                   boundaries.end());
  for (std::uint32_t len : boundaries) {
    if (len == 0 || len > n || len % b == 0 || len / b >= table.blocks.size())
      continue;
    Register(table.blocks[len / b], tokens, len, /*partial=*/true);
  }
}

void CacheModel::Free(RequestId id) {
  std::vector<BlockId> blocks = requests_.at(id).blocks;
  std::reverse(blocks.begin(), blocks.end());
  Release(blocks);
  requests_.erase(id);
}

std::vector<BlockCopy> CacheModel::TakeCopies() {
  taken_pins_.insert(taken_pins_.end(), pending_pins_.begin(),
                     pending_pins_.end());
  pending_pins_.clear();
  return std::exchange(copies_, {});
}

void CacheModel::FinishStep() {
  Release(taken_pins_);
  taken_pins_.clear();
}

}  // namespace hkv::testing
