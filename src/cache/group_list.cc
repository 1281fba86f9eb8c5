#include "hkv/group_list.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <iterator>
#include <optional>
#include <span>
#include <string>

namespace hkv {
namespace {

std::string_view Trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// The pieces of `text` between `separator`s, trimmed; empty ones kept.
std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  for (;;) {
    const std::size_t end = text.find(separator);
    pieces.push_back(Trim(text.substr(0, end)));
    if (end == std::string_view::npos) return pieces;
    text.remove_prefix(end + 1);
  }
}

Result<void> Problem(std::string message) {
  return Fail(ErrorCode::kInvalidArgument, std::move(message));
}

// A decimal number below 2^32, at least `min`; `what` names it in errors.
Result<std::uint32_t> ParseNumber(std::string_view text, std::string_view what,
                                  std::uint32_t min) {
  std::uint32_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end) {
    return Fail(ErrorCode::kInvalidArgument,
                std::string(what) + " \"" + std::string(text) +
                    "\" is not a decimal number below 2^32");
  }
  if (value < min) {
    return Fail(ErrorCode::kInvalidArgument,
                std::string(what) + " must be at least " + std::to_string(min) +
                    ", got " + std::to_string(value));
  }
  return value;
}

// Group lists take the kinds' names only (not their aliases).
std::optional<GroupKind> ParseKind(std::string_view name) {
  for (const GroupKindNames& k : kGroupKinds) {
    if (name == k.name) return k.kind;
  }
  return std::nullopt;
}

// "full, sliding, ... or scratch": every kind, for errors.
std::string KindList() {
  std::string list;
  for (std::size_t i = 0; i < kGroupKinds.size(); ++i) {
    if (i > 0) list += i + 1 == kGroupKinds.size() ? " or " : ", ";
    list += kGroupKinds[i].name;
  }
  return list;
}

// The numeric options: the kind that takes each, the field it sets and its
// least value.
struct NumberOption {
  std::string_view name;
  GroupKind kind;
  std::uint32_t GroupSpec::*field;
  std::uint32_t min;
};
constexpr NumberOption kNumberOptions[] = {
    {"window", GroupKind::kSlidingWindow, &GroupSpec::sliding_window, 1},
    {"chunk", GroupKind::kChunkedLocal, &GroupSpec::chunk_size, 1},
    {"spec", GroupKind::kRecurrent, &GroupSpec::speculative_blocks, 0},
    {"blocks", GroupKind::kScratch, &GroupSpec::scratch_blocks, 1},
    {"output_window", GroupKind::kFullAttention, &GroupSpec::output_window, 1},
};

Result<void> CheckKind(std::string_view option, GroupKind wanted,
                       GroupKind actual) {
  if (wanted == actual) return {};
  return Problem("option " + std::string(option) + "= applies to " +
                 std::string(GroupKindName(wanted)) + " groups, not " +
                 std::string(GroupKindName(actual)));
}

// Applies `name=value`.
Result<void> ApplyValued(std::string_view name, std::string_view value,
                         GroupSpec& spec) {
  if (name == "mode") {
    if (Result<void> ok = CheckKind(name, GroupKind::kRecurrent, spec.kind);
        !ok) {
      return ok;
    }
    if (value == "align") {
      spec.recurrent_mode = RecurrentMode::kAlign;
    } else if (value == "all") {
      spec.recurrent_mode = RecurrentMode::kAll;
    } else if (value == "none") {
      spec.recurrent_mode = RecurrentMode::kNone;
    } else {
      return Problem("mode must be align, all or none, got \"" +
                     std::string(value) + "\"");
    }
    return {};
  }
  const NumberOption* option =
      std::find_if(std::begin(kNumberOptions), std::end(kNumberOptions),
                   [&](const NumberOption& o) { return o.name == name; });
  if (option == std::end(kNumberOptions)) {
    return Problem("unknown option \"" + std::string(name) + "=\"");
  }
  if (Result<void> ok = CheckKind(name, option->kind, spec.kind); !ok) {
    return ok;
  }
  Result<std::uint32_t> number = ParseNumber(value, name, option->min);
  if (!number) return tl::unexpected(number.error());
  spec.*(option->field) = *number;
  return {};
}

