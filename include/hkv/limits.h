// The documented limits on what hkv accepts. Inputs beyond them are refused
// with an error naming the limit before anything is allocated for them, so
// that no input, however large, makes hkv allocate without bound or wrap an
// integer. They are far above what serving deployments use today.
//
// Thread-safety: constants.
//
// Example:
//   if (prompt.size() > hkv::kMaxTokensPerRequest) return Fail(...);
#pragma once

#include <cstdint>

namespace hkv {

// Tokens in one request (prompt and outputs): 16 Mi, above the longest
// context windows served today (10 M tokens).
inline constexpr std::uint32_t kMaxTokensPerRequest = std::uint32_t{1} << 24;

// Blocks in one pool, the null block included: 16 Mi. The pool's metadata
// grows with it (about 100 B per block), so this bounds it to a few GB.
inline constexpr std::uint32_t kMaxPoolBlocks = std::uint32_t{1} << 24;

// Bytes of one block slot of a rebalancing pool (CacheConfig::pool_slot_bytes):
// 4 GiB, far above any page; with kMaxPoolBlocks it keeps the arena's byte
// count below 2^56.
inline constexpr std::uint64_t kMaxSlotBytes = std::uint64_t{1} << 32;

// Requests in one workload (a trace or a generated one): 1 Mi.
inline constexpr std::uint64_t kMaxRequestsPerWorkload = std::uint64_t{1} << 20;

// Prompt segments in one generated workload (a segment is a run of tokens
// one id stands for, 16 B): 16 Mi, 256 MiB. Multi-turn generators repeat
// every earlier turn in each prompt, so their segments grow with the square
// of the turns; this bounds them.
inline constexpr std::uint64_t kMaxSegmentsPerWorkload = std::uint64_t{1} << 24;

// Layers in one model description, its draft's included: 64 Ki, some
// 500 times the deepest models served today. It keeps layer counts, their
// sums and the planner's products of them far from wrapping.
inline constexpr std::uint32_t kMaxModelLayers = std::uint32_t{1} << 16;

// Bytes in one line of a trace file: 1 MiB (a Mooncake line for a
// 10 M-token request holds about 20,000 hash ids, under 200 kB).
inline constexpr std::uint64_t kMaxTraceLineBytes = std::uint64_t{1} << 20;

// Bytes in one configuration file (a model or cost-model JSON file): 1 MiB,
// far above the few kB they hold.
inline constexpr std::uint64_t kMaxConfigFileBytes = std::uint64_t{1} << 20;

// Seconds in one time the simulator takes (a request's arrival or delay, a
// generator's interval or think time, a cost coefficient): 1e12 s, some
// 30,000 years. Modelled times add up at most kMaxRequestsPerWorkload x
// kMaxTokensPerRequest such terms, so they stay finite.
inline constexpr double kMaxInputSeconds = 1e12;

// Bytes of one token list read by `hkv keys` (a JSON array): 16 per token of
// kMaxTokensPerRequest (256 MiB); the longest id with its comma takes 11.
inline constexpr std::uint64_t kMaxTokenListBytes =
    std::uint64_t{kMaxTokensPerRequest} * 16;

}  // namespace hkv
