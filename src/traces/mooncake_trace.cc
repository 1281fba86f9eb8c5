#include "hkv/mooncake_trace.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "check.h"
#include "hkv/limits.h"
#include "traces/line_reader.h"
#include "traces/mooncake_reader.h"
#include "traces/synthetic_tokens.h"

namespace hkv {
namespace {

using nlohmann::json;

// What is wrong with one line, without its location.
using LineResult = tl::expected<TraceRequest, std::string>;
using NumberResult = tl::expected<std::uint64_t, std::string>;

constexpr std::uint64_t kMaxU32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kMaxU64 = std::numeric_limits<std::uint64_t>::max();

std::uint64_t NumBlocksFor(std::uint64_t tokens) {
  return (tokens + kMooncakeBlockTokens - 1) / kMooncakeBlockTokens;
}

std::string Quoted(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 2);
  out.append(1, '"').append(name).append(1, '"');
  return out;
}

// `value` as an unsigned integer no larger than `max`; `name` labels it.
NumberResult ReadUnsigned(const json& value, std::string_view name,
                          std::uint64_t max) {
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    if (v > max) {
      return tl::unexpected(Quoted(name) + " is out of range (" +
                            std::to_string(v) + " > " + std::to_string(max) +
                            ")");
    }
    return v;
  }
  if (value.is_number_integer()) {
    return tl::unexpected(Quoted(name) + " is negative (" + value.dump() + ")");
  }
  return tl::unexpected(
      Quoted(name) + " must be a non-negative integer, got " +
      (value.is_number() ? value.dump() : std::string(value.type_name())));
}

NumberResult ReadField(const json& object, std::string_view name,
                       std::uint64_t max) {
  auto it = object.find(name);
  if (it == object.end()) {
    return tl::unexpected("missing field " + Quoted(name));
  }
  return ReadUnsigned(*it, name, max);
}

tl::expected<std::vector<std::uint64_t>, std::string> ReadHashIds(
    const json& object) {
  auto it = object.find("hash_ids");
  if (it == object.end()) {
    return tl::unexpected(std::string("missing field \"hash_ids\""));
  }
  if (!it->is_array()) {
    return tl::unexpected("\"hash_ids\" must be an array, got " +
                          std::string(it->type_name()));
  }
  std::vector<std::uint64_t> ids;
  ids.reserve(it->size());
  for (std::size_t i = 0; i < it->size(); ++i) {
    const std::string name = "hash_ids[" + std::to_string(i) + "]";
    NumberResult id = ReadUnsigned((*it)[i], name, kMaxU64);
    if (!id) return tl::unexpected(std::move(id.error()));
    ids.push_back(*id);
  }
  return ids;
}

// The latest timestamp: kMaxInputSeconds in milliseconds, so that every
// arrival of a trace in time order is a valid workload time.
constexpr auto kMaxTimestampMs =
    static_cast<std::uint64_t>(kMaxInputSeconds * 1000.0);

LineResult ParseObject(const json& object) {
  NumberResult timestamp = ReadField(object, "timestamp", kMaxTimestampMs);
  if (!timestamp) return tl::unexpected(std::move(timestamp.error()));
  NumberResult input = ReadField(object, "input_length", kMaxU32);
  if (!input) return tl::unexpected(std::move(input.error()));
  NumberResult output = ReadField(object, "output_length", kMaxU32);
  if (!output) return tl::unexpected(std::move(output.error()));
  auto ids = ReadHashIds(object);
  if (!ids) return tl::unexpected(std::move(ids.error()));
  TraceRequest request{.timestamp_ms = *timestamp,
                       .input_length = static_cast<std::uint32_t>(*input),
                       .output_length = static_cast<std::uint32_t>(*output),
                       .hash_ids = std::move(*ids)};
  if (Result<void> valid = ValidateTraceRequest(request); !valid) {
    return tl::unexpected(std::move(valid.error().message));
  }
  return request;
}

// The problem of a line holding a number beyond a double ("1e400"), which
// nlohmann refuses while parsing: parses it again, tracking the top-level
// key, to name the field (or "hash_ids" for an id).
std::string OverflowProblem(std::string_view line, const json::exception& e) {
  std::string key;
  const json::parser_callback_t track =
      [&key](int depth, json::parse_event_t event, json& parsed) {
        if (event == json::parse_event_t::key && depth == 1) key = parsed;
        return true;
      };
  try {
    [[maybe_unused]] const json parsed = json::parse(line, track);
  } catch (const json::exception&) {
    // Expected: the same error, with `key` now set.
  }
  // what(): "[json.exception.out_of_range.406] number overflow parsing 'X'"
  const std::string what = e.what();
  const std::size_t open = what.find('\'');
  const std::string number =
      open == std::string::npos ? what : what.substr(open);
  if (key.empty()) return "number " + number + " is out of range";
  return Quoted(key) + " holds number " + number + ", out of range of a double";
}

