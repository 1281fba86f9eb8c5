#include "hkv/replay.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/request.h"

namespace hkv {
namespace {

constexpr std::size_t kProgressInterval = 1000;

std::uint64_t CeilDiv(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}

std::uint32_t EffectiveHashUnit(const ReplayOptions& options) {
  return options.hash_unit == 0 ? options.block_size : options.hash_unit;
}

Result<void> Invalid(std::string message) {
  return Fail(ErrorCode::kInvalidArgument, std::move(message));
}

Result<void> CheckOptions(const ReplayOptions& options) {
  const std::uint32_t b = options.block_size;
  if (b == 0) return Invalid("block size must be at least 1 token, got 0");
  const std::uint32_t unit = EffectiveHashUnit(options);
  if (b % unit != 0) {
    return Invalid("hash unit " + std::to_string(unit) +
                   " does not divide block size " + std::to_string(b));
  }
  if (options.capacity_tokens && *options.capacity_tokens < b) {
    return Invalid("capacity of " + std::to_string(*options.capacity_tokens) +
                   " tokens is below one block of " + std::to_string(b) +
                   " tokens");
  }
  return {};
}

Result<void> CheckTrace(std::span<const TraceRequest> trace) {
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (Result<void> valid = ValidateTraceRequest(trace[i]); !valid) {
      return Invalid("trace request " + std::to_string(i) + ": " +
                     valid.error().message);
    }
  }
  return {};
}

// Usable blocks (the null block excluded): the capacity in whole blocks, or
// enough for every request of the trace to keep all its blocks cached. At
// least one, so that an empty trace still makes a valid cache.
Result<std::uint32_t> UsableBlocks(std::span<const TraceRequest> trace,
                                   const ReplayOptions& options) {
  const std::uint32_t b = options.block_size;
  std::uint64_t usable = 0;
  if (options.capacity_tokens) {
    usable = *options.capacity_tokens / b;
  } else {
    for (const TraceRequest& request : trace) {
      usable += CeilDiv(request.input_length, b);
    }
  }
  usable = std::max<std::uint64_t>(usable, 1);
  if (usable >= std::numeric_limits<std::uint32_t>::max()) {
    return Fail(ErrorCode::kInfeasible,
                "a pool of " + std::to_string(usable) + " blocks of " +
                    std::to_string(b) +
                    " tokens plus the null block exceeds 2^32 - 1 blocks");
  }
  return static_cast<std::uint32_t>(usable);
}

std::uint64_t NanosecondsSince(std::chrono::steady_clock::time_point start) {
  const auto elapsed = std::chrono::steady_clock::now() - start;
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
}

// Nearest-rank percentile `p` (1..100) of `sorted`; 0 when it is empty.
std::uint64_t NearestRank(const std::vector<std::uint64_t>& sorted,
                          std::uint64_t p) {
  if (sorted.empty()) return 0;
  const std::uint64_t rank = CeilDiv(p * sorted.size(), 100);
  return sorted[rank - 1];
}

// The cache and the counters of one replay.
class Replayer {
 public:
  Replayer(CacheManager cache, std::uint32_t block_size,
           std::uint32_t usable_blocks)
      : cache_(std::move(cache)),
        block_size_(block_size),
        usable_blocks_(usable_blocks) {}

  Result<void> Run(std::size_t index, const TraceRequest& request);
  ReplayResult Finish();

 private:
  CacheManager cache_;
  std::uint32_t block_size_;
  std::uint32_t usable_blocks_;
  std::vector<std::uint64_t> lookup_ns_;
  ReplayResult result_;
};

Result<void> Replayer::Run(std::size_t index, const TraceRequest& request) {
  const std::uint32_t n = request.input_length;
  ++result_.requests;
  result_.prompt_tokens += n;
  if (CeilDiv(n, block_size_) > usable_blocks_) {
    ++result_.rejected_requests;
    return {};
  }
  const std::vector<TokenId> tokens = MooncakeTokens(request);
  const Request r({.id = RequestId{index}}, tokens, cache_.key_scheme());
  const auto start = std::chrono::steady_clock::now();
  const CacheHit hit = cache_.Lookup(r);
  lookup_ns_.push_back(NanosecondsSince(start));
  // Every earlier request has been freed, so the whole pool is free or
  // evictable: a request that fits the pool always gets its blocks.
  const AllocationRequest args{.num_new_tokens = n - hit.num_tokens,
                               .hit = &hit};
  if (!cache_.Allocate(r, args)) {
    return Fail(ErrorCode::kInfeasible,
                "trace request " + std::to_string(index) + " (" +
                    std::to_string(n) +
                    " tokens) did not fit an idle pool of " +
                    std::to_string(usable_blocks_) + " blocks");
  }
  result_.hit_tokens += hit.num_tokens;
  cache_.Commit(r, n);
  cache_.TakeCopies();
  cache_.FinishStep();
  cache_.Free(r.id());
  return {};
}

ReplayResult Replayer::Finish() {
  std::sort(lookup_ns_.begin(), lookup_ns_.end());
  result_.lookup_ns_median = NearestRank(lookup_ns_, 50);
  result_.lookup_ns_p99 = NearestRank(lookup_ns_, 99);
  result_.evicted_blocks = cache_.counters().evicted_blocks;
  return result_;
}

}  // namespace

Result<ReplayResult> Replay(std::span<const TraceRequest> trace,
                            const ReplayOptions& options) {
  if (Result<void> valid = CheckOptions(options); !valid) {
    return tl::unexpected(valid.error());
  }
  if (Result<void> valid = CheckTrace(trace); !valid) {
    return tl::unexpected(valid.error());
  }
  Result<std::uint32_t> usable = UsableBlocks(trace, options);
  if (!usable) return tl::unexpected(usable.error());
  Result<CacheManager> cache =
      CacheManager::Create({.groups = {{.block_size = options.block_size}},
                            .num_blocks = *usable + 1,
                            .keys = {.function = options.key_function,
                                     .hash_unit = EffectiveHashUnit(options)}});
  if (!cache) return tl::unexpected(cache.error());
  Replayer replayer(std::move(*cache), options.block_size, *usable);
  for (std::size_t i = 0; i < trace.size(); ++i) {
    if (Result<void> done = replayer.Run(i, trace[i]); !done) {
      return tl::unexpected(done.error());
    }
    const bool report =
        (i + 1) % kProgressInterval == 0 || i + 1 == trace.size();
    if (options.progress && report) options.progress(i + 1, trace.size());
  }
  return replayer.Finish();
}

}  // namespace hkv
