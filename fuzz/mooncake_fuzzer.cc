// Fuzzes the Mooncake trace reader (ReadMooncakeTrace). The reader takes a
// path, so each input is written to an in-memory file (memfd) read back
// through /proc/self/fd. A trace it accepts must hold valid requests that
// convert to a valid workload.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "hkv/mooncake_trace.h"
#include "hkv/workload.h"

namespace {

// The memfd holding the current input, and its path.
const std::string& InputPath(const std::uint8_t* data, std::size_t size) {
  static const int fd = memfd_create("hkv_fuzz_mooncake", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ftruncate(fd, 0) != 0 ||
      pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) {
    std::abort();  // the harness itself failed, not the reader
  }
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const hkv::Result<std::vector<hkv::TraceRequest>> trace =
      hkv::ReadMooncakeTrace(InputPath(data, size));
  if (!trace) return 0;
  for (const hkv::TraceRequest& request : *trace) {
    hkv::fuzz::Require(hkv::ValidateTraceRequest(request).has_value(),
                       "an accepted trace line is a valid request");
    // Synthesising tokens is linear in the prompt: only for short ones.
    if (request.input_length <= 4096) {
      hkv::fuzz::Require(
          hkv::MooncakeTokens(request).size() == request.input_length,
          "MooncakeTokens gives input_length tokens");
    }
  }
  // The reader refuses timestamps that decrease: what it accepts is a
  // valid workload.
  const hkv::Result<void> valid =
      hkv::ValidateWorkload(hkv::FromMooncake(*trace));
  hkv::fuzz::Require(valid.has_value(),
                     "an accepted trace is a valid workload: " +
                         (valid ? "" : valid.error().message));
  return 0;
}