LineResult ParseLine(std::string_view line) {
  json object;
  try {
    object = json::parse(line);
  } catch (const json::parse_error& e) {
    return tl::unexpected("not JSON (syntax error at byte " +
                          std::to_string(e.byte) + ")");
  } catch (const json::exception& e) {
    // nlohmann reports a number beyond a double ("1e400") as out_of_range.
    return tl::unexpected(OverflowProblem(line, e));
  }
  if (!object.is_object()) {
    return tl::unexpected("not a JSON object, got " +
                          std::string(object.type_name()));
  }
  return ParseObject(object);
}

// The request of a line following those of `trace`: a trace is in time
// order (a workload's arrivals may not decrease), so an earlier timestamp
// is refused rather than sorted.
LineResult ParseNext(std::string_view line,
                     const std::vector<TraceRequest>& trace) {
  LineResult request = ParseLine(line);
  if (request && !trace.empty() &&
      request->timestamp_ms < trace.back().timestamp_ms) {
    return tl::unexpected("\"timestamp\" " +
                          std::to_string(request->timestamp_ms) +
                          " is before the previous request's " +
                          std::to_string(trace.back().timestamp_ms) +
                          " (a trace is in time order)");
  }
  return request;
}

bool IsBlank(std::string_view line) {
  return std::all_of(line.begin(), line.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

Error LineError(const std::filesystem::path& path, std::size_t line,
                std::string problem) {
  return {ErrorCode::kCorruption, path.string() + ":" + std::to_string(line) +
                                      ": " + std::move(problem)};
}

// The error of a line the reader refused (kTooLong or kIoError).
Error ReadFailure(const std::filesystem::path& path,
                  internal::LineReader::Status status,
                  const internal::LineReader& lines) {
  if (status == internal::LineReader::Status::kIoError) {
    return {ErrorCode::kIoError, "error reading " + path.string() +
                                     " after line " +
                                     std::to_string(lines.line_number())};
  }
  return LineError(path, lines.line_number(), lines.TooLongProblem());
}

}  // namespace

Result<void> ValidateTraceRequest(const TraceRequest& request) {
  if (request.input_length == 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "\"input_length\" is 0; a prompt needs a token");
  }
  const std::uint64_t tokens =
      std::uint64_t{request.input_length} + request.output_length;
  if (tokens > kMaxTokensPerRequest) {
    return Fail(
        ErrorCode::kInvalidArgument,
        "\"input_length\" " + std::to_string(request.input_length) +
            " + \"output_length\" " + std::to_string(request.output_length) +
            " tokens exceed the limit of " +
            std::to_string(kMaxTokensPerRequest) + " tokens per request");
  }
  const std::uint64_t expected = NumBlocksFor(request.input_length);
  if (request.hash_ids.size() != expected) {
    return Fail(ErrorCode::kInvalidArgument,
                "\"hash_ids\" has " + std::to_string(request.hash_ids.size()) +
                    " ids; input_length " +
                    std::to_string(request.input_length) + " needs " +
                    std::to_string(expected) + " (one per 512 tokens)");
  }
  return {};
}

Result<std::vector<TraceRequest>> ReadMooncakeTrace(
    const std::filesystem::path& path, std::optional<std::size_t> limit) {
  return internal::ReadMooncakeTrace(path, internal::QuotaFor(limit));
}

Result<std::vector<TraceRequest>> internal::ReadMooncakeTrace(
    const std::filesystem::path& path, RequestQuota quota) {
  Result<std::ifstream> in = OpenForReading(path);
  if (!in) return tl::unexpected(in.error());
  internal::LineReader lines(*in, kMaxTraceLineBytes);
  std::vector<TraceRequest> trace;
  std::size_t first_blank = 0;  // 0: no blank line since the last request
  while (!(quota.stops && trace.size() == quota.requests)) {
    const internal::LineReader::Status status = lines.Next();
    if (status == internal::LineReader::Status::kEnd) break;
    const std::size_t number = lines.line_number();
    if (status != internal::LineReader::Status::kLine) {
      return tl::unexpected(ReadFailure(path, status, lines));
    }
    if (IsBlank(lines.line())) {
      if (first_blank == 0) first_blank = number;
      continue;
    }
    if (first_blank != 0) {
      return tl::unexpected(
          LineError(path, first_blank, "blank line before the last request"));
    }
    if (trace.size() == quota.requests) {
      return tl::unexpected(LineError(path, number, quota.TooManyProblem()));
    }
    LineResult request = ParseNext(lines.line(), trace);
    if (!request) {
      return tl::unexpected(
          LineError(path, number, std::move(request.error())));
    }
    trace.push_back(std::move(*request));
  }
  return trace;
}

std::vector<TokenId> MooncakeTokens(const TraceRequest& request) {
  Result<void> valid = ValidateTraceRequest(request);
  HKV_REQUIRE(valid.has_value(), valid ? "" : valid.error().message);
  std::vector<TokenId> tokens(request.input_length);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::uint64_t block =
        internal::SplitMix64(request.hash_ids[i / kMooncakeBlockTokens]);
    tokens[i] = internal::SegmentToken(block, i % kMooncakeBlockTokens);
  }
  return tokens;
}

}  // namespace hkv
