// The engine simulator under random hybrid caches, engine limits,
// speculative decoding and workloads: a run either is refused as infeasible
// (a request that cannot start in the whole pool) or accounts for every
// request exactly once, every prompt token as reused or computed, every
// output, and never reuses more than a request's prompt minus its last
// token. ASan and the cache's own checks watch the manager underneath.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "hkv/group_list.h"
#include "hkv/simulator.h"
#include "hkv/workload.h"

namespace hkv {
namespace {

std::vector<SimRequest> GenWorkload() {
  const auto seed = *rc::gen::inRange<std::uint64_t>(1, 1000);
  switch (*rc::gen::inRange(0, 4)) {
    case 0:
      return GenerateFanOut(
          {.num_requests = *rc::gen::inRange(1u, 12u),
           .prefix_tokens = *rc::gen::inRange(1u, 3000u),
           .suffix_tokens = *rc::gen::inRange(1u, 600u),
           .output_tokens = *rc::gen::inRange(1u, 40u),
           .warmup = *rc::gen::element(FanOutWarmup::kNone,
                                       FanOutWarmup::kPrefixFirst),
           .seed = seed});
    case 1:
      return GenerateAgentSessions(
          {.num_sessions = *rc::gen::inRange(1u, 5u),
           .turns = *rc::gen::inRange(1u, 5u),
           .system_tokens = *rc::gen::inRange(1u, 900u),
           .message_tokens = *rc::gen::inRange(1u, 300u),
           .output_tokens = *rc::gen::inRange(1u, 40u),
           .seed = seed});
    case 2:
      return GenerateNeedle(
          {.num_documents = *rc::gen::inRange(1u, 3u),
           .document_tokens = *rc::gen::inRange(1u, 3000u),
           .questions_per_document = *rc::gen::inRange(1u, 5u),
           .question_tokens = *rc::gen::inRange(1u, 100u),
           .output_tokens = *rc::gen::inRange(1u, 30u),
           .seed = seed});
    default:
      return GenerateRepeats({.num_requests = *rc::gen::inRange(1u, 5u),
                              .prompt_tokens = *rc::gen::inRange(1u, 3000u),
                              .output_tokens = *rc::gen::inRange(1u, 30u),
                              .seed = seed});
  }
}

// A hybrid group list of 1-3 groups whose blocks are multiples of `unit`.
std::string GenGroups(std::uint32_t unit) {
  const auto block = [unit] {
    return std::to_string(unit * *rc::gen::element(1u, 2u, 4u));
  };
  std::string groups = "full:" + block();
  if (*rc::gen::arbitrary<bool>()) groups += ":eagle";
  if (*rc::gen::arbitrary<bool>()) {
    groups += ",recurrent:" + block() +
              ":spec=" + std::to_string(*rc::gen::inRange(0u, 3u));
    if (*rc::gen::arbitrary<bool>()) groups += ":export";
  }
  if (*rc::gen::arbitrary<bool>()) {
    groups += ",sliding:" + block() +
              ":window=" + std::to_string(*rc::gen::inRange(1u, 4 * unit + 1));
  }
  return groups;
}

SimulationOptions GenOptions() {
  const auto unit = *rc::gen::element(16u, 32u, 64u);
  Result<std::vector<GroupSpec>> groups = ParseGroupList(GenGroups(unit));
  RC_ASSERT(groups.has_value());
  const auto drafts = *rc::gen::inRange(0u, 3u);
  return {
      .cache = {.groups = *groups,
                .num_blocks = *rc::gen::inRange(8u, 160u),
                .keys = {.function = KeyFunction::kXxh3_128Cbor,
                         .hash_unit = unit}},
      .cost = {.step_s = 0.01, .prefill_token_s = 1e-4, .decode_token_s = 1e-3},
      .limits = {.max_num_batched_tokens = *rc::gen::inRange(64u, 2048u),
                 .max_num_seqs = *rc::gen::inRange(1u, 8u)},
      .speculation = {.num_drafts = drafts,
                      .acceptance_rate = *rc::gen::element(0.0, 0.5, 1.0),
                      .lookahead_slots = drafts},
      .arrivals =
          *rc::gen::element(ArrivalMode::kOpenLoop, ArrivalMode::kClosedLoop),
      .concurrency = *rc::gen::inRange(1u, 9u)};
}

RC_GTEST_PROP(SimulatorPropertyTest, EveryRequestIsAccountedOnce, ()) {
  const std::vector<SimRequest> workload = GenWorkload();
  const SimulationOptions options = GenOptions();
  RC_PRE(options.Validate().has_value());
  const Result<SimulationResult> result = Simulate(workload, options);
  RC_CLASSIFY(!result, "refused: infeasible");
  if (!result) {
    RC_ASSERT(result.error().code == ErrorCode::kInfeasible);
    return;
  }
  const SimulationResult& r = *result;
  RC_CLASSIFY(r.preemptions > 0, "preempted");
  RC_CLASSIFY(r.reused_tokens > 0, "reused");
  RC_ASSERT(r.requests == workload.size());
  RC_ASSERT(r.finished == workload.size());
  std::uint64_t prompt = 0;
  std::uint64_t outputs = 0;
  for (std::size_t i = 0; i < workload.size(); ++i) {
    const std::uint32_t length = PromptLength(workload[i]);
    prompt += length;
    outputs += workload[i].output_length;
    const RequestMetrics& m = r.per_request[i];
    RC_ASSERT(m.output_tokens == workload[i].output_length);
    RC_ASSERT(m.reused_tokens < length);
    RC_ASSERT(m.first_token_s >= m.arrival_s);
    RC_ASSERT(m.finish_s >= m.first_token_s);
  }
  RC_ASSERT(r.prompt_tokens == prompt);
  RC_ASSERT(r.output_tokens == outputs);
  RC_ASSERT(r.reused_tokens + r.computed_tokens == r.prompt_tokens);
  RC_ASSERT(r.usage_peak <= 1.0);
}

}  // namespace
}  // namespace hkv
