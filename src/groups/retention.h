// Sparse retention (spec §3.2.3-3.2.4, §3.4.7, §3.5, §4.4): which full
// blocks of a window or recurrent group get a key when a request commits.
// Hits land on aligned positions, so a window block that no aligned
// position's window needs, or a state no resend or retention segment can
// resume from, is left unkeyed and goes back to the free queue as soon as it
// is released, leaving room for blocks that can serve hits.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace hkv::internal {

// The positions a lookup capped at `boundary` may land on at alignment `a`:
// the aligned boundary, and one alignment unit lower when lookups rewind.
std::vector<std::uint32_t> ReachablePositions(std::uint32_t boundary,
                                              std::uint32_t a, bool rewind);

struct RetentionQuery {
  std::uint32_t start = 0;  // blocks [start, end) are being committed
  std::uint32_t end = 0;
  std::uint32_t alignment = 0;
  // Unset: dense; 0: only the reachable positions; > 0: also one tail per
  // segment of that many tokens.
  std::optional<std::uint32_t> interval = std::nullopt;
  bool rewind = false;  // the group's lookups rewind
  std::span<const std::uint32_t> reachable = {};
};

// Per block of [start, end): whether to key it. Empty: all of them.
std::vector<bool> WindowRetention(const RetentionQuery& query,
                                  std::uint32_t block, std::uint32_t window);
std::vector<bool> StateRetention(const RetentionQuery& query,
                                 std::uint32_t block);

}  // namespace hkv::internal
