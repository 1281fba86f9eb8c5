// The ClusterIndex fuzzer (hkv/cluster_index.h): the last bytes choose two
// or three instances, a capacity of 8 to 64 keys (so the LRU bound bites)
// and the wire's hash encoding; the rest up to 64 calls: ApplyBatch of raw
// bytes or of a batch EncodeEventBatch made of events over two prompts'
// keys (so stores and removals hit; now and then a group the layout lacks,
// the other hash encoding or a truncated batch) with a sequence number
// near the expected one, Apply, Clear, Match and MatchKeys (with wrong key
// counts too). After every call (cluster_index_checks.h): nothing throws,
// an instance holds at most the capacity, answers leave the prompt's last
// token, counters only grow, ApplyBatch's outcome is the one its sequence
// number and readability call for, a call on one instance leaves the
// others alone, and what the header says changes nothing (a refused
// Apply, a duplicate, a gap) changes nothing.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "cluster_index_harness.h"

namespace {

constexpr int kMaxSteps = 64;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  FuzzedDataProvider in(data, size);
  hkv::fuzz::ClusterIndexHarness harness(in);
  for (int step = 0; step < kMaxSteps && in.remaining_bytes() > 0; ++step) {
    try {
      harness.Step();
    } catch (const std::exception& e) {
      harness.Check(false, std::string("a call threw: ") + e.what());
    }
  }
  return 0;
}
