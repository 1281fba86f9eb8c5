// Fuzzes what `hkv plan` parses: the geometry (ParseGeometry), the budget
// (ParseByteSize) and the preset name, then plans. Input lines:
//   GEOMETRY (T/R/U or "auto")
//   BUDGET   (e.g. 33GiB)
//   PRESET   (e.g. glm53-flash-like)
//   TP DCP CONTEXT
// A parsed geometry must parse again from its printed form; the planner must
// answer (a plan or an error) for every parsed input.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "hkv/model.h"
#include "hkv/planner.h"

namespace {

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (lines.size() < 3) {
    const std::size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    text = end == std::string_view::npos ? "" : text.substr(end + 1);
  }
  lines.push_back(text);
  return lines;
}

// The next whitespace-separated number of `text` (0 when there is none).
std::uint64_t Number(std::string_view& text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  std::uint64_t value = 0;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return ec == std::errc() ? value : 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::vector<std::string_view> lines =
      Lines(std::string_view(reinterpret_cast<const char*>(data), size));
  const hkv::Result<hkv::Geometry> geometry = hkv::ParseGeometry(lines[0]);
  if (geometry) {
    const std::string printed = std::to_string(geometry->target_block) + "/" +
                                std::to_string(geometry->recurrent_block) +
                                "/" + std::to_string(geometry->hash_unit);
    const hkv::Result<hkv::Geometry> again = hkv::ParseGeometry(printed);
    hkv::fuzz::Require(again.has_value() && *again == *geometry,
                       "a geometry parses again from its printed form");
  }
  const hkv::Result<std::uint64_t> budget = hkv::ParseByteSize(lines[1]);
  const hkv::Result<hkv::ModelSpec> model = hkv::LoadPreset(lines[2]);
  if ((!geometry && lines[0] != "auto") || !budget || !model) return 0;
  std::string_view numbers = lines[3];
  const hkv::PlanOptions options{
      .tp = static_cast<std::uint32_t>(Number(numbers) % 1024),
      .dcp = static_cast<std::uint32_t>(Number(numbers) % 1024),
      .budget_bytes = *budget,
      .context_tokens = Number(numbers)};
  if (!options.Validate()) return 0;
  const hkv::Result<hkv::Geometry> planned =
      geometry ? geometry : hkv::AutoGeometry(*model, options);
  if (planned) (void)hkv::PlanCapacity(*model, *planned, options);
  return 0;
}
