#include "cache_ops_config.h"

#include <algorithm>
#include <numeric>

namespace hkv::fuzz {
namespace {

GroupSpec DecodeGroup(FuzzedDataProvider& in, std::uint32_t unit) {
  static constexpr GroupKind kKinds[] = {
      GroupKind::kFullAttention, GroupKind::kSlidingWindow,
      GroupKind::kChunkedLocal, GroupKind::kRecurrent, GroupKind::kScratch};
  GroupSpec g{.kind = in.PickValueInArray(kKinds)};
  g.block_size = unit << in.ConsumeIntegralInRange(0, 2);
  switch (g.kind) {
    case GroupKind::kFullAttention:
      if (in.ConsumeBool()) {
        g.output_window = in.ConsumeIntegralInRange(1u, 3 * g.block_size);
      }
      break;
    case GroupKind::kSlidingWindow:
      g.sliding_window = in.ConsumeIntegralInRange(1u, 3 * g.block_size);
      g.dcp_layout = DcpLayout::kReplicated;
      break;
    case GroupKind::kChunkedLocal:  // blocks: FitChunkedGroups
      g.chunk_size = in.ConsumeIntegralInRange(1u, 4u);
      g.dcp_layout = DcpLayout::kReplicated;
      break;
    case GroupKind::kRecurrent:
      g.recurrent_mode = in.PickValueInArray(
          {RecurrentMode::kAlign, RecurrentMode::kAll, RecurrentMode::kNone});
      g.speculative_blocks = in.ConsumeIntegralInRange(0u, 2u);
      if (g.recurrent_mode == RecurrentMode::kAlign && in.ConsumeBool()) {
        g.checkpoint_blocks = 1;
      }
      break;
    case GroupKind::kScratch:
      g.scratch_blocks = in.ConsumeIntegralInRange(1u, 3u);
      break;
  }
  if (g.kind != GroupKind::kChunkedLocal && g.kind != GroupKind::kScratch &&
      in.ConsumeBool()) {
    g.speculation = Speculation::kEagle;
  }
  return g;
}

// Raw values the validation judges: any of them may make the config
// invalid, which the fuzzer then checks is refused.
void Perturb(FuzzedDataProvider& in, CacheConfig& config) {
  GroupSpec& g = config.groups[in.ConsumeIntegralInRange<std::size_t>(
      0, config.groups.size() - 1)];
  g.block_size = in.ConsumeIntegralInRange(0u, 9u);
  g.sliding_window = in.ConsumeIntegralInRange(0u, 9u);
  g.chunk_size = in.ConsumeIntegralInRange(0u, 9u);
  g.checkpoint_blocks = in.ConsumeIntegralInRange(0u, 2u);
  g.dcp_layout =
      in.PickValueInArray({DcpLayout::kSharded, DcpLayout::kReplicated});
  config.keys.hash_unit = in.ConsumeIntegralInRange(0u, 5u);
  config.dcp = in.ConsumeIntegralInRange(0u, 3u);
}

// A chunked-local group's block is the scheduler block and the hash unit,
// so every group's block is the unit then (replicated under DCP); its chunk
// is a multiple of it (chunk_size holds the multiple until now).
void FitChunkedGroups(CacheConfig& config) {
  if (std::none_of(config.groups.begin(), config.groups.end(),
                   [](const GroupSpec& g) {
                     return g.kind == GroupKind::kChunkedLocal;
                   })) {
    return;
  }
  for (GroupSpec& g : config.groups) {
    g.block_size = config.keys.hash_unit;
    g.dcp_layout = DcpLayout::kReplicated;
    if (g.kind == GroupKind::kChunkedLocal) g.chunk_size *= g.block_size;
  }
}

bool KeepsWindowsOrStates(const CacheConfig& config) {
  return std::any_of(config.groups.begin(), config.groups.end(),
                     [](const GroupSpec& g) {
                       return g.kind == GroupKind::kSlidingWindow ||
                              g.kind == GroupKind::kRecurrent;
                     });
}

void DecodeLimits(FuzzedDataProvider& in, CacheConfig& config) {
  switch (KeepsWindowsOrStates(config) ? in.ConsumeIntegralInRange(0, 3) : 0) {
    case 1:
      config.retention_interval = 0;
      break;
    case 2:
      config.retention_interval =
          SchedulerBlock(config) * in.ConsumeIntegralInRange(1u, 3u);
      break;
    case 3:
      config.retention = Retention::kPlacement;
      break;
    default:
      break;
  }
  if (in.ConsumeIntegralInRange(0, 7) == 0) {
    config.caching = PrefixCaching::kDisabled;
  }
  if (in.ConsumeBool()) config.events = KvEventMode::kEnabled;
  if (in.ConsumeIntegralInRange(0, 3) == 0) {
    config.max_model_len = in.ConsumeIntegralInRange(1u, 64u);
  }
  if (in.ConsumeIntegralInRange(0, 3) == 0) {
    config.max_in_flight_tokens = in.ConsumeIntegralInRange(1u, 64u);
  }
  // Per-group pools, each of 1-16 blocks (or, rarely, counts the
  // validation refuses: an empty pool, a sum that is not num_blocks - 1).
  if (in.ConsumeIntegralInRange(0, 3) == 0) {
    config.num_blocks = 1;
    for (std::size_t g = 0; g < config.groups.size(); ++g) {
      config.group_pool_blocks.push_back(in.ConsumeIntegralInRange(1u, 16u));
      config.num_blocks += config.group_pool_blocks.back();
    }
    if (in.ConsumeIntegralInRange(0, 15) == 0) {
      config.group_pool_blocks.back() = in.ConsumeIntegralInRange(0u, 2u);
    }
    // Rebalancing pools, now and then with a slot size out of range.
    if (in.ConsumeBool()) {
      for (std::size_t g = 0; g < config.groups.size(); ++g) {
        config.pool_slot_bytes.push_back(
            in.ConsumeIntegralInRange<std::uint64_t>(0, 9));
      }
    }
  }
}

}  // namespace

CacheConfig DecodeCacheConfig(FuzzedDataProvider& in) {
  const std::uint32_t unit = 1u << in.ConsumeIntegralInRange(0, 2);
  CacheConfig config{.num_blocks = in.ConsumeIntegralInRange(1u, 64u),
                     .keys = {.function = KeyFunction::kXxh3_128Cbor,
                              .hash_unit = unit,
                              .seed = "0"},
                     .dcp = in.ConsumeIntegralInRange(1u, 2u)};
  const int num_groups = in.ConsumeIntegralInRange(1, 4);
  for (int i = 0; i < num_groups; ++i) {
    config.groups.push_back(DecodeGroup(in, unit));
  }
  FitChunkedGroups(config);
  DecodeLimits(in, config);
  // Recurrent all mode needs the hash unit to be the scheduler block while
  // prefix caching is on.
  if (config.caching == PrefixCaching::kEnabled &&
      SchedulerBlock(config) != unit) {
    for (GroupSpec& g : config.groups) {
      if (g.recurrent_mode == RecurrentMode::kAll) {
        g.recurrent_mode = RecurrentMode::kAlign;
      }
    }
  }
  if (in.ConsumeIntegralInRange(0, 15) == 0) Perturb(in, config);
  return config;
}

std::string Describe(const CacheConfig& config) {
  std::string out = "unit " + std::to_string(config.keys.hash_unit) +
                    " blocks " + std::to_string(config.num_blocks) + " dcp " +
                    std::to_string(config.dcp) + " groups:";
  for (const GroupSpec& g : config.groups) {
    out += " [kind " + std::to_string(static_cast<int>(g.kind)) + " b " +
           std::to_string(g.block_size) + " W " +
           std::to_string(g.sliding_window) + " out " +
           std::to_string(g.output_window) + " C " +
           std::to_string(g.chunk_size) + " eagle " +
           std::to_string(g.speculation == Speculation::kEagle) + " mode " +
           std::to_string(static_cast<int>(g.recurrent_mode)) + " spec " +
           std::to_string(g.speculative_blocks) + " export " +
           std::to_string(g.checkpoint_blocks) + " scratch " +
           std::to_string(g.scratch_blocks) + "]";
  }
  out += " pools";
  for (std::uint32_t n : config.group_pool_blocks)
    out += " " + std::to_string(n);
  out += " slots";
  for (std::uint64_t n : config.pool_slot_bytes) out += " " + std::to_string(n);
  out +=
      " retention " +
      (config.retention == Retention::kPlacement ? std::string("placement")
       : config.retention_interval ? std::to_string(*config.retention_interval)
                                   : std::string("dense"));
  out +=
      " caching " + std::to_string(config.caching == PrefixCaching::kEnabled);
  out += " events " + std::to_string(config.events == KvEventMode::kEnabled);
  out += " max_len " + std::to_string(config.max_model_len) + " in_flight " +
         (config.max_in_flight_tokens
              ? std::to_string(*config.max_in_flight_tokens)
              : std::string("-"));
  return out;
}

std::uint32_t SchedulerBlock(const CacheConfig& config) {
  std::uint32_t s = 1;
  for (const GroupSpec& g : config.groups) {
    s = std::lcm(s, static_cast<std::uint32_t>(std::max<std::uint64_t>(
                        TokensPerBlock(g, config.dcp), 1)));
  }
  return s;
}

std::uint32_t MaxBlockTokens(const CacheConfig& config) {
  std::uint64_t most = 1;
  for (const GroupSpec& g : config.groups) {
    most = std::max(most, TokensPerBlock(g, config.dcp));
  }
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(most, 64));
}

}  // namespace hkv::fuzz
