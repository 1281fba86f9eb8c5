#include "hkv/cost_model.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "check.h"
#include "hkv/deployment.h"
#include "hkv/limits.h"
#include "traces/number_text.h"

namespace hkv {
namespace {

// The members behind kCostCoefficients, in the same order.
constexpr double CostModel::*kMembers[] = {&CostModel::step_s,
                                           &CostModel::prefill_token_s,
                                           &CostModel::prefill_attention_s,
                                           &CostModel::decode_token_s,
                                           &CostModel::decode_context_s,
                                           &CostModel::request_s,
                                           &CostModel::admission_s,
                                           &CostModel::state_write_s,
                                           &CostModel::draft_token_s,
                                           &CostModel::copy_byte_s,
                                           &CostModel::serving_s,
                                           &CostModel::compute_scale,
                                           &CostModel::memory_scale,
                                           &CostModel::link_scale};
static_assert(std::size(kMembers) == kCostCoefficients.size());
static_assert(kCostCoefficients[kServingCoefficient] == "serving_s");
static_assert(kCostCoefficients[kComputeScale] == "compute_scale");
static_assert(kCostCoefficients[kMemoryScale] == "memory_scale");
static_assert(kCostCoefficients[kLinkScale] == "link_scale");

double* Find(CostModel& model, std::string_view key) {
  for (std::size_t i = 0; i < kCostCoefficients.size(); ++i) {
    if (kCostCoefficients[i] == key) return &(model.*kMembers[i]);
  }
  return nullptr;
}

Result<void> CheckValue(std::string_view key, double value) {
  if (!(value >= 0.0 && value <= kMaxInputSeconds)) {
    return Fail(ErrorCode::kInvalidArgument,
                "cost coefficient " + std::string(key) + " must be in [0, " +
                    internal::ShortNumber(kMaxInputSeconds) + "] s, got " +
                    internal::ShortNumber(value));
  }
  return {};
}

std::string KnownKeys() {
  std::string keys;
  for (std::string_view key : kCostCoefficients) {
    keys += (keys.empty() ? "" : ", ") + std::string(key);
  }
  return keys;
}

// The physical scales' features (compute, memory, link): each side's
// seconds at the peaks, the side of the roofline that does not bind under
// the model's scales 0; all 0 without a physical part.
std::array<double, 3> PhysicalFeatures(const CostModel& model,
                                       const StepShape& shape) {
  if (!model.physics || shape.IsEmpty()) return {};
  const PeakSeconds peak = PhysicalSeconds(*model.physics, shape);
  // Unfitted scales (0) compare the sides at their peaks.
  const bool compute_binds =
      std::max(model.compute_scale, kLeastScale) * peak.compute >=
      std::max(model.memory_scale, kLeastScale) * peak.memory;
  return {compute_binds ? peak.compute : 0.0, compute_binds ? 0.0 : peak.memory,
          peak.link};
}

}  // namespace

Result<void> CostModel::Validate() const {
  for (std::size_t i = 0; i < kCostCoefficients.size(); ++i) {
    if (Result<void> ok = CheckValue(kCostCoefficients[i], this->*kMembers[i]);
        !ok) {
      return ok;
    }
  }
  return {};
}

double Feature(const CostModel& model, const StepShape& shape, std::size_t i) {
  HKV_REQUIRE(i < kCostCoefficients.size(), "no such cost coefficient");
  if (i >= kComputeScale)
    return PhysicalFeatures(model, shape)[i - kComputeScale];
  const auto d = [](std::uint64_t v) { return static_cast<double>(v); };
  switch (i) {
    case 0:
      return shape.IsEmpty() ? 0.0 : 1.0;
    case 1:
      return d(shape.prefill_tokens);
    case 2:
      return shape.prefill_attention_pairs;
    case 3:
      return d(shape.decode_tokens);
    case 4:
      return d(shape.decode_context_tokens);
    case 5:
      return shape.requests;
    case 6:
      return shape.admissions;
    case 7:
      return d(shape.state_bytes_written);
    case 8:
      return d(shape.draft_tokens);
    case 9:
      return d(shape.copy_bytes);
    default:  // serving_s: outside the steps
      return 0.0;
  }
}

double Coefficient(const CostModel& model, std::size_t i) {
  HKV_REQUIRE(i < kCostCoefficients.size(), "no such cost coefficient");
  return model.*kMembers[i];
}

double PrefillAttentionPairs(std::uint64_t start, std::uint64_t end) {
  HKV_REQUIRE(start <= end, "a prefill chunk ends before it starts");
  const auto s = static_cast<double>(start);
  const auto e = static_cast<double>(end);
  return (e * (e + 1.0) - s * (s + 1.0)) / 2.0;
}

std::uint64_t BoundariesReached(std::uint64_t start, std::uint64_t end,
                                std::uint64_t block) {
  HKV_REQUIRE(block > 0 && start <= end, "bad chunk or block");
  return end / block - start / block;
}

double StepSeconds(const CostModel& model, const StepShape& shape) {
  if (shape.IsEmpty()) return 0.0;
  double seconds = 0.0;
  for (std::size_t i = 0; i < kComputeScale; ++i) {
    seconds += model.*kMembers[i] * Feature(model, shape, i);
  }
  // The physical part's three features from one roofline, not one each.
  const std::array<double, 3> physical = PhysicalFeatures(model, shape);
  for (std::size_t i = kComputeScale; i < kCostCoefficients.size(); ++i) {
    seconds += model.*kMembers[i] * physical[i - kComputeScale];
  }
  return seconds;
}

double PrefillSecondsPerToken(const CostModel& model, std::uint32_t chunk) {
  if (chunk == 0) return 0.0;
  const std::uint32_t topk = model.physics ? model.physics->attention_topk : 0;
  const StepShape shape{
      .prefill_tokens = chunk,
      .prefill_attention_pairs = PrefillAttentionPairs(0, chunk),
      .requests = 1,
      .sparse_attention_pairs = SparseAttentionPairs(0, chunk, topk)};
  return StepSeconds(model, shape) / chunk;
}

double DecodeSecondsPerRequest(const CostModel& model, DecodeBatch batch) {
  if (batch.requests == 0) return 0.0;
  const std::uint32_t topk = model.physics ? model.physics->attention_topk : 0;
  const std::uint64_t n = batch.requests;
  const std::uint64_t end = std::uint64_t{batch.context} + 1;
  const StepShape shape{
      .decode_tokens = n,
      .decode_context_tokens = n * end,
      .requests = batch.requests,
      .decode_attention_pairs =
          static_cast<double>(n) * PrefillAttentionPairs(batch.context, end),
      .sparse_attention_pairs = static_cast<double>(n) *
                                SparseAttentionPairs(batch.context, end, topk),
      .decode_sparse_keys =
          n * (topk == 0 ? end : std::min<std::uint64_t>(end, topk))};
  return StepSeconds(model, shape) / static_cast<double>(n);
}

Result<CostModel> CostModelPreset(std::string_view name) {
  Result<DeploymentPreset> preset = LoadDeploymentPreset(name);
  if (!preset) return tl::unexpected(preset.error());
  return preset->cost;
}

std::vector<std::string> CostModelPresetNames() {
  return DeploymentPresetNames();
}

Result<void> SetCostCoefficient(CostModel& model, std::string_view key,
                                double value) {
  double* field = Find(model, key);
  if (field == nullptr) {
    return Fail(ErrorCode::kInvalidArgument, "unknown cost coefficient \"" +
                                                 std::string(key) + "\" (" +
                                                 KnownKeys() + ")");
  }
  if (Result<void> ok = CheckValue(key, value); !ok) return ok;
  *field = value;
  return {};
}

Result<CostModel> ApplyCostJson(CostModel model, std::string_view json_text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    // Syntax errors name line and column; numbers beyond a double ("1e400")
    // the number.
    return Fail(ErrorCode::kInvalidArgument,
                "cost model file is not valid JSON: " + std::string(e.what()));
  }
  if (!doc.is_object()) {
    return Fail(ErrorCode::kInvalidArgument,
                "cost model file is not a JSON object");
  }
  for (const auto& [key, value] : doc.items()) {
    if (key == "name" && value.is_string()) {
      model.name = value.get<std::string>();
      continue;
    }
    if (!value.is_number()) {
      return Fail(ErrorCode::kInvalidArgument,
                  "cost model key \"" + key + "\" is not a number");
    }
    if (Result<void> ok = SetCostCoefficient(model, key, value.get<double>());
        !ok) {
      return tl::unexpected(ok.error());
    }
  }
  return model;
}

std::string CostJson(const CostModel& model) {
  nlohmann::ordered_json out;
  for (std::size_t i = 0; i < kCostCoefficients.size(); ++i) {
    out[std::string(kCostCoefficients[i])] = model.*kMembers[i];
  }
  return out.dump();
}

}  // namespace hkv
