#include "cache_ops_harness.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "cache_ops_config.h"
#include "hybrid_oracle.h"
#include "state_digest.h"
#include "test_util.h"

namespace hkv::fuzz {
namespace {

constexpr std::size_t kMaxTracked = 8;

// What a failure report prints: the configuration and the calls so far.
std::string& FailureContext() {
  static std::string context;
  return context;
}

// HKV_FUZZ_TRACE set: every note goes to stderr at once too, for crashes
// inside the library (which print no report).
bool Tracing() {
  static const bool tracing = std::getenv("HKV_FUZZ_TRACE") != nullptr;
  return tracing;
}

}  // namespace

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "cache_ops: %s\n%s\n", what, FailureContext().c_str());
  std::abort();
}

void StartReport(const CacheConfig& config) {
  FailureContext().clear();
  Note("config: " + Describe(config));
}

void Note(const std::string& what) {
  if (Tracing()) std::fprintf(stderr, "%s\n", what.c_str());
  std::string& context = FailureContext();
  context += what;
  context += '\n';
}

CacheOpsHarness::CacheOpsHarness(const CacheConfig& config,
                                 FuzzedDataProvider& in)
    : config_(config),
      in_(in),
      core_(config),
      max_block_(MaxBlockTokens(config)),
      max_prompt_(std::min(6 * max_block_, config.max_model_len)) {}

void CacheOpsHarness::Step() {
  Dispatch(in_.ConsumeIntegralInRange(0, 15));
  CheckState();
}

void CacheOpsHarness::Dispatch(int op) {
  switch (op) {
    case 0:
    case 1:
      return NewRequest();
    case 2:
    case 3:
      return Admit();
    case 4:
    case 5:
      return Continue();
    case 6:
    case 7:
      return CommitStep();
    case 8:
      return CommitEarlier();
    case 9:
      return FreeOne();
    case 10:
      return TakeCopies();
    case 11:
      Note("finish step");
      return core_.FinishStep();
    case 12:
      return ResetPrefixCache();
    case 13:
      return TakeEventsAndStats();
    case 14:
      return Probe();
    default:
      return Invalid();
  }
}

// The hit must be the oracle's (none when caching is off or the request
// skips the cache).
CacheHit CacheOpsHarness::CheckedLookup(const Request& request) const {
  const CacheHit hit = core_.Lookup(request);
  const bool reads = config_.caching == PrefixCaching::kEnabled &&
                     request.cache_read() == CacheRead::kAllowed;
  const std::uint32_t expected =
      reads ? testing::HybridOracle(config_, core_.pool()).Hit(request) : 0;
  if (hit.num_tokens != expected) {
    Note("lookup of " + Describe(request) + " hit " +
         std::to_string(hit.num_tokens) + ", oracle " +
         std::to_string(expected));
  }
  Check(hit.num_tokens == expected, "a lookup disagrees with the oracle");
  Check(testing::SameAsLookupKeys(core_, request, hit),
        "a lookup over keys read on demand disagrees with Lookup");
  return hit;
}

// A prefix of a tracked request's tokens, then tokens from a small alphabet
// (so that prompts share prefixes often), at most max_prompt_ in all.
std::vector<TokenId> CacheOpsHarness::Prompt() {
  std::vector<TokenId> tokens;
  if (!tracked_.empty() && in_.ConsumeBool()) {
    const Tracked& from = tracked_[in_.ConsumeIntegralInRange<std::size_t>(
        0, tracked_.size() - 1)];
    const std::span<const TokenId> source = from.request.tokens();
    tokens.assign(source.begin(),
                  source.begin() + in_.ConsumeIntegralInRange<std::ptrdiff_t>(
                                       0, std::ssize(source)));
  }
  const std::uint32_t more = in_.ConsumeIntegralInRange(0u, 2 * max_block_);
  std::uint8_t bits = 0;  // four 2-bit tokens per input byte
  for (std::uint32_t i = 0; i < more; ++i) {
    if (i % 4 == 0) bits = in_.ConsumeIntegral<std::uint8_t>();
    tokens.push_back(bits & 3u);
    bits = static_cast<std::uint8_t>(bits >> 2);
  }
  tokens.resize(std::clamp<std::size_t>(tokens.size(), 1, max_prompt_));
  return tokens;
}

Request CacheOpsHarness::MakeRequest(std::vector<TokenId> prompt) {
  RequestOptions options{.id = RequestId{next_id_++}};
  const int flavour = in_.ConsumeIntegralInRange(0, 15);
  if (flavour == 1) options.extras.lora_name = "adapter";
  if (flavour == 2) options.extras.cache_salt = "salt";
  if (flavour == 3) options.cache_read = CacheRead::kSkipped;
  if (flavour == 4) options.event_report = EventReport::kFull;
  return Request(options, prompt, core_.key_scheme());
}

void CacheOpsHarness::NewRequest() {
  if (tracked_.size() >= kMaxTracked) {
    auto done = std::find_if(tracked_.begin(), tracked_.end(),
                             [](const Tracked& t) { return !t.holds; });
    if (done == tracked_.end()) return;
    tracked_.erase(done);
  }
  Request request = MakeRequest(Prompt());
  Note("new " + Describe(request));
  const CacheHit hit = CheckedLookup(request);
  tracked_.push_back({.request = std::move(request), .hit = hit});
}

std::string Describe(const Request& request) {
  std::string out =
      "r" + std::to_string(static_cast<std::uint64_t>(request.id()));
  out += " (" + std::to_string(request.num_tokens()) + " tokens: ";
  for (const TokenId t : request.tokens()) out += std::to_string(t);
  return out + ")";
}

std::vector<RequestId> CacheOpsHarness::Ids() const {
  std::vector<RequestId> ids;
  for (const Tracked& t : tracked_) ids.push_back(t.request.id());
  return ids;
}

std::string CacheOpsHarness::Digest() const {
  return StateDigest(core_, Ids());
}

void CacheOpsHarness::CheckState() const {
  Check(core_.CheckInvariants(), "the cache's invariants are broken");
  for (const Tracked& t : tracked_) {
    Check(core_.HoldsBlocks(t.request.id()) == t.holds,
          "the cache holds blocks for another set of requests");
  }
}

}  // namespace hkv::fuzz
