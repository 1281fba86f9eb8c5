#include "groups/stored_event.h"

#include "check.h"
#include "groups/kind_traits.h"

namespace hkv::internal {
namespace {

// The event form of the extra keys of tokens [start, end), or none.
std::optional<std::vector<EventExtraKey>> ExtrasOf(const Request& request,
                                                   std::uint32_t start,
                                                   std::uint32_t end) {
  const std::vector<ExtraKey> extra =
      UnitExtraKeys(request.extras(), start, end);
  if (extra.empty()) return std::nullopt;
  return EventExtraKeys(extra);
}

// Tokens [from, to) the request never announced in this group.
void AddSkippedContext(const Request& request, std::uint32_t from,
                       std::uint32_t to, BlockStored& event) {
  const std::uint32_t h = request.key_scheme().hash_unit;
  if (from >= to) return;
  if (from > 0) event.skipped_parent_block_hash = request.keys()[from / h - 1];
  if (!request.keyed_by_caller()) {  // else its caller has the tokens
    const std::span<const TokenId> tokens = request.tokens();
    event.skipped_token_ids.assign(tokens.begin() + from, tokens.begin() + to);
  }
  for (std::uint32_t start = from; start < to; start += h) {
    event.skipped_extra_keys.push_back(ExtrasOf(request, start, start + h));
  }
}

}  // namespace

BlockStored StoredEvent(const Request& request, const StoredRun& run) {
  const std::uint32_t unit = run.unit;
  const std::uint32_t units_per_hash = unit / request.key_scheme().hash_unit;
  const std::span<const BlockHash> keys = request.keys();
  BlockStored event{.block_size = unit,
                    .lora_id = request.lora_id(),
                    .group = run.group,
                    .first_block = run.first};
  if (run.first > 0) {
    event.parent_block_hash = keys[run.first * units_per_hash - 1];
  }
  if (!request.extras().lora_name.empty())
    event.lora_name = request.extras().lora_name;
  for (std::uint32_t i = run.first; i < run.end; ++i) {
    event.block_hashes.push_back(keys[(i + 1) * units_per_hash - 1]);
    event.extra_keys.push_back(ExtrasOf(request, i * unit, (i + 1) * unit));
  }
  AddSkippedContext(request, run.announced_upto, run.first * unit, event);
  if (!request.keyed_by_caller()) {  // else its caller has the tokens
    const std::span<const TokenId> tokens = request.tokens();
    event.token_ids.assign(tokens.begin() + run.first * unit,
                           tokens.begin() + run.end * unit);
  }
  return event;
}

std::vector<BlockStored> ReuseEvents(const Request& request,
                                     const ReusedBlocks& reused,
                                     const BlockPool& pool) {
  // A group that caches nothing (recurrent "none", scratch) has no blocks
  // in any hit, whatever its length: nothing of it is reused. Every other
  // group's list covers the hit (CheckHitShape).
  if (reused.blocks.empty()) return {};
  const GroupGeometry& geometry = reused.geometry;
  const std::uint32_t b = geometry.block_size;
  const std::uint32_t full = reused.num_tokens / b;
  HKV_DCHECK(reused.blocks.size() >= full);
  std::vector<BlockStored> events;
  std::uint32_t run_start = 0;
  for (std::uint32_t i = 0; i <= full; ++i) {
    if (i < full && reused.blocks[i] != kNullBlock) continue;
    if (run_start < i) {
      events.push_back(StoredEvent(
          request,
          {.first = run_start, .end = i, .unit = b, .group = geometry.id}));
    }
    run_start = i + 1;
  }
  const std::uint32_t unit = request.key_scheme().hash_unit;
  if (reused.num_tokens % b == 0 || full >= reused.blocks.size()) return events;
  const PrefixKey key{.hash = request.keys()[reused.num_tokens / unit - 1],
                      .group = geometry.id};
  if (pool.FindCached(key) == reused.blocks[full]) {
    const std::uint32_t last = reused.num_tokens / unit - 1;
    events.push_back(StoredEvent(
        request,
        {.first = last, .end = last + 1, .unit = unit, .group = geometry.id}));
  }
  return events;
}

void AnnotateKinds(std::vector<KvEvent>& events,
                   std::span<const GroupSpec> groups) {
  for (KvEvent& event : events) {
    if (auto* stored = std::get_if<BlockStored>(&event)) {
      const GroupSpec& spec = groups[ToIndex(stored->group)];
      stored->spec_kind = std::string(NamesOf(spec.kind).event_name);
      if (TraitsOf(spec.kind).window_in_events) {
        stored->sliding_window = spec.sliding_window;
      }
    }
  }
}

}  // namespace hkv::internal

namespace hkv {

std::vector<EventExtraKey> EventExtraKeys(std::span<const ExtraKey> keys) {
  std::vector<EventExtraKey> out;
  out.reserve(keys.size());
  for (const ExtraKey& key : keys) {
    switch (key.kind) {
      case ExtraKeyKind::kMultimodal:
        out.emplace_back(EventItemOffset{key.name, key.offset});
        break;
      case ExtraKeyKind::kPromptEmbeds:
        out.emplace_back(key.digest);
        break;
      case ExtraKeyKind::kLora:
      case ExtraKeyKind::kCacheSalt:
        out.emplace_back(key.name);
        break;
    }
  }
  return out;
}

}  // namespace hkv
