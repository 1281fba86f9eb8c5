// The flags of `hkv simulate` and `hkv compare`: one per option of the
// library's table (hkv/sim_options.h), with its help and its check, then
// the output flags.
#include "sim_setup.h"

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "data_dir.h"
#include "hkv/sim_options.h"
#include "numbers.h"

namespace hkv::cli {
namespace {

using O = SimCommandOptions;

template <typename T>
constexpr bool kIsOptional = false;
template <typename T>
constexpr bool kIsOptional<std::optional<T>> = true;

// CLI11's check of a text option: the library's check, named as in help.
CLI::Validator TextCheck(const SimOption& option) {
  return CLI::Validator(
      [check = option.check](std::string& text) {
        Result<void> ok = check(text);
        return ok ? std::string() : ok.error().message;
      },
      option.value_name);
}

// The flag of one option; help shows the default unless the field has
// none (an optional, or empty).
void AddFlag(CLI::App& sub, O& o, const SimOption& option) {
  const std::string flag = option.Flag();
  std::visit(
      [&](auto field) {
        using T = std::remove_reference_t<decltype(o.*field)>;
        if constexpr (std::is_same_v<T, bool>) {
          sub.add_flag(flag, o.*field, option.help);
        } else if constexpr (std::is_same_v<T, FreeOrder>) {
          AddFreeOrderOption(sub, o.*field);
        } else {
          CLI::Option* added = sub.add_option(flag, o.*field, option.help);
          if (option.IsNumber()) {
            added->check(option.IsReal() ? RealIn(option.real)
                                         : WholeIn(option.min, option.max));
          } else if (option.check != nullptr) {
            added->check(TextCheck(option));
          }
          if constexpr (std::is_same_v<T, std::string>) {
            if (!(o.*field).empty()) added->capture_default_str();
          } else if constexpr (std::is_arithmetic_v<T>) {
            added->capture_default_str();
          } else {
            static_assert(kIsOptional<T> ||
                          std::is_same_v<T, std::vector<std::string>>);
          }
        }
      },
      option.field);
}

}  // namespace

void AddSimOptions(CLI::App& sub, SimCommandOptions& options) {
  for (const SimOption& option : SimOptions()) {
    if (!option.Flag().empty()) AddFlag(sub, options, option);
  }
  CLI::Option* json = sub.add_flag("--json", options.json, "Print JSON");
  sub.add_flag("--csv", options.csv, "Print CSV")->excludes(json);
  sub.add_flag("--quiet", options.quiet,
               "No progress on stderr (a bar with the time left on a "
               "terminal, a line every 10 s elsewhere)");
  options.data_dir = DataDir();
  // The options given (by name), which a preset does not override.
  sub.parse_complete_callback([&sub, &options] {
    for (const SimOption& option : SimOptions()) {
      const std::string flag = option.Flag();
      if (flag.empty()) continue;
      const CLI::Option* given = sub.get_option_no_throw(flag);
      if (given != nullptr && given->count() > 0) {
        options.given.insert(std::string(option.name));
      }
    }
  });
}

}  // namespace hkv::cli
