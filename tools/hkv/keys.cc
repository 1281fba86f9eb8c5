// `hkv keys`: a request's chained prefix keys in hex, so that a router that
// recomputes keys can check its own against hkv's (spec §2).
#include "hkv/keys.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_status.h"
#include "hkv/limits.h"
#include "hkv/request.h"
#include "numbers.h"
#include "token_list.h"

namespace hkv::cli {
namespace {

constexpr char kExamples[] = R"(Examples:
  hkv keys prompt.json
      keys of 16-token units (sha256_cbor, seed "0")
  echo '[1,2,3,4,5,6,7,8]' | hkv keys - --hash-unit 4 --salt tenant-a
      tokens from stdin; the salt enters the first unit
  hkv keys prompt.json --lora sql:/adapters/sql --mm img-7f3a:10:64 --json
      an adapter on every unit and an image at tokens [10, 74), as JSON)";

bool ParseUint32(std::string_view text, std::uint32_t& value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && !text.empty();
}

// "ID:OFFSET:LENGTH"; the identifier may itself hold colons.
std::optional<MultimodalItem> ParseItem(std::string_view text) {
  const std::size_t second = text.rfind(':');
  if (second == std::string_view::npos || second == 0) return std::nullopt;
  const std::size_t first = text.rfind(':', second - 1);
  if (first == std::string_view::npos || first == 0) return std::nullopt;
  MultimodalItem item{.identifier = std::string(text.substr(0, first))};
  if (!ParseUint32(text.substr(first + 1, second - first - 1), item.offset) ||
      !ParseUint32(text.substr(second + 1), item.length) || item.length == 0 ||
      std::uint64_t{item.offset} + item.length > kMaxTokensPerRequest) {
    return std::nullopt;
  }
  return item;
}

// Usage errors, reported by CLI11 (exit code 2) before the run.
const CLI::Validator kItemValidator(
    [](std::string& text) {
      return ParseItem(text)
                 ? std::string()
                 : "'" + text +
                       "' is not ID:OFFSET:LENGTH (LENGTH >= 1, the item "
                       "within 2^24 tokens)";
    },
    "ID:OFFSET:LENGTH");
const CLI::Validator kLoraValidator(
    [](std::string& text) {
      return text.empty() || text.front() == ':'
                 ? "'" + text + "' has no adapter name (NAME[:PATH])"
                 : std::string();
    },
    "NAME[:PATH]");

KeyExtras Extras(const KeysCommandOptions& options) {
  KeyExtras extras{.cache_salt = options.salt};
  const std::size_t colon = options.lora.find(':');
  extras.lora_name = options.lora.substr(0, colon);
  if (colon != std::string::npos)
    extras.lora_path = options.lora.substr(colon + 1);
  for (const std::string& text : options.mm) {
    extras.multimodal.push_back(*ParseItem(text));  // validated
  }
  std::stable_sort(extras.multimodal.begin(), extras.multimodal.end(),
                   [](const MultimodalItem& a, const MultimodalItem& b) {
                     return a.offset < b.offset;
                   });
  return extras;
}

// Items are placeholders inside the prompt: one ending past it is an error.
std::optional<std::string> ItemOutOfRange(const KeysCommandOptions& options,
                                          std::size_t num_tokens) {
  for (const std::string& text : options.mm) {
    const MultimodalItem item = *ParseItem(text);
    if (std::uint64_t{item.offset} + item.length > num_tokens) {
      return fmt::format(
          "--mm {}: the item ends at token {}, past the {} tokens", text,
          std::uint64_t{item.offset} + item.length, num_tokens);
    }
  }
  return std::nullopt;
}

void PrintText(const Request& request) {
  const std::uint32_t unit = request.key_scheme().hash_unit;
  const std::size_t size = DigestSize(request.key_scheme().function);
  const std::span<const BlockHash> keys = request.keys();
  // Ranges padded to the longest, the last one.
  const std::size_t width =
      fmt::format("[{}, {})", keys.size() * unit, keys.size() * unit).size();
  for (std::size_t k = 0; k < keys.size(); ++k) {
    fmt::print("{:<{}}  {}\n",
               fmt::format("[{}, {})", k * unit, (k + 1) * unit), width,
               keys[k].Hex(size));
  }
  if (keys.empty()) {
    fmt::print(stderr,
               "hkv keys: fewer tokens ({}) than one unit ({}): no keys\n",
               request.num_tokens(), unit);
  }
}

void PrintJson(const Request& request, const KeysCommandOptions& options) {
  const KeyScheme& scheme = request.key_scheme();
  const std::size_t size = DigestSize(scheme.function);
  nlohmann::json keys = nlohmann::json::array();
  for (const BlockHash& key : request.keys()) keys.push_back(key.Hex(size));
  const nlohmann::json out = {
      {"scheme",
       {{"key_function", KeyFunctionName(scheme.function)},
        {"hash_unit", scheme.hash_unit},
        {"seed", options.seed ? nlohmann::json(*options.seed) : nullptr},
        {"seed_key", scheme.seed_key.Hex(size)}}},
      {"num_tokens", request.num_tokens()},
      {"keys", std::move(keys)}};
  fmt::print("{}\n", out.dump(2));
}

}  // namespace

