#include "hkv/azure_trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "synthetic_tokens.h"

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

// "YYYY-MM-DD HH:MM:SS[.fraction]" or plain seconds.
std::optional<double> Seconds(std::string_view text) {
  if (text.size() < 19 || text[4] != '-' || text[10] != ' ') {
    return Number<double>(text);
  }
  const auto y = Number<std::int64_t>(text.substr(0, 4));
  const auto mo = Number<unsigned>(text.substr(5, 2));
  const auto d = Number<unsigned>(text.substr(8, 2));
  const auto h = Number<unsigned>(text.substr(11, 2));
  const auto mi = Number<unsigned>(text.substr(14, 2));
  const auto s = Number<double>(text.substr(17));
  if (!y || !mo || !d || !h || !mi || !s || *mo < 1 || *mo > 12) {
    return std::nullopt;
  }
  return static_cast<double>(DaysFromCivil(*y, *mo, *d)) * 86400.0 +
         *h * 3600.0 + *mi * 60.0 + *s;
}

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

 private:
  std::uint64_t Next() { return state_ = internal::SplitMix64(state_); }
  std::uint64_t PrefixId(std::uint64_t k) const {
    return internal::SplitMix64(options_.seed ^ (k << 32)) |
           (std::uint64_t{1} << 63);
  }

  AzurePrefixOptions options_;
  std::uint64_t state_;
};

struct Row {
  double time_s = 0.0;
  std::uint32_t context = 0;
  std::uint32_t generated = 0;
};

tl::expected<Row, std::string> ParseRow(std::string_view line,
                                        const Columns& columns) {
  const std::vector<std::string_view> f = SplitCsv(line);
  const std::size_t needed =
      std::max({columns.timestamp, columns.context, columns.generated});
  if (f.size() <= needed) return tl::unexpected(std::string("too few columns"));
  const auto t = Seconds(f[columns.timestamp]);
  const auto context = Number<std::uint32_t>(f[columns.context]);
  const auto generated = Number<std::uint32_t>(f[columns.generated]);
  if (!t || !context || !generated || *context == 0) {
    return tl::unexpected(std::string("bad timestamp or token count"));
  }
  return Row{*t, *context, *generated};
}

Error Corrupt(std::size_t line, const std::string& problem) {
  return {ErrorCode::kCorruption,
          "Azure trace line " + std::to_string(line) + ": " + problem};
}

}  // namespace

Result<void> AzurePrefixOptions::Validate() const {
  if (!(shared_fraction >= 0.0 && shared_fraction <= 1.0) ||
      (shared_fraction > 0.0 && num_prefixes == 0)) {
    return Fail(ErrorCode::kInvalidArgument,
                "shared fraction must be in [0, 1], with at least one "
                "prefix when above 0");
  }
  return {};
}

Result<std::vector<SimRequest>> ParseAzureTrace(
    std::string_view csv, const AzurePrefixOptions& options) {
  if (Result<void> ok = options.Validate(); !ok) {
    return tl::unexpected(ok.error());
  }
  std::istringstream in{std::string(csv)};
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF files
  const std::optional<Columns> columns = FindColumns(line);
  if (!columns) {
    return tl::unexpected(
        Corrupt(1, "header lacks TIMESTAMP, ContextTokens or GeneratedTokens"));
  }
  Synthesiser synth(options);
  std::vector<SimRequest> out;
  std::optional<double> first;
  for (std::size_t number = 2; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const tl::expected<Row, std::string> row = ParseRow(line, *columns);
    if (!row) return tl::unexpected(Corrupt(number, row.error()));
    if (!first) first = row->time_s;
    const double arrival = row->time_s - *first;
    if (!out.empty() && arrival < out.back().arrival_s) {
      return tl::unexpected(Corrupt(number, "timestamp goes backwards"));
    }
    out.push_back({.arrival_s = arrival,
                   .prompt = synth.Prompt(row->context),
                   .output_length = std::max<std::uint32_t>(row->generated, 1),
                   .output_id = synth.UniqueId()});
  }
  return out;
}

Result<std::vector<SimRequest>> ReadAzureTrace(
    const std::filesystem::path& path, const AzurePrefixOptions& options) {
  std::ifstream in(path);
  if (!in) {
    return Fail(ErrorCode::kIoError, "cannot open " + path.string());
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ParseAzureTrace(text.str(), options);
}

}  // namespace hkv
