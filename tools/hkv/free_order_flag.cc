#include <map>
#include <string>

#include "sim_setup.h"

namespace hkv::cli {

void AddFreeOrderOption(CLI::App& sub, FreeOrder& order) {
  static const std::map<std::string, FreeOrder> kNames = {
      {"prepend-uncached", FreeOrder::kPrependUncached},
      {"append-all", FreeOrder::kAppendAll}};
  sub.add_option("--free-order", order,
                 "Where freed blocks without a key go: prepend-uncached (the "
                 "front of the free queue, reused first, as the reference "
                 "fork) or append-all (the back, as upstream vLLM)")
      ->transform(CLI::CheckedTransformer(kNames, CLI::ignore_case))
      ->option_text("prepend-uncached|append-all (default prepend-uncached)");
}

}  // namespace hkv::cli
