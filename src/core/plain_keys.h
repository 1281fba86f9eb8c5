// Keying many hash units without key extras at once: a batch of units is
// encoded in one pass (the tokens do not depend on the parents), then
// digested in a chain that only writes each unit's parent in.
#pragma once

#include <span>
#include <vector>

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

}  // namespace hkv::internal
