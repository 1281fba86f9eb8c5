// What a commit registers beyond full attention's blocks (spec §4.4,
// §4.5): where sparse retention must keep states and window blocks, and how
// many tokens each group registers.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "cache/cache_geometry.h"
#include "hkv/request.h"

namespace hkv::internal {

// A boundary sparse retention keeps states for: a prompt of P tokens (a
// resend's lookup is capped at P - 1), or a shared-prefix junction (the
// longest hit some group found, rewound when CacheFacts::junction_rewound).
enum class Boundary { kResend, kJunction };

// The positions sparse retention keeps for a boundary (`position`: P or
// the junction), appended to `out` unless already there or 0. The
// reference: every position a lookup capped there may land on, at the
// alignment and at the scheduler block. Placement: only the one a lookup
// reaching it lands on: a resend on the prompt's checkpoint (spec §3.4.6),
// a sibling at a junction on the alignment below it, one unit lower when
// lookups rewind and the junction is not rewound yet.
void AddRetainedPositions(std::uint32_t position, Boundary boundary,
                          const CacheFacts& facts,
                          std::vector<std::uint32_t>& out);

// Where a resend of the request's prompt lands: P - 1 at the alignment and
// at the scheduler block (and one unit lower each when lookups rewind).
std::vector<std::uint32_t> ResendBoundaries(const CacheGeometry& geometry,
                                            const Request& request);

// The resend positions, plus the shared-prefix junction (0: none) at both
// alignments: positions sparse retention keeps.
std::vector<std::uint32_t> ReplayBoundaries(const CacheGeometry& geometry,
                                            const Request& request,
                                            std::uint32_t junction);

// Of a commit of `num_tokens`, the tokens a group of `kind` registers: all
// of them, or in hybrids without fine hits the scheduler-block-aligned prefix
// (one block more for rewinding groups, whose lookups prove one block past
// it). A recurrent group always registers the true chunk end: its state is
// there, and a count aligned below it would name a block holding an older
// state.
std::uint32_t CacheableTokens(const CacheGeometry& geometry,
                              std::uint32_t num_tokens, GroupKind kind,
                              const GroupGeometry& group);

}  // namespace hkv::internal