// Applies one option, `flag` or `name=value`.
Result<void> ApplyOption(std::string_view option, GroupSpec& spec) {
  const std::size_t equals = option.find('=');
  if (equals != std::string_view::npos) {
    return ApplyValued(Trim(option.substr(0, equals)),
                       Trim(option.substr(equals + 1)), spec);
  }
  if (option == "eagle") {
    spec.speculation = Speculation::kEagle;
  } else if (option == "replicated") {
    spec.dcp_layout = DcpLayout::kReplicated;
  } else if (option == "export") {
    if (spec.kind != GroupKind::kRecurrent) {
      return Problem("option export applies to recurrent groups, not " +
                     std::string(GroupKindName(spec.kind)));
    }
    spec.checkpoint_blocks = 1;
  } else if (option.empty()) {
    return Problem("empty option");
  } else {
    return Problem("unknown option \"" + std::string(option) + "\"");
  }
  return {};
}

// The option's name: the text before '=' if any.
std::string_view OptionName(std::string_view option) {
  return Trim(option.substr(0, option.find('=')));
}

// Applies `options` in order, refusing one given twice.
Result<void> ApplyOptions(std::span<const std::string_view> options,
                          GroupSpec& spec) {
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string_view name = OptionName(options[i]);
    const auto same = [&](std::string_view o) { return OptionName(o) == name; };
    if (std::any_of(options.begin(),
                    options.begin() + static_cast<std::ptrdiff_t>(i), same)) {
      return Problem("option " + std::string(name) + " given twice");
    }
    if (Result<void> ok = ApplyOption(options[i], spec); !ok) return ok;
  }
  return {};
}

Result<GroupSpec> ParseGroup(std::string_view text) {
  if (text.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "empty group; expected kind:block[:option...]");
  }
  const std::vector<std::string_view> fields = Split(text, ':');
  GroupSpec spec;
  const std::optional<GroupKind> kind = ParseKind(fields[0]);
  if (!kind) {
    return Fail(
        ErrorCode::kInvalidArgument,
        "unknown kind \"" + std::string(fields[0]) + "\" (" + KindList() + ")");
  }
  spec.kind = *kind;
  if (fields.size() < 2) {
    return Fail(ErrorCode::kInvalidArgument, "missing block size");
  }
  Result<std::uint32_t> block = ParseNumber(fields[1], "block size", 1);
  if (!block) return tl::unexpected(block.error());
  spec.block_size = *block;
  const std::span<const std::string_view> options(fields.begin() + 2,
                                                  fields.end());
  if (Result<void> ok = ApplyOptions(options, spec); !ok) {
    return tl::unexpected(ok.error());
  }
  if (spec.kind == GroupKind::kSlidingWindow && spec.sliding_window == 0) {
    return Fail(ErrorCode::kInvalidArgument, "sliding needs window=W");
  }
  if (spec.kind == GroupKind::kChunkedLocal && spec.chunk_size == 0) {
    return Fail(ErrorCode::kInvalidArgument, "chunked needs chunk=C");
  }
  if (spec.kind == GroupKind::kScratch && spec.scratch_blocks == 0) {
    return Fail(ErrorCode::kInvalidArgument, "scratch needs blocks=N");
  }
  return spec;
}

}  // namespace

Result<std::vector<GroupSpec>> ParseGroupList(std::string_view text) {
  if (Trim(text).empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "empty group list; expected kind:block[:option...], ...");
  }
  const std::vector<std::string_view> texts = Split(text, ',');
  std::vector<GroupSpec> groups;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    Result<GroupSpec> group = ParseGroup(texts[i]);
    if (!group) {
      return Fail(ErrorCode::kInvalidArgument,
                  "group " + std::to_string(i) + " \"" + std::string(texts[i]) +
                      "\": " + group.error().message);
    }
    groups.push_back(*group);
  }
  return groups;
}

}  // namespace hkv
