// The operation-sequence fuzzer's harness: drives a cache core (the state
// behind CacheManager) with a sequence of scheduler calls decoded from fuzz
// bytes, and checks after every call:
//   - every lookup equals the brute-force HybridOracle's hit;
//   - the core's invariants hold (reference counts against block tables and
//     copy pins, free queue, index), and it holds blocks for exactly the
//     requests the harness believes;
//   - a refused call (UsageError) leaves the state digest byte-identical,
//     and so does a failed first allocation (std::nullopt);
//   - a valid call is not refused and a deliberately invalid one is.
// A failed check prints what broke and aborts (the fuzzer's crash).
//
// Thread-compatible; one harness per fuzz input.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_core.h"
#include "hkv/cache_manager.h"
#include "hkv/request.h"
#include "hkv/result.h"

namespace hkv::fuzz {

// What a call must do.
enum class Expect { kSucceed, kMayBeRefused, kRefused };

// Prints `what`, the configuration and the calls noted so far, and aborts
// unless `ok`.
void Check(bool ok, const char* what);
// Starts what a failed Check prints with `config` (a crash inside the
// library prints it too: see the fuzzer's entry point).
void StartReport(const CacheConfig& config);
// Adds a line to what a failed Check prints.
void Note(const std::string& what);
// "rID (N tokens: ...)".
std::string Describe(const Request& request);

class CacheOpsHarness {
 public:
  // REQUIRES: config.Validate() succeeds.
  CacheOpsHarness(const CacheConfig& config, FuzzedDataProvider& in);

  // Decodes one operation from the input and runs it with its checks.
  void Step();

 private:
  struct Tracked {
    Request request;
    CacheHit hit = {};            // its latest lookup
    bool holds = false;           // holds blocks
    std::uint32_t computed = 0;   // tokens computed, hit included
    std::uint32_t scheduled = 0;  // allocated, not yet computed
  };

  void Dispatch(int op);
  void NewRequest();

  // cache_ops_steps.cc: the scheduler's calls.
  void Admit();
  void Continue();
  void CommitStep();
  void CommitEarlier();
  void FreeOne();
  void TakeCopies();
  void ResetPrefixCache();
  void TakeEventsAndStats();
  void Probe();
  std::optional<NewBlocks> Allocate(Tracked& t, const AllocationRequest& args,
                                    Expect expect);
  void CheckExports(const Tracked& t, const NewBlocks& placed,
                    std::uint32_t start, std::uint32_t end) const;
  Expect AdoptionExpectation(const Request& request, const CacheHit* hit) const;
  std::uint32_t Chunk(const Tracked& t, std::uint32_t done);

  // cache_ops_invalid.cc: calls the API must refuse.
  void Invalid();
  void UnknownRequest();
  void ForeignScheme();
  void BadContinuation();
  void ForeignHit();
  void MisshapenHit();
  void OverlongCut();

  // Runs `call`, checking it against `expect`; a refusal must leave the
  // state as it was. Returns whether the call ran (was not refused).
  template <typename Call>
  bool Run(Expect expect, Call&& call);
  CacheHit CheckedLookup(const Request& request) const;
  std::vector<TokenId> Prompt();
  Request MakeRequest(std::vector<TokenId> prompt);
  // A tracked request matching `pred`, chosen by the input; nullptr if none.
  template <typename Pred>
  Tracked* Pick(Pred&& pred);
  std::vector<RequestId> Ids() const;
  std::string Digest() const;
  void CheckState() const;

  CacheConfig config_;
  FuzzedDataProvider& in_;
  internal::CacheCore core_;
  std::uint32_t max_block_;
  std::uint32_t max_prompt_;
  std::vector<Tracked> tracked_;
  std::uint64_t next_id_ = 1;
};

template <typename Call>
bool CacheOpsHarness::Run(Expect expect, Call&& call) {
  // A valid call refused fails anyway: no digest needed.
  const std::string before = expect == Expect::kSucceed ? "" : Digest();
  try {
    call();
  } catch (const UsageError&) {
    Check(expect != Expect::kSucceed, "a valid call was refused");
    Check(Digest() == before, "a refused call changed the state");
    return false;
  }
  Check(expect != Expect::kRefused, "an invalid call was accepted");
  return true;
}

template <typename Pred>
CacheOpsHarness::Tracked* CacheOpsHarness::Pick(Pred&& pred) {
  std::vector<Tracked*> candidates;
  for (Tracked& t : tracked_) {
    if (pred(t)) candidates.push_back(&t);
  }
  if (candidates.empty()) return nullptr;
  return candidates[in_.ConsumeIntegralInRange<std::size_t>(
      0, candidates.size() - 1)];
}

}  // namespace hkv::fuzz
