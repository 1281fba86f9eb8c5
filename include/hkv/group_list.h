// A compact text form of a hybrid model's cache groups, for the command line:
// comma-separated groups, each `kind:block[:option...]`.
//
//   kinds    full (output_window=W: decode reads the prompt and the last W
//            outputs), sliding (needs window=W), chunked (needs chunk=C),
//            recurrent (mode=align|all|none, default align; spec=S speculative
//            state blocks, default 0; export: the kernel leaves the prompt's
//            checkpoint from inside a chunk), scratch (needs blocks=N pages
//            per request)
//   options  eagle (the group feeds an EAGLE/MTP draft model), replicated
//            (whole pages on every DCP rank instead of sharded ones)
//
// The parser checks the syntax only; CacheConfig::Validate() judges whether
// the groups make a valid cache (hash unit, DCP layout, kinds that cannot
// feed a draft model).
//
// Thread-safety: pure functions.
//
// Example:
//   Result<std::vector<GroupSpec>> groups = ParseGroupList(
//       "full:2048,recurrent:256,sliding:2048:window=4096:eagle");
//   if (!groups) std::cerr << groups.error().message;
#pragma once

#include <string_view>
#include <vector>

#include "hkv/cache_manager.h"
#include "hkv/result.h"

namespace hkv {

// Parses `text` as described above. Returns kInvalidArgument naming the
// offending group (its index from 0, as group ids, and its text) and the
// problem: an empty list or group, an unknown kind or option, a block or option
// value that is missing, zero (spec=0 is fine) or not a decimal number below
// 2^32, an option the kind does not take, an option given twice, or a missing
// window/chunk. O(text length).
[[nodiscard]] Result<std::vector<GroupSpec>> ParseGroupList(
    std::string_view text);

}  // namespace hkv
