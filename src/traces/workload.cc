#include "hkv/workload.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "traces/number_text.h"
#include "traces/synthetic_tokens.h"

namespace hkv {
namespace {

// Output segment ids of trace requests: bit 62 set, clear of the traces'
// small hash ids and of generated ids (bit 63).
constexpr std::uint64_t kTraceOutputIdBase = std::uint64_t{1} << 62;

Result<void> Bad(std::size_t index, const std::string& problem) {
  return Fail(ErrorCode::kInvalidArgument,
              "workload request " + std::to_string(index) + ": " + problem);
}

bool IsTime(double t) { return t >= 0.0 && t <= kMaxInputSeconds; }

Result<void> CheckRequest(std::span<const SimRequest> w, std::size_t i) {
  const SimRequest& r = w[i];
  std::uint64_t tokens = r.output_length;
  for (const Segment& s : r.prompt) tokens += s.length;
  if (PromptLength(r) == 0) return Bad(i, "empty prompt");
  if (r.output_length == 0) return Bad(i, "output length 0");
  if (tokens > kMaxTokensPerRequest) {
    return Bad(i, std::to_string(tokens) + " tokens exceed the limit of " +
                      std::to_string(kMaxTokensPerRequest) +
                      " tokens per request");
  }
  if (!IsTime(r.arrival_s) || !IsTime(r.delay_s)) {
    return Bad(i, "arrival " + internal::ShortNumber(r.arrival_s) +
                      " s or delay " + internal::ShortNumber(r.delay_s) +
                      " s is not in [0, " +
                      internal::ShortNumber(kMaxInputSeconds) + "] s");
  }
  if (i > 0 && r.arrival_s < w[i - 1].arrival_s) {
    return Bad(i, "arrives before the request ahead of it");
  }
  if (r.after && *r.after >= i) {
    return Bad(i, "waits for request " + std::to_string(*r.after) +
                      ", which is not an earlier one");
  }
  return {};
}

}  // namespace

std::uint32_t PromptLength(const SimRequest& request) {
  std::uint64_t n = 0;
  for (const Segment& s : request.prompt) n += s.length;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(n, UINT32_MAX));
}

std::vector<TokenId> PromptTokens(const SimRequest& request) {
  std::vector<TokenId> tokens;
  tokens.reserve(PromptLength(request));
  for (const Segment& s : request.prompt) {
    if (s.tokens) {
      tokens.insert(tokens.end(), s.tokens->begin(), s.tokens->end());
      continue;
    }
    const std::uint64_t mixed = internal::SplitMix64(s.id);
    for (std::uint32_t p = 0; p < s.length; ++p) {
      tokens.push_back(internal::SegmentToken(mixed, p));
    }
  }
  return tokens;
}

std::vector<TokenId> OutputTokens(const SimRequest& request,
                                  std::uint32_t first, std::uint32_t count) {
  const std::uint64_t mixed = internal::SplitMix64(request.output_id);
  std::vector<TokenId> tokens(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    tokens[i] = internal::SegmentToken(mixed, std::uint64_t{first} + i);
  }
  return tokens;
}

Result<void> ValidateWorkload(std::span<const SimRequest> w) {
  if (w.size() > kMaxRequestsPerWorkload) {
    return Fail(ErrorCode::kInvalidArgument,
                "workload of " + std::to_string(w.size()) +
                    " requests exceeds the limit of " +
                    std::to_string(kMaxRequestsPerWorkload) + " requests");
  }
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (Result<void> ok = CheckRequest(w, i); !ok) return ok;
  }
  return {};
}

std::vector<SimRequest> FromMooncake(std::span<const TraceRequest> trace) {
  std::vector<SimRequest> out;
  out.reserve(trace.size());
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const TraceRequest& t = trace[i];
    SimRequest r{.arrival_s = static_cast<double>(t.timestamp_ms) / 1000.0,
                 .output_length = std::max<std::uint32_t>(t.output_length, 1),
                 .output_id = kTraceOutputIdBase + i};
    std::uint32_t left = t.input_length;
    for (std::uint64_t id : t.hash_ids) {
      const std::uint32_t n = std::min(left, kMooncakeBlockTokens);
      r.prompt.push_back({.id = id, .length = n});
      left -= n;
    }
    out.push_back(std::move(r));
  }
  return out;
}

Result<void> WorkloadCut::Validate() const {
  if (!(time_scale > 0.0) || !std::isfinite(time_scale)) {
    return Fail(
        ErrorCode::kInvalidArgument,
        "time scale must be > 0, got " + internal::ShortNumber(time_scale));
  }
  if (duration_s && !(*duration_s > 0.0)) {
    return Fail(
        ErrorCode::kInvalidArgument,
        "duration must be > 0 s, got " + internal::ShortNumber(*duration_s));
  }
  return {};
}

std::vector<SimRequest> CutWorkload(std::vector<SimRequest> workload,
                                    const WorkloadCut& cut) {
  if (cut.limit && workload.size() > *cut.limit) workload.resize(*cut.limit);
  std::vector<std::size_t> new_index(workload.size(), SIZE_MAX);
  std::vector<SimRequest> out;
  for (std::size_t i = 0; i < workload.size(); ++i) {
    SimRequest& r = workload[i];
    r.arrival_s /= cut.time_scale;
    r.delay_s /= cut.time_scale;
    if (cut.duration_s && r.arrival_s >= *cut.duration_s) break;
    if (r.after) {
      if (new_index[*r.after] == SIZE_MAX) continue;
      r.after = new_index[*r.after];
    }
    new_index[i] = out.size();
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace hkv
