#include "core/block_runs.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hkv::internal {

#if defined(__x86_64__)
namespace {

static_assert(sizeof(BlockWords) == 8 && sizeof(BlockId) == 4);
static_assert(kRunWidth == 16, "one 512-bit vector of ids");

// In a vector of eight blocks' words: the reference counts, the keys.
constexpr __mmask16 kCounts = 0x5555;
constexpr __mmask16 kKeys = 0xaaaa;

const bool kHasAvx512 =
    (__builtin_cpu_init(), __builtin_cpu_supports("avx512f"));

__attribute__((target("avx512f"))) RunStep FindRunAvx512(
    const BlockId* ids, const BlockWords* blocks, std::uint32_t ref_count,
    bool need_key) {
  const __m512i loaded = _mm512_loadu_si512(ids);
  const auto first = static_cast<std::uint32_t>(ids[0]);
  const __m512i from = _mm512_set1_epi32(static_cast<int>(first));
  const __m512i offsets =
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  RunStep step = RunStep::kNone;
  // The bounds keep the run from wrapping past either end of the ids, and
  // the null block (id 0) out of it.
  if (first >= 1 && first <= UINT32_MAX - 15 &&
      _mm512_cmpeq_epi32_mask(loaded, _mm512_add_epi32(from, offsets)) ==
          0xffff) {
    step = RunStep::kAscending;
  } else if (first >= 16 &&
             _mm512_cmpeq_epi32_mask(loaded, _mm512_sub_epi32(from, offsets)) ==
                 0xffff) {
    step = RunStep::kDescending;
  } else {
    return RunStep::kNone;
  }
  // Sixteen blocks' words, two vectors: reference counts in the even lanes,
  // primary tokens in the odd ones.
  const BlockWords* words = blocks + RunLowest(first, step);
  const __m512i low = _mm512_loadu_si512(words);
  const __m512i high = _mm512_loadu_si512(words + 8);
  const __m512i count = _mm512_set1_epi32(static_cast<int>(ref_count));
  if (ref_count != kAnyRefCount &&
      (_mm512_mask_cmpeq_epi32_mask(kCounts, low, count) &
       _mm512_mask_cmpeq_epi32_mask(kCounts, high, count)) != kCounts) {
    return RunStep::kNone;
  }
  if (need_key) {
    const __m512i none = _mm512_setzero_si512();
    if ((_mm512_mask_cmpneq_epi32_mask(kKeys, low, none) &
         _mm512_mask_cmpneq_epi32_mask(kKeys, high, none)) != kKeys) {
      return RunStep::kNone;
    }
  }
  return step;
}

__attribute__((target("avx512f"))) void SetReferencesAvx512(
    BlockWords* run, std::uint32_t ref_count) {
  const __m512i count = _mm512_set1_epi32(static_cast<int>(ref_count));
  _mm512_mask_storeu_epi32(run, 0x5555, count);
  _mm512_mask_storeu_epi32(run + 8, 0x5555, count);
}

__attribute__((target("avx512f"))) RunStep FindLinkedRunAvx512(
    const LinkWords* run, std::uint32_t lowest) {
  static_assert(sizeof(LinkWords) == 8);
  // Lanes in pairs (previous, next) of ids lowest + 0 .. 7, then + 8 .. 15.
  const __m512i pairs =
      _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  const __m512i step =
      _mm512_setr_epi32(-1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1);
  const __m512i low_ids =
      _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(lowest)), pairs);
  const __m512i high_ids = _mm512_add_epi32(low_ids, _mm512_set1_epi32(8));
  const __m512i low = _mm512_loadu_si512(run);
  const __m512i high = _mm512_loadu_si512(run + 8);
  // Ascending: every link but the first id's previous and the last's next.
  if ((_mm512_mask_cmpeq_epi32_mask(
           0xfffe, low, _mm512_add_epi32(low_ids, step)) == 0xfffe) &&
      (_mm512_mask_cmpeq_epi32_mask(
           0x7fff, high, _mm512_add_epi32(high_ids, step)) == 0x7fff)) {
    return RunStep::kAscending;
  }
  // Descending: every link but the first id's next and the last's previous.
  if ((_mm512_mask_cmpeq_epi32_mask(
           0xfffd, low, _mm512_sub_epi32(low_ids, step)) == 0xfffd) &&
      (_mm512_mask_cmpeq_epi32_mask(
           0xbfff, high, _mm512_sub_epi32(high_ids, step)) == 0xbfff)) {
    return RunStep::kDescending;
  }
  return RunStep::kNone;
}

__attribute__((target("avx512f"))) std::uint32_t CountUnreferencedAvx512(
    const BlockWords* run) {
  const __m512i none = _mm512_setzero_si512();
  const auto unreferenced = static_cast<std::uint32_t>(
      _mm512_mask_cmpeq_epi32_mask(kCounts, _mm512_loadu_si512(run), none) |
      (_mm512_mask_cmpeq_epi32_mask(kCounts, _mm512_loadu_si512(run + 8), none)
       << 1));
  return static_cast<std::uint32_t>(__builtin_popcount(unreferenced));
}

}  // namespace
#endif

RunStep FindRun([[maybe_unused]] const BlockId* ids,
                [[maybe_unused]] const BlockWords* blocks,
                [[maybe_unused]] std::uint32_t ref_count,
                [[maybe_unused]] bool need_key) {
#if defined(__x86_64__)
  if (kHasAvx512) return FindRunAvx512(ids, blocks, ref_count, need_key);
#endif
  return RunStep::kNone;
}

bool FindsRuns() {
#if defined(__x86_64__)
  return kHasAvx512;
#else
  return false;
#endif
}

RunStep FindLinkedRun([[maybe_unused]] const LinkWords* run,
                      [[maybe_unused]] std::uint32_t lowest) {
#if defined(__x86_64__)
  if (kHasAvx512) return FindLinkedRunAvx512(run, lowest);
#endif
  return RunStep::kNone;
}

std::uint32_t CountUnreferenced(const BlockWords* run) {
#if defined(__x86_64__)
  if (kHasAvx512) return CountUnreferencedAvx512(run);
#endif
  std::uint32_t count = 0;
  for (std::size_t k = 0; k < kRunWidth; ++k) count += run[k].ref_count == 0;
  return count;
}

void SetReferences(BlockWords* run, std::uint32_t ref_count) {
#if defined(__x86_64__)
  if (kHasAvx512) return SetReferencesAvx512(run, ref_count);
#endif
  for (std::size_t k = 0; k < kRunWidth; ++k) run[k].ref_count = ref_count;
}

}  // namespace hkv::internal
