// Fuzzes the model-file loader (ParseModelJson). A model it accepts must
// validate, and the capacity planner must answer for it (a plan or an
// error) at its automatic geometry and at a fixed one.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "hkv/model.h"
#include "hkv/planner.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const hkv::Result<hkv::ModelSpec> model = hkv::ParseModelJson(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!model) return 0;
  hkv::fuzz::Require(model->Validate().has_value(), "a parsed model validates");
  const hkv::PlanOptions options{.tp = 2,
                                 .budget_bytes = std::uint64_t{32} << 30,
                                 .context_tokens = 131072};
  if (const hkv::Result<hkv::Geometry> g = hkv::AutoGeometry(*model, options)) {
    (void)hkv::PlanCapacity(*model, *g, options);
  }
  (void)hkv::PlanCapacity(
      *model, {.target_block = 256, .recurrent_block = 256, .hash_unit = 256},
      options);
  return 0;
}
