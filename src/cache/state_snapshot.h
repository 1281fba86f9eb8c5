// A canonical text of a cache core's mutable state, for tests: two cores in
// equal states give equal texts, and a call that changed anything a later
// call can observe changes the text. Tests take it before and after a call
// the core refuses (UsageError) and compare: "a refused call leaves state
// unchanged" as a checkable fact. A fuzzer driving a CacheCore with random
// operation sequences can compare it the same way.
//
// It covers the pool (per block its reference count, primary key with its
// token count and aliases, and for every key the block a lookup finds first;
// the free queue in order; the key generation and eviction counter), every
// request's block tables and bookkeeping (by request id), the queued and
// pinned copies, the stats and the events not yet taken. It leaves out two
// things it cannot enumerate: the pool's record of recently evicted keys
// (only "why missed" reads it) and the recurrent managers' same-step guard
// (keys registered since the last FinishStep).
//
// Thread-compatible; O(num_blocks + keys + table entries + events).
#pragma once

#include <string>

#include "cache/cache_core.h"

namespace hkv::internal {

std::string StateSnapshot(const CacheCore& core);

}  // namespace hkv::internal
