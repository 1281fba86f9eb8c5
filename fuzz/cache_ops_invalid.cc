// Calls the operation-sequence fuzzer makes on purpose against the API's
// contract: each must be refused with UsageError, the state unchanged (the
// check Run makes).
#include <limits>

#include "cache_ops_harness.h"

namespace hkv::fuzz {
namespace {

constexpr RequestId kUnknown{std::numeric_limits<std::uint64_t>::max()};

}  // namespace

void CacheOpsHarness::Invalid() {
  const int call = in_.ConsumeIntegralInRange(0, 5);
  Note("invalid call " + std::to_string(call));
  switch (call) {
    case 0:
      return UnknownRequest();
    case 1:
      return ForeignScheme();
    case 2:
      return BadContinuation();
    case 3:
      return ForeignHit();
    case 4:
      return MisshapenHit();
    default:
      return OverlongCut();
  }
}

// A request the cache does not know, or one holding no blocks.
void CacheOpsHarness::UnknownRequest() {
  Run(Expect::kRefused, [&] { core_.Free(kUnknown); });
  Run(Expect::kRefused, [&] { (void)core_.block_table(kUnknown, {}); });
  if (Tracked* idle = Pick([](const Tracked& x) { return !x.holds; })) {
    Run(Expect::kRefused, [&] { core_.Commit(idle->request, 1); });
  }
}

// A request keyed with another scheme.
void CacheOpsHarness::ForeignScheme() {
  const KeyScheme other = *MakeKeyScheme(
      {.function = KeyFunction::kXxh3_128Cbor, .hash_unit = 1, .seed = "1"});
  const Request stranger({.id = kUnknown}, Prompt(), other);
  Run(Expect::kRefused, [&] { (void)core_.Lookup(stranger); });
  Run(Expect::kRefused,
      [&] { (void)core_.Allocate(stranger, {.num_new_tokens = 1}); });
}

// A running request allocating nothing, claiming more computed tokens than
// its blocks cover, or adopting a second hit.
void CacheOpsHarness::BadContinuation() {
  Tracked* t = Pick([](const Tracked& x) { return x.holds; });
  if (t == nullptr) return;
  const Request& r = t->request;
  Run(Expect::kRefused, [&] { (void)core_.Allocate(r, {}); });
  Run(Expect::kRefused, [&] {
    (void)core_.Allocate(
        r, {.num_computed_tokens = std::numeric_limits<std::uint32_t>::max(),
            .num_new_tokens = 1});
  });
  if (const CacheHit hit = core_.Lookup(r); hit.num_tokens > 0) {
    Run(Expect::kRefused,
        [&] { (void)core_.Allocate(r, {.num_new_tokens = 1, .hit = &hit}); });
  }
}

// A hit cut to more tokens than it has.
void CacheOpsHarness::OverlongCut() {
  if (Tracked* t = Pick([](const Tracked&) { return true; })) {
    Run(Expect::kRefused,
        [&] { (void)core_.TruncateHit(t->hit, t->hit.num_tokens + 1); });
  }
}

// Another request's hit, longer than this request's own, must not be
// adopted (its blocks hold another prompt).
void CacheOpsHarness::ForeignHit() {
  Tracked* owner = Pick([](const Tracked& x) { return x.hit.num_tokens > 0; });
  Tracked* taker = Pick([](const Tracked& x) { return !x.holds; });
  if (owner == nullptr || taker == nullptr || owner == taker) return;
  const CacheHit own = core_.Lookup(taker->request);
  const CacheHit& foreign = owner->hit;
  if (foreign.num_tokens <= own.num_tokens) return;
  Note("adopt the hit of " + std::to_string(foreign.num_tokens) + " of " +
       Describe(owner->request) + " for " + Describe(taker->request) +
       ", whose own hit is " + std::to_string(own.num_tokens));
  const std::uint32_t tokens = taker->request.num_tokens();
  const std::uint32_t left =
      tokens > foreign.num_tokens ? tokens - foreign.num_tokens : 1;
  Run(Expect::kRefused, [&] {
    (void)core_.Allocate(taker->request,
                         {.num_new_tokens = left, .hit = &foreign});
  });
}

// A hit whose block lists do not fit the cache: one list short, or a block
// id past the pool.
void CacheOpsHarness::MisshapenHit() {
  Tracked* t = Pick([](const Tracked& x) { return !x.holds; });
  if (t == nullptr) return;
  CacheHit hit = core_.Lookup(t->request);
  if (hit.num_tokens == 0) return;
  bool changed = false;
  if (in_.ConsumeBool()) {
    hit.blocks.pop_back();
    changed = true;
  } else {
    // Past every id, or (in range) a block that holds no key: the last id
    // of the pool, parked when pools rebalance, or free and keyless.
    const std::uint32_t ids = core_.pool().num_blocks();
    const bool past = in_.ConsumeBool();
    const BlockId forged{past ? ids : ids - 1};
    if (!past && core_.pool().primary_num_tokens(forged) > 0) return;
    for (std::vector<BlockId>& list : hit.blocks) {
      if (list.empty()) continue;
      list.back() = forged;
      changed = true;
    }
  }
  if (!changed) return;
  Run(Expect::kRefused, [&] {
    (void)core_.Allocate(t->request, {.num_new_tokens = 1, .hit = &hit});
  });
}

}  // namespace hkv::fuzz
