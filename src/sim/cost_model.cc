#include "hkv/cost_model.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "check.h"
#include "hkv/limits.h"
#include "number_text.h"

namespace hkv {
namespace {

// glm53-flash-gb10x4: a GLM-5.3-Flash-class hybrid model served on four
// NVIDIA GB10 nodes, fitted to the published figures quoted in issue 5:
//   cold prefill about 2,800 tokens/s, flat from 8k to 128k context;
//   decode 43 tokens/s at 1 stream and 207 tokens/s at 16 streams, both at
//   32k context (no speculative decoding assumed).
// Two decode figures fix the step cost and the per-stream cost at 32k; the
// split of the per-stream cost into a per-token and a per-context part
// assumes a decode token costs the matmul work of a prefill token. The flat
// prefill rate leaves no attention term.
namespace glm53 {
constexpr double kPrefillTokensPerS = 2800.0;
constexpr double kChunk = 8192.0;  // prefill chunk at the default budget
constexpr double kContext = 32768.0;
constexpr double kOneStreamStepS = 1.0 / 43.0;
constexpr double kSixteenStreamStepS = 16.0 / 207.0;
constexpr double kPerStreamS = (kSixteenStreamStepS - kOneStreamStepS) / 15.0;
constexpr double kStepS = kOneStreamStepS - kPerStreamS;
constexpr double kTokenS = (kChunk / kPrefillTokensPerS - kStepS) / kChunk;
constexpr double kContextS = (kPerStreamS - kTokenS) / kContext;
}  // namespace glm53

std::vector<CostModel> Presets() {
  return {{.name = "glm53-flash-gb10x4",
           .step_s = glm53::kStepS,
           .prefill_token_s = glm53::kTokenS,
           .prefill_attention_s = 0.0,
           .decode_token_s = glm53::kTokenS,
           .decode_context_s = glm53::kContextS}};
}

// The coefficients by name, for overrides.
double* Coefficient(CostModel& model, std::string_view key) {
  if (key == "step_s") return &model.step_s;
  if (key == "prefill_token_s") return &model.prefill_token_s;
  if (key == "prefill_attention_s") return &model.prefill_attention_s;
  if (key == "decode_token_s") return &model.decode_token_s;
  if (key == "decode_context_s") return &model.decode_context_s;
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

}  // namespace

Result<void> CostModel::Validate() const {
  CostModel copy = *this;
  for (const char* key : {"step_s", "prefill_token_s", "prefill_attention_s",
                          "decode_token_s", "decode_context_s"}) {
    if (Result<void> ok = CheckValue(key, *Coefficient(copy, key)); !ok) {
      return ok;
    }
  }
  return {};
}

double PrefillAttentionPairs(std::uint64_t start, std::uint64_t end) {
  HKV_REQUIRE(start <= end, "a prefill chunk ends before it starts");
  const auto s = static_cast<double>(start);
  const auto e = static_cast<double>(end);
  return (e * (e + 1.0) - s * (s + 1.0)) / 2.0;
}

double StepSeconds(const CostModel& model, const StepShape& shape) {
  if (shape.IsEmpty()) return 0.0;
  return model.step_s +
         model.prefill_token_s * static_cast<double>(shape.prefill_tokens) +
         model.prefill_attention_s * shape.prefill_attention_pairs +
         model.decode_token_s * static_cast<double>(shape.decode_tokens) +
         model.decode_context_s *
             static_cast<double>(shape.decode_context_tokens);
}

Result<CostModel> CostModelPreset(std::string_view name) {
  std::string known;
  for (CostModel& preset : Presets()) {
    if (preset.name == name) return std::move(preset);
    known += (known.empty() ? "" : ", ") + preset.name;
  }
  return Fail(ErrorCode::kNotFound, "unknown cost model preset \"" +
                                        std::string(name) +
                                        "\" (presets: " + known + ")");
}

std::vector<std::string> CostModelPresetNames() {
  std::vector<std::string> names;
  for (const CostModel& preset : Presets()) names.push_back(preset.name);
  return names;
}

Result<void> SetCostCoefficient(CostModel& model, std::string_view key,
                                double value) {
  double* field = Coefficient(model, key);
  if (field == nullptr) {
    return Fail(ErrorCode::kInvalidArgument,
                "unknown cost coefficient \"" + std::string(key) +
                    "\" (step_s, prefill_token_s, prefill_attention_s, "
                    "decode_token_s, decode_context_s)");
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

}  // namespace hkv