void RegisterKeys(CLI::App& app) {
  auto options = std::make_shared<KeysCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "keys", "Print a request's chained prefix keys (hex), one per hash unit");
  sub->footer(kExamples);
  sub->add_option("TOKENS", options->tokens,
                  "JSON file holding an array of token ids, or - for stdin")
      ->required();
  sub->add_option("--key-function", options->key_function, "Prefix key digest")
      ->check(KeyFunctionIn())
      ->capture_default_str();
  sub->add_option("--hash-unit", options->hash_unit, "Tokens per key")
      ->check(CLI::Range(std::uint32_t{1}, kMaxTokensPerRequest))
      ->capture_default_str();
  sub->add_option("--seed", options->seed,
                  "Seed of every chain (the reference's PYTHONHASHSEED); "
                  "default \"0\" for sha256_cbor, required for xxh3_128_cbor");
  sub->add_option("--lora", options->lora,
                  "LoRA adapter name and path: (\"lora\", NAME, PATH) on "
                  "every unit (PATH default empty)")
      ->check(kLoraValidator);
  sub->add_option("--mm", options->mm,
                  "A multimodal item at tokens [OFFSET, OFFSET+LENGTH) with "
                  "identifier ID; repeat for more")
      ->check(kItemValidator);
  sub->add_option("--salt", options->salt,
                  "Cache salt: (\"cache_salt\", S) on the first unit");
  sub->add_flag("--json", options->json,
                "Print the scheme and the keys as one JSON object");
  sub->callback([options] {
    if (const int code = RunKeys(*options); code != 0) {
      throw CLI::RuntimeError(code);
    }
  });
}

int RunKeys(const KeysCommandOptions& options) {
  Result<KeyFunction> function = ParseKeyFunction(options.key_function);
  if (!function) return Failure("keys", function.error());
  if (*function == KeyFunction::kXxh3_128Cbor && !options.seed) {
    // The library would pick a random seed: keys nobody else can compute.
    return Failure("keys", {ErrorCode::kInvalidArgument,
                            "--key-function xxh3_128_cbor needs --seed"});
  }
  Result<KeyScheme> scheme = MakeKeyScheme({.function = *function,
                                            .hash_unit = options.hash_unit,
                                            .seed = options.seed});
  if (!scheme) return Failure("keys", scheme.error());
  Result<std::vector<TokenId>> tokens = ReadTokenFile(options.tokens);
  if (!tokens) return Failure("keys", tokens.error());
  if (std::optional<std::string> bad =
          ItemOutOfRange(options, tokens->size())) {
    // The tokens do not hold the item: the input's fault, as a bad token.
    return Failure("keys", {ErrorCode::kCorruption, *bad});
  }
  const Request request({.extras = Extras(options)}, *tokens, *scheme);
  if (options.json) {
    PrintJson(request, options);
  } else {
    PrintText(request);
  }
  return 0;
}

}  // namespace hkv::cli
