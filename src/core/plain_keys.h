// Keying many hash units without key extras at once: the unit's framing is
// written once and only the parent and the tokens change per unit.
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
