#include <map>
#include <string>

#include "hkv/sim_options.h"
#include "sim_setup.h"

namespace hkv::cli {

void AddFreeOrderOption(CLI::App& sub, FreeOrder& order) {
  static const std::map<std::string, FreeOrder> kNames = {
      {"prepend-uncached", FreeOrder::kPrependUncached},
      {"append-all", FreeOrder::kAppendAll}};
  sub.add_option("--free-order", order, FindSimOption("free_order")->help)
      ->transform(CLI::CheckedTransformer(kNames, CLI::ignore_case))
      ->option_text("prepend-uncached|append-all (default prepend-uncached)");
}

}  // namespace hkv::cli
