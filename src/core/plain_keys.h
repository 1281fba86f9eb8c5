// Keying many hash units without key extras at once: a batch of units is
// encoded in one pass (the tokens do not depend on the parents), then
// digested in a chain that only writes each unit's parent in.
#pragma once

#include <span>
#include <vector>

#include "core/cbor.h"
#include "hkv/keys.h"
#include "hkv/types.h"

namespace hkv::internal {

// Appends the chained keys of the whole hash units of `tokens` (their
// count: tokens.size() / scheme.hash_unit; a partial unit at the end is
// ignored), the first chained from `parent` (a copy: it may be an element
// of `keys`), to `keys`: the same keys
// HashUnit gives unit by unit with no extra keys.
void AppendPlainUnitKeys(const KeyScheme& scheme, BlockHash parent,
                         std::span<const TokenId> tokens,
                         std::vector<BlockHash>& keys);

// AppendPlainUnitKeys for xxh3_128_cbor: each unit is encoded a few units
// ahead of the digest chain, so the encoding runs while the chain waits on a
// digest. `framing` frames every unit, with the parent's 16 bytes at
// `parent_at` of its `before` bytes. Returns false, appending nothing, where
// it does not apply: a unit that is not a multiple of 8 tokens, a unit
// whose bytes may pass XXH3's short inputs (240 bytes), or a CPU without
// AVX-512 VBMI and VBMI2. `parent` may be an element of `keys`.
bool AppendXxh3UnitKeysAhead(const UnitFraming& framing, std::size_t parent_at,
                             std::size_t unit, const BlockHash& parent,
                             std::span<const TokenId> tokens,
                             std::vector<BlockHash>& keys);

}  // namespace hkv::internal
