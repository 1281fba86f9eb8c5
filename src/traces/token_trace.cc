#include "hkv/token_trace.h"

#include <xxhash.h>

#include <cmath>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>

#include "hkv/limits.h"
#include "traces/line_reader.h"
#include "traces/number_text.h"

namespace hkv {
namespace {

using Json = nlohmann::json;
using Tokens = std::shared_ptr<const std::vector<TokenId>>;

// Output segment ids of token-trace requests: bits 62 and 61 set, clear of
// the Mooncake trace's (bit 62 alone) and the generators' (bit 63).
constexpr std::uint64_t kOutputIdBase = std::uint64_t{3} << 61;

struct Source {
  std::string prefix;  // "token trace line " or "FILE:"
  Error Corrupt(std::size_t line, const std::string& problem) const {
    return {ErrorCode::kCorruption,
            prefix + std::to_string(line) + ": " + problem};
  }
};

using Problem = tl::expected<void, std::string>;
Problem Bad(std::string text) { return tl::unexpected(std::move(text)); }

// What the trace has read so far.
struct State {
  std::map<std::string, std::vector<Segment>, std::less<>> prefixes;
  std::map<std::string, std::pair<std::uint64_t, std::size_t>, std::less<>>
      sessions;  // name -> (last turn, its request's index)
  std::uint64_t tokens = 0;
  std::vector<SimRequest> out;
};

constexpr std::string_view kRequestFields[] = {
    "arrival_s", "token_ids", "output_tokens", "prefix", "session",
    "turn",      "think_s",   "lora",          "salt"};
constexpr std::string_view kPrefixFields[] = {"define", "token_ids", "prefix"};

template <std::size_t N>
Problem OnlyKnown(const Json& line, const std::string_view (&known)[N]) {
  for (const auto& [key, value] : line.items()) {
    bool found = false;
    for (std::string_view k : known) found = found || key == k;
    if (!found) return Bad("unknown field \"" + key + "\"");
  }
  return {};
}

tl::expected<std::string, std::string> Text(const Json& line,
                                            const char* field) {
  if (!line.contains(field)) return std::string();
  if (!line[field].is_string()) {
    return tl::unexpected(std::string(field) + " must be a string");
  }
  return line[field].get<std::string>();
}

tl::expected<double, std::string> Seconds(const Json& line, const char* field,
                                          double otherwise) {
  if (!line.contains(field)) return otherwise;
  const Json& v = line[field];
  if (!v.is_number() || !std::isfinite(v.get<double>()) ||
      v.get<double>() < 0.0 || v.get<double>() > kMaxInputSeconds) {
    return tl::unexpected(std::string(field) + " must be seconds in [0, " +
                          internal::ShortNumber(kMaxInputSeconds) + "]");
  }
  return v.get<double>();
}

tl::expected<std::uint64_t, std::string> Whole(const Json& line,
                                               const char* field,
                                               std::uint64_t max) {
  const Json& v = line[field];
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() > max) {
    return tl::unexpected(std::string(field) + " must be an integer in [0, " +
                          std::to_string(max) + "]");
  }
  return v.get<std::uint64_t>();
}

// The segments a line opens with: its prefix's, then its own token ids.
tl::expected<std::vector<Segment>, std::string> Prompt(const Json& line,
                                                       State& state) {
  std::vector<Segment> prompt;
  if (line.contains("prefix")) {
    const tl::expected<std::string, std::string> name = Text(line, "prefix");
    if (!name) return tl::unexpected(name.error());
    auto it = state.prefixes.find(*name);
    if (it == state.prefixes.end()) {
      return tl::unexpected("prefix \"" + *name +
                            "\" is not defined on an earlier line");
    }
    prompt = it->second;
  }
  if (!line.contains("token_ids") || !line["token_ids"].is_array()) {
    return tl::unexpected(std::string("token_ids must be an array"));
  }
  const Json& ids = line["token_ids"];
  if (state.tokens + ids.size() > kMaxTraceTokens) {
    return tl::unexpected("the trace holds more than " +
                          std::to_string(kMaxTraceTokens) +
                          " token ids (the limit per trace)");
  }
  auto tokens = std::make_shared<std::vector<TokenId>>();
  tokens->reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const Json& id = ids[i];
    if (!id.is_number_unsigned() || id.get<std::uint64_t>() > UINT32_MAX) {
      return tl::unexpected("token_ids[" + std::to_string(i) +
                            "] must be an integer in [0, 4294967295]");
    }
    tokens->push_back(static_cast<TokenId>(id.get<std::uint64_t>()));
  }
  state.tokens += tokens->size();
  if (!tokens->empty()) {
    const std::uint64_t digest =
        XXH3_64bits(tokens->data(), tokens->size() * sizeof(TokenId));
    prompt.push_back({.id = digest,
                      .length = static_cast<std::uint32_t>(tokens->size()),
                      .tokens = std::move(tokens)});
  }
  return prompt;
}

// The prompt in the key space of (lora, salt): every token XORed with a
// digest of the two (none when both are empty).
std::vector<Segment> InKeySpace(std::vector<Segment> prompt,
                                const std::string& lora,
                                const std::string& salt) {
  if (lora.empty() && salt.empty()) return prompt;
  const std::string both = lora + '\0' + salt;
  const auto mask = static_cast<TokenId>(XXH3_64bits(both.data(), both.size()));
  for (Segment& s : prompt) {  // every segment of this trace is explicit
    auto tokens = std::make_shared<std::vector<TokenId>>(*s.tokens);
    for (TokenId& t : *tokens) t ^= mask;
    s.id = XXH3_64bits(tokens->data(), tokens->size() * sizeof(TokenId));
    s.tokens = std::move(tokens);
  }
  return prompt;
}

