// Decodes the opening bytes of a cache_ops fuzz input into a small cache
// configuration: a hash unit of 1, 2 or 4 tokens; 1 to 4 groups of any
// kind (full attention with or without an output window, sliding window,
// chunked local, recurrent in every mode with speculative and export
// blocks, scratch), some feeding a draft model; DCP 1 or 2; a tiny pool;
// retention, caching, events and length limits. Mostly valid: a few bits
// choose raw values the validation may refuse.
//
// Thread-safety: pure function.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <string>

#include "hkv/cache_manager.h"

namespace hkv::fuzz {

CacheConfig DecodeCacheConfig(FuzzedDataProvider& in);

// One line naming the configuration's fields, for failure reports.
std::string Describe(const CacheConfig& config);

// The scheduler block: the lcm of the groups' blocks (after DCP scaling).
std::uint32_t SchedulerBlock(const CacheConfig& config);

// Tokens of the largest block over all groups (after DCP scaling), at most
// 64.
std::uint32_t MaxBlockTokens(const CacheConfig& config);

}  // namespace hkv::fuzz
