#include "groups/retention.h"

#include <algorithm>

namespace hkv::internal {
namespace {

// Marks blocks [from, to) ∩ [start, end) in `mask` (indexed from start).
void Keep(const RetentionQuery& q, std::uint64_t from, std::uint64_t to,
          std::vector<bool>& mask) {
  from = std::max<std::uint64_t>(from, q.start);
  to = std::min<std::uint64_t>(to, q.end);
  for (std::uint64_t i = from; i < to; ++i) mask[i - q.start] = true;
}

// Hits inside blocks: keep the blocks over each tail's window.
std::vector<bool> FineWindowRetention(const RetentionQuery& q, std::uint32_t b,
                                      std::uint32_t window) {
  const std::uint64_t need = window - 1 + (q.rewind ? q.alignment : 0);
  std::vector<bool> mask(q.end - q.start, false);
  const auto keep_tail = [&](std::uint64_t boundary) {
    const std::uint64_t first = boundary > need ? (boundary - need) / b : 0;
    Keep(q, first, (boundary + b - 1) / b, mask);
  };
  if (*q.interval > 0) {
    const std::uint64_t r = *q.interval;
    if (need + b >= r) return {};
    const std::uint64_t first_segment = std::uint64_t{q.start} * b / r * r;
    for (std::uint64_t boundary = first_segment + r;
         boundary <= std::uint64_t{q.end} * b + need; boundary += r) {
      keep_tail(boundary);
    }
  }
  for (std::uint32_t boundary : q.reachable) {
    keep_tail(boundary / q.alignment * q.alignment);
  }
  return mask;
}

}  // namespace

std::vector<std::uint32_t> ReachablePositions(std::uint32_t boundary,
                                              std::uint32_t a, bool rewind) {
  const std::uint32_t aligned = boundary / a * a;
  std::vector<std::uint32_t> positions = {aligned};
  if (rewind) positions.push_back(aligned > a ? aligned - a : 0);
  return positions;
}

std::vector<bool> WindowRetention(const RetentionQuery& q, std::uint32_t b,
                                  std::uint32_t window) {
  if (q.alignment < b) {
    if (!q.interval) return {};
    return FineWindowRetention(q, b, window);
  }
  if (q.alignment % b != 0) return {};  // not expressible per block
  const std::uint32_t shift = q.rewind ? 1 : 0;
  // At least the block ending on the position itself (a window of 1).
  const std::uint32_t need = std::max((window - 1 + b - 1) / b, 1u) + shift;
  // Dense retention keeps the tail of every aligned segment.
  const std::uint32_t segment =
      !q.interval ? q.alignment : (*q.interval == 0 ? 0 : *q.interval);
  std::vector<bool> mask(q.end - q.start, false);
  if (segment > 0) {
    const std::uint32_t per = segment / b;
    if (need >= per) return {};
    for (std::uint32_t i = std::max(q.start, shift); i < q.end; ++i) {
      if ((i - shift) % per >= per - need) mask[i - q.start] = true;
    }
  }
  if (q.interval) {
    for (std::uint32_t boundary : q.reachable) {
      const std::uint64_t end =
          boundary / q.alignment * q.alignment / b + shift;
      Keep(q, end > need ? end - need : 0, end, mask);
    }
  }
  return mask;
}

std::vector<bool> StateRetention(const RetentionQuery& q, std::uint32_t b) {
  if (!q.interval) return {};
  std::vector<bool> mask(q.end - q.start, false);
  if (*q.interval > 0) {
    const std::uint32_t per = *q.interval / b;
    if (per <= 1) return {};
    // The block ending on each segment boundary.
    for (std::uint32_t i = q.start; i < q.end; ++i) {
      if (i % per == per - 1) mask[i - q.start] = true;
    }
  }
  for (std::uint32_t boundary : q.reachable) {
    for (std::uint32_t p :
         ReachablePositions(boundary, q.alignment, q.rewind)) {
      if (p >= b) Keep(q, p / b - 1, p / b, mask);
    }
  }
  return mask;
}

}  // namespace hkv::internal