Problem DefinePrefix(const Json& line, State& state) {
  if (Problem ok = OnlyKnown(line, kPrefixFields); !ok) return ok;
  const tl::expected<std::string, std::string> name = Text(line, "define");
  if (!name) return Bad(name.error());
  if (name->empty()) return Bad("define must name the prefix");
  if (state.prefixes.count(*name)) {
    return Bad("prefix \"" + *name + "\" is defined twice");
  }
  tl::expected<std::vector<Segment>, std::string> prompt = Prompt(line, state);
  if (!prompt) return Bad(prompt.error());
  state.prefixes.emplace(*name, std::move(*prompt));
  return {};
}

Problem AddRequest(const Json& line, State& state) {
  if (Problem ok = OnlyKnown(line, kRequestFields); !ok) return ok;
  const double before = state.out.empty() ? 0.0 : state.out.back().arrival_s;
  const tl::expected<double, std::string> arrival =
      Seconds(line, "arrival_s", before);
  if (!arrival) return Bad(arrival.error());
  if (*arrival < before) return Bad("arrival_s goes backwards");
  if (!line.contains("output_tokens")) return Bad("output_tokens is missing");
  const tl::expected<std::uint64_t, std::string> output =
      Whole(line, "output_tokens", kMaxTokensPerRequest);
  if (!output) return Bad(output.error());
  if (*output == 0) return Bad("output_tokens must be at least 1");
  tl::expected<std::vector<Segment>, std::string> prompt = Prompt(line, state);
  if (!prompt) return Bad(prompt.error());
  const tl::expected<std::string, std::string> lora = Text(line, "lora");
  if (!lora) return Bad(lora.error());
  const tl::expected<std::string, std::string> salt = Text(line, "salt");
  if (!salt) return Bad(salt.error());
  SimRequest r{.arrival_s = *arrival,
               .prompt = InKeySpace(std::move(*prompt), *lora, *salt),
               .output_length = static_cast<std::uint32_t>(*output),
               .output_id = kOutputIdBase + state.out.size()};
  if (PromptLength(r) == 0) return Bad("the prompt has no tokens");
  if (std::uint64_t{PromptLength(r)} + r.output_length > kMaxTokensPerRequest) {
    return Bad("more than " + std::to_string(kMaxTokensPerRequest) +
               " tokens (prompt and output; the limit per request)");
  }
  const tl::expected<std::string, std::string> session = Text(line, "session");
  if (!session) return Bad(session.error());
  if (!session->empty()) {
    if (!line.contains("turn")) return Bad("a session's request needs turn");
    const tl::expected<std::uint64_t, std::string> turn =
        Whole(line, "turn", UINT32_MAX);
    if (!turn) return Bad(turn.error());
    const tl::expected<double, std::string> think =
        Seconds(line, "think_s", 0.0);
    if (!think) return Bad(think.error());
    auto it = state.sessions.find(*session);
    if (it != state.sessions.end()) {
      if (*turn <= it->second.first) {
        return Bad("turn " + std::to_string(*turn) + " of session \"" +
                   *session + "\" is not after its turn " +
                   std::to_string(it->second.first));
      }
      r.after = it->second.second;
      r.delay_s = *think;
    }
    state.sessions[*session] = {*turn, state.out.size()};
  } else if (line.contains("turn") || line.contains("think_s")) {
    return Bad("turn and think_s need a session");
  }
  state.out.push_back(std::move(r));
  return {};
}

Result<std::vector<SimRequest>> ParseStream(std::istream& in,
                                            std::optional<std::size_t> limit,
                                            const Source& source) {
  internal::LineReader lines(in, kMaxTraceLineBytes);
  const internal::RequestQuota quota = internal::QuotaFor(limit);
  State state;
  while (!(quota.stops && state.out.size() == quota.requests)) {
    const internal::LineReader::Status status = lines.Next();
    if (status == internal::LineReader::Status::kEnd) break;
    const std::size_t number = lines.line_number();
    if (status == internal::LineReader::Status::kIoError) {
      return Fail(
          ErrorCode::kIoError,
          source.prefix + "read error after line " + std::to_string(number));
    }
    if (status == internal::LineReader::Status::kTooLong) {
      return tl::unexpected(source.Corrupt(number, lines.TooLongProblem()));
    }
    if (lines.line().find_first_not_of(" \t") == std::string_view::npos) {
      continue;
    }
    const Json line = Json::parse(lines.line(), nullptr, false);
    if (line.is_discarded() || !line.is_object()) {
      return tl::unexpected(source.Corrupt(number, "not one JSON object"));
    }
    const bool defines = line.contains("define");
    if (!defines && state.out.size() == quota.requests) {
      return tl::unexpected(source.Corrupt(number, quota.TooManyProblem()));
    }
    if (Problem ok =
            defines ? DefinePrefix(line, state) : AddRequest(line, state);
        !ok) {
      return tl::unexpected(source.Corrupt(number, ok.error()));
    }
  }
  return std::move(state.out);
}

}  // namespace

Result<std::vector<SimRequest>> ParseTokenTrace(
    std::string_view jsonl, std::optional<std::size_t> limit) {
  std::istringstream in{std::string(jsonl)};
  return ParseStream(in, limit, {"token trace line "});
}

Result<std::vector<SimRequest>> ReadTokenTrace(
    const std::filesystem::path& path, std::optional<std::size_t> limit) {
  Result<std::ifstream> in = internal::OpenForReading(path);
  if (!in) return tl::unexpected(in.error());
  return ParseStream(*in, limit, {path.string() + ":"});
}

}  // namespace hkv
