// The simulator's cost model: how long one engine step takes, from what the
// step computes. The times it gives are modelled, not measured; each
// deployment preset (data/deployments/) says which measured figures its
// coefficients are fitted to (docs/calibration.md).
//
// Its physical part (PhysicalCost, resolved from the model's compute facts,
// the deployment's TP and DCP widths and the hardware's published peaks)
// prices a step as a roofline: the FLOPs it computes over the peak, or the
// bytes it reads over the memory bandwidth, whichever is longer, plus the
// tensor-parallel all-reduce over the link:
//
//   max(compute_scale x FLOPs / peak, memory_scale x bytes / bandwidth)
//     + link_scale x (all-reduce bytes / link bandwidth + collectives x
//       latency)
//
// FLOPs: 2 x active weights per token, attention pairs (sparse attention's
// at most top-k keys a query) and a sparse indexer's pairs. Bytes: the
// weights a step reads (every non-routed weight, and the routed experts its
// tokens use: a fraction 1 - (1 - k/E)^T of them for T tokens routed to k
// of E experts), the keys its decodes attend and the context its indexer
// scans, and each request's recurrent states, read and written. The scales
// are fitted (1 / efficiency, at least 1); no peak is. The linear terms:
//
//   step seconds = step_s                          (if anything runs)
//     + request_s            x requests scheduled in the step
//     + admission_s          x requests admitted for the first time
//     + prefill_token_s      x prefill tokens
//     + prefill_attention_s  x prefill attention pairs on one DCP rank
//     + state_write_s        x recurrent state bytes written in the step
//     + decode_token_s       x decode tokens (the fed token and drafts)
//     + draft_token_s        x draft tokens proposed
//     + decode_context_s     x context tokens decodes read on one DCP rank
//     + copy_byte_s          x copy-on-write bytes copied
//
// and, outside the steps, serving_s once per request: the serving stack's
// own time (API server, tokenising the prompt, the first token's way back)
// that a client's TTFT includes and the engine's steps do not. It is added
// to each request's first-token and finish times; it delays no step.
//
// A prefill chunk computing positions [s, e) of a request adds e - s prefill
// tokens and sum_{p=s}^{e-1} (p + 1) attention pairs (each token attends to
// itself and everything before it), divided by the DCP width when attention
// is sharded. A recurrent group with R-token blocks writes one state page at
// every multiple of R the chunk reaches (floor(e / R) - floor(s / R) pages of
// the group's bytes): that is what makes fine recurrent pages slower. A
// decode of n tokens (the last sampled token plus drafts) at c computed
// tokens adds n decode tokens, n - 1 draft tokens and (c + n) / dcp context
// tokens; its acceptances are drawn by the engine (hkv/simulator.h).
//
// Thread-safety: value types and pure functions.
//
// Example:
//   Result<CostModel> cost = CostModelPreset("glm53-flash-gb10x4");
//   double s = StepSeconds(*cost, {.prefill_tokens = 8192,
//                                  .prefill_attention_pairs =
//                                      PrefillAttentionPairs(0, 8192)});
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/hardware.h"
#include "hkv/result.h"

namespace hkv {

// One rank's work per unit of a step's shape, and the hardware's peaks
// (ResolvePhysicalCost, hkv/deployment.h).
struct PhysicalCost {
  std::string hardware = {};  // its preset (data/hardware/)
  Precision gemm_precision = Precision::kBf16;
  double peak_flops = 0.0;        // at gemm_precision, FLOP/s
  double memory_bandwidth = 0.0;  // bytes/s
  double link_bandwidth = 0.0;    // bytes/s
  double link_latency_s = 0.0;
  double gemm_flops_per_token = 0.0;
  // All attention layers of the rank, per (query, key) pair.
  double attention_flops_per_pair = 0.0;
  std::uint32_t attention_topk = 0;  // 0: dense attention
  double index_flops_per_pair = 0.0;
  double other_weight_bytes = 0.0;
  double routed_weight_bytes = 0.0;  // every routed expert's
  std::uint32_t experts = 0;
  std::uint32_t experts_per_token = 0;
  double key_bytes = 0.0;             // per key a decode attends
  double index_bytes = 0.0;           // per context token a decode scans
  double state_bytes = 0.0;           // per request and step, read + write
  double link_bytes_per_token = 0.0;  // all-reduce traffic
  double collectives_per_step = 0.0;
};

struct CostModel {
  std::string name = "custom";
  double step_s = 0.0;               // fixed cost of a step that runs
  double prefill_token_s = 0.0;      // per prefill token
  double prefill_attention_s = 0.0;  // per (query, key) pair on one rank
  double decode_token_s = 0.0;       // per decode token, drafts included
  double decode_context_s = 0.0;     // per context token a decode reads
  double request_s = 0.0;            // per request scheduled in a step
  double admission_s = 0.0;          // once per request, at admission
  double state_write_s = 0.0;        // per recurrent state byte written
  double draft_token_s = 0.0;        // per draft token proposed
  double copy_byte_s = 0.0;          // per copy-on-write byte copied
  double serving_s = 0.0;            // per request, outside the steps
  // The physical part's fitted scales (1 / efficiency); 0 leaves it out.
  double compute_scale = 0.0;
  double memory_scale = 0.0;
  double link_scale = 0.0;
  std::optional<PhysicalCost> physics = std::nullopt;

