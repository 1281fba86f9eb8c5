#include "hkv/azure_trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <istream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "hkv/limits.h"
#include "traces/line_reader.h"
#include "traces/number_text.h"
#include "traces/synthetic_tokens.h"

namespace hkv {
namespace {

struct Columns {
  std::size_t timestamp = 0;
  std::size_t context = 0;
  std::size_t generated = 0;
};

std::vector<std::string_view> SplitCsv(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(line.substr(start, comma - start));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

std::optional<Columns> FindColumns(std::string_view header) {
  std::optional<std::size_t> found[3];
  const std::vector<std::string_view> names = SplitCsv(header);
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "TIMESTAMP") found[0] = i;
    if (names[i] == "ContextTokens") found[1] = i;
    if (names[i] == "GeneratedTokens") found[2] = i;
  }
  if (!found[0] || !found[1] || !found[2]) return std::nullopt;
  return Columns{*found[0], *found[1], *found[2]};
}

template <typename T>
std::optional<T> Number(std::string_view text) {
  T value{};
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// days_from_civil).
std::int64_t DaysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned mp = m > 2 ? m - 3 : m + 9;  // March-based month
  const unsigned doy = (153 * mp + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool InRange(std::optional<unsigned> v, unsigned low, unsigned high) {
  return v && *v >= low && *v <= high;
}

// "YYYY-MM-DD HH:MM:SS[.fraction]" or plain seconds; nullopt for anything
// else, including times that are not finite.
std::optional<double> Seconds(std::string_view text) {
  if (text.size() < 19 || text[4] != '-' || text[10] != ' ') {
    const std::optional<double> s = Number<double>(text);
    if (!s || !std::isfinite(*s)) return std::nullopt;
    return s;
  }
  const auto y = Number<std::int64_t>(text.substr(0, 4));
  const auto mo = Number<unsigned>(text.substr(5, 2));
  const auto d = Number<unsigned>(text.substr(8, 2));
  const auto h = Number<unsigned>(text.substr(11, 2));
  const auto mi = Number<unsigned>(text.substr(14, 2));
  const auto s = Number<double>(text.substr(17));
  if (!y || !InRange(mo, 1, 12) || !InRange(d, 1, 31) || !InRange(h, 0, 23) ||
      !InRange(mi, 0, 59) || !s || !(*s >= 0.0 && *s < 61.0)) {
    return std::nullopt;
  }
  return static_cast<double>(DaysFromCivil(*y, *mo, *d)) * 86400.0 +
         *h * 3600.0 + *mi * 60.0 + *s;
}

struct Row {
  double time_s = 0.0;
  std::uint32_t context = 0;
  std::uint32_t generated = 0;
};

// Shared prefixes and unique content drawn from the seed.
class Synthesiser {
 public:
  explicit Synthesiser(const AzurePrefixOptions& options)
      : options_(options), state_(internal::SplitMix64(options.seed)) {}

  std::vector<Segment> Prompt(std::uint32_t length) {
    std::vector<Segment> prompt;
    const double u = static_cast<double>(Next() >> 11) * 0x1.0p-53;
    if (u < options_.shared_fraction && length > 1) {
      const std::uint64_t k = Next() % options_.num_prefixes;
      const std::uint32_t n = std::min(options_.prefix_tokens, length - 1);
      prompt.push_back({.id = PrefixId(k), .length = n});
      length -= n;
    }
    prompt.push_back({.id = UniqueId(), .length = length});
    return prompt;
  }
  std::uint64_t UniqueId() { return Next() | (std::uint64_t{1} << 63); }

  // The request of a row, arriving at `arrival_s`.
  SimRequest Request(double arrival_s, const Row& row) {
    return {.arrival_s = arrival_s,
            .prompt = Prompt(row.context),
            .output_length = std::max<std::uint32_t>(row.generated, 1),
            .output_id = UniqueId()};
  }

 private:
  std::uint64_t Next() { return state_ = internal::SplitMix64(state_); }
  std::uint64_t PrefixId(std::uint64_t k) const {
    return internal::SplitMix64(options_.seed ^ (k << 32)) |
           (std::uint64_t{1} << 63);
  }

  AzurePrefixOptions options_;
  std::uint64_t state_;
};

using RowResult = tl::expected<Row, std::string>;
using CountResult = tl::expected<std::uint32_t, std::string>;

// A token count of column `name`, within the tokens per request.
CountResult Count(std::string_view text, std::string_view name) {
  std::uint64_t n = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, n);
  if (text.empty() || ptr != end ||
      (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    return tl::unexpected(std::string(name) + " \"" + std::string(text) +
                          "\" is not a whole number >= 0");
  }
  if (ec == std::errc::result_out_of_range || n > kMaxTokensPerRequest) {
    return tl::unexpected(
        std::string(name) + " " + std::string(text) + " exceeds the limit of " +
        std::to_string(kMaxTokensPerRequest) + " tokens per request");
  }
  return static_cast<std::uint32_t>(n);
}

RowResult ParseRow(std::string_view line, const Columns& columns) {
  const std::vector<std::string_view> f = SplitCsv(line);
  const std::size_t needed =
      std::max({columns.timestamp, columns.context, columns.generated}) + 1;
  if (f.size() < needed) {
    return tl::unexpected(std::to_string(f.size()) + " columns; " +
                          std::to_string(needed) + " needed");
  }
  const std::optional<double> t = Seconds(f[columns.timestamp]);
  if (!t) {
    return tl::unexpected("TIMESTAMP \"" + std::string(f[columns.timestamp]) +
                          "\" is neither YYYY-MM-DD HH:MM:SS[.fraction] nor "
                          "finite seconds");
  }
  const CountResult context = Count(f[columns.context], "ContextTokens");
  if (!context) return tl::unexpected(context.error());
  const CountResult generated = Count(f[columns.generated], "GeneratedTokens");
  if (!generated) return tl::unexpected(generated.error());
  if (*context == 0) {
    return tl::unexpected(
        std::string("ContextTokens is 0; a prompt needs a token"));
  }
  if (std::uint64_t{*context} + *generated > kMaxTokensPerRequest) {
    return tl::unexpected(
        "ContextTokens " + std::to_string(*context) + " + GeneratedTokens " +
        std::to_string(*generated) + " exceed the limit of " +
        std::to_string(kMaxTokensPerRequest) + " tokens per request");
  }
  return Row{*t, *context, *generated};
}

// Where errors point: `prefix` and the line number ("FILE:" for files).
struct Source {
  std::string prefix;
  Error Corrupt(std::size_t line, const std::string& problem) const {
    return {ErrorCode::kCorruption,
            prefix + std::to_string(line) + ": " + problem};
  }
};

// The header's columns, from the first line.
Result<Columns> ReadHeader(internal::LineReader& lines, const Source& source) {
  const internal::LineReader::Status status = lines.Next();
  if (status == internal::LineReader::Status::kTooLong) {
    return tl::unexpected(source.Corrupt(1, lines.TooLongProblem()));
  }
  const std::string_view header =
      status == internal::LineReader::Status::kLine ? lines.line() : "";
  const std::optional<Columns> columns = FindColumns(header);
  if (!columns) {
    return tl::unexpected(source.Corrupt(
        1, "header lacks TIMESTAMP, ContextTokens or GeneratedTokens"));
  }
  return *columns;
}

// The error of a line the reader refused (kTooLong or kIoError).
Error LineFailure(internal::LineReader::Status status,
                  const internal::LineReader& lines, const Source& source) {
  if (status == internal::LineReader::Status::kIoError) {
    return {ErrorCode::kIoError, source.prefix + "read error after line " +
                                     std::to_string(lines.line_number())};
  }
  return source.Corrupt(lines.line_number(), lines.TooLongProblem());
}

// The requests of a CSV stream; see ParseAzureTrace.
Result<std::vector<SimRequest>> ParseStream(std::istream& in,
                                            const AzurePrefixOptions& options,
                                            std::optional<std::size_t> limit,
                                            const Source& source) {
  if (Result<void> ok = options.Validate(); !ok) {
    return tl::unexpected(ok.error());
  }
  internal::LineReader lines(in, kMaxTraceLineBytes);
  const Result<Columns> columns = ReadHeader(lines, source);
  if (!columns) return tl::unexpected(columns.error());
  const internal::RequestQuota quota = internal::QuotaFor(limit);
  Synthesiser synth(options);
  std::vector<SimRequest> out;
  double first = 0.0;  // the first request's time
  while (!(quota.stops && out.size() == quota.requests)) {
    const internal::LineReader::Status status = lines.Next();
    if (status == internal::LineReader::Status::kEnd) break;
    if (status != internal::LineReader::Status::kLine) {
      return tl::unexpected(LineFailure(status, lines, source));
    }
    const std::size_t number = lines.line_number();
    if (lines.line().empty()) continue;
    if (out.size() == quota.requests) {
      return tl::unexpected(source.Corrupt(number, quota.TooManyProblem()));
    }
    const RowResult row = ParseRow(lines.line(), *columns);
    if (!row) return tl::unexpected(source.Corrupt(number, row.error()));
    if (out.empty()) first = row->time_s;
    const double arrival = row->time_s - first;
    if (!out.empty() && arrival < out.back().arrival_s) {
      return tl::unexpected(source.Corrupt(number, "timestamp goes backwards"));
    }
    if (!(arrival <= kMaxInputSeconds)) {
      return tl::unexpected(source.Corrupt(
          number, "timestamp " + internal::ShortNumber(arrival) +
                      " s after the first exceeds the limit of " +
                      internal::ShortNumber(kMaxInputSeconds) + " s"));
    }
    out.push_back(synth.Request(arrival, *row));
  }
  return out;
}

}  // namespace

Result<void> AzurePrefixOptions::Validate() const {
  if (!(shared_fraction >= 0.0 && shared_fraction <= 1.0)) {
    return Fail(ErrorCode::kInvalidArgument,
                "shared fraction must be in [0, 1], got " +
                    internal::ShortNumber(shared_fraction));
  }
  if (shared_fraction > 0.0 && num_prefixes == 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "a shared fraction above 0 needs at least one prefix, got 0 "
                "prefixes");
  }
  return {};
}

Result<std::vector<SimRequest>> ParseAzureTrace(
    std::string_view csv, const AzurePrefixOptions& options,
    std::optional<std::size_t> limit) {
  std::istringstream in{std::string(csv)};
  return ParseStream(in, options, limit, {"Azure trace line "});
}

Result<std::vector<SimRequest>> ReadAzureTrace(
    const std::filesystem::path& path, const AzurePrefixOptions& options,
    std::optional<std::size_t> limit) {
  Result<std::ifstream> in = internal::OpenForReading(path);
  if (!in) return tl::unexpected(in.error());
  return ParseStream(*in, options, limit, {path.string() + ":"});
}

}  // namespace hkv