  // kInvalidArgument naming a coefficient that is negative, NaN or above
  // kMaxInputSeconds.
  [[nodiscard]] Result<void> Validate() const;
};

// The coefficients' names, in declaration order (the keys of --cost, cost
// files and the deployment presets' "cost" objects).
inline constexpr std::array<std::string_view, 14> kCostCoefficients = {
    "step_s",         "prefill_token_s",  "prefill_attention_s",
    "decode_token_s", "decode_context_s", "request_s",
    "admission_s",    "state_write_s",    "draft_token_s",
    "copy_byte_s",    "serving_s",        "compute_scale",
    "memory_scale",   "link_scale"};
// The index of serving_s, the one coefficient that is not a step's.
inline constexpr std::size_t kServingCoefficient = 10;
// The physical part's scales, and their least physical value (efficiency
// at most 1).
inline constexpr std::size_t kComputeScale = 11;
inline constexpr std::size_t kMemoryScale = 12;
inline constexpr std::size_t kLinkScale = 13;
inline constexpr double kLeastScale = 1.0;

// What one step computes, summed over its requests.
struct StepShape {
  std::uint64_t prefill_tokens = 0;
  double prefill_attention_pairs = 0.0;     // on one DCP rank
  std::uint64_t decode_tokens = 0;          // fed tokens and drafts
  std::uint64_t decode_context_tokens = 0;  // on one DCP rank
  std::uint32_t requests = 0;               // scheduled in the step
  std::uint32_t admissions = 0;             // first admissions
  std::uint64_t state_bytes_written = 0;    // recurrent pages written
  std::uint64_t draft_tokens = 0;           // drafts among decode tokens
  std::uint64_t copies = 0;                 // copy-on-write block copies
  std::uint64_t copy_bytes = 0;             // their bytes (0: unknown)
  std::uint64_t sampled_tokens = 0;  // outputs the step produced (not a cost)
  // For the physical part, on one DCP rank: decodes' (query, key) pairs,
  // every pair capped at the sparse top-k keys a query attends (prefill and
  // decode), and the keys decodes attend (capped likewise).
  double decode_attention_pairs = 0.0;
  double sparse_attention_pairs = 0.0;
  std::uint64_t decode_sparse_keys = 0;

  bool IsEmpty() const { return prefill_tokens == 0 && decode_tokens == 0; }
};

// The shape's value for coefficient `i` of kCostCoefficients under `model`
// (1 for step_s of a non-empty step, 0 for serving_s; for a physical scale,
// the seconds at the peak of its side of the roofline when that side binds
// under `model`'s scales, else 0; 0 without physics).
double Feature(const CostModel& model, const StepShape& shape, std::size_t i);

// The physical part's seconds at the peaks: compute, memory and link.
struct PeakSeconds {
  double compute = 0.0;
  double memory = 0.0;
  double link = 0.0;
};
PeakSeconds PhysicalSeconds(const PhysicalCost& physics,
                            const StepShape& shape);

// The fraction of a layer's routed experts that `tokens` tokens, each
// routed to `per_token` of `experts` uniformly, use: 1 - (1 - k/E)^T; 1 for
// a dense model (experts 0).
double ExpertCoverage(std::uint32_t experts, std::uint32_t per_token,
                      std::uint64_t tokens);

// sum_{p=start}^{end-1} min(p + 1, topk): the pairs of a sparse attention
// that attends topk keys at most (topk 0: PrefillAttentionPairs).
// REQUIRES: start <= end.
double SparseAttentionPairs(std::uint64_t start, std::uint64_t end,
                            std::uint32_t topk);

// Coefficient `i` of kCostCoefficients.
double Coefficient(const CostModel& model, std::size_t i);

// sum_{p=start}^{end-1} (p + 1). REQUIRES: start <= end.
double PrefillAttentionPairs(std::uint64_t start, std::uint64_t end);

// Recurrent block boundaries a chunk [start, end) reaches: floor(end /
// block) - floor(start / block). REQUIRES: block > 0, start <= end.
std::uint64_t BoundariesReached(std::uint64_t start, std::uint64_t end,
                                std::uint64_t block);

// The modelled duration of a step of `shape`; 0 for an empty step.
double StepSeconds(const CostModel& model, const StepShape& shape);

// A router's estimates of an instance's queued work (hkv/simulator.h): the
// seconds per token of a prefill step of `chunk` tokens, and per request of
// a step decoding `requests` requests of one token at `context` tokens.
double PrefillSecondsPerToken(const CostModel& model, std::uint32_t chunk);
struct DecodeBatch {
  std::uint32_t requests = 16;
  std::uint32_t context = 4096;
};
double DecodeSecondsPerRequest(const CostModel& model, DecodeBatch batch);

// The cost model of deployment preset `name` (data/deployments/); kNotFound
// listing the presets otherwise.
[[nodiscard]] Result<CostModel> CostModelPreset(std::string_view name);

// Names of the presets, for help texts.
std::vector<std::string> CostModelPresetNames();

// Sets the coefficient called `key` (a name of kCostCoefficients).
// kInvalidArgument for an unknown key or a value that is negative, NaN or
// above kMaxInputSeconds (so modelled times stay finite).
[[nodiscard]] Result<void> SetCostCoefficient(CostModel& model,
                                              std::string_view key,
                                              double value);

// Applies a JSON object of coefficients ({"decode_token_s": 3e-4, ...}, and
// optionally "name") over `model`. kInvalidArgument for text that is not a
// JSON object, an unknown key or a value that is not a number.
[[nodiscard]] Result<CostModel> ApplyCostJson(CostModel model,
                                              std::string_view json_text);

// The coefficients as a JSON object text (every key of kCostCoefficients).
std::string CostJson(const CostModel& model);

}  // namespace hkv
