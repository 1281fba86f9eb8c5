// The kinds of cache group and the one table of their names: the name in
// group lists and reports ("full", ...), other names group lists accept,
// and the name KV events give the group's spec (spec §6.1).
//
// Thread-safety: constants and pure functions.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace hkv {

enum class GroupKind {
  kFullAttention,  // full attention and MLA
  kSlidingWindow,  // sliding-window attention over `sliding_window` tokens
  kChunkedLocal,   // attention within chunks of `chunk_size` tokens
  kRecurrent,      // recurrent state (Mamba2, GatedDeltaNet, KDA)
  kScratch,        // per-request scratch pages (a ring, a K-pool tail):
                   // `scratch_blocks` blocks, never cached
};

struct GroupKindNames {
  GroupKind kind;
  std::string_view name;        // group lists, reports, JSON
  std::string_view alias;       // also accepted in Python's group dicts
  std::string_view event_name;  // BlockStored's spec kind
};

inline constexpr std::array<GroupKindNames, 5> kGroupKinds = {{
    {GroupKind::kFullAttention, "full", "full_attention", "full_attention"},
    {GroupKind::kSlidingWindow, "sliding", "sliding_window", "sliding_window"},
    {GroupKind::kChunkedLocal, "chunked", "chunked_local",
     "chunked_local_attention"},
    {GroupKind::kRecurrent, "recurrent", "mamba", "mamba"},
    {GroupKind::kScratch, "scratch", "circular_buffer", "circular_buffer"},
}};

// The kind's entry of kGroupKinds.
constexpr const GroupKindNames& NamesOf(GroupKind kind) {
  for (const GroupKindNames& k : kGroupKinds) {
    if (k.kind == kind) return k;
  }
  return kGroupKinds[0];  // unreachable: every kind has an entry
}

// "full", "sliding", "chunked", "recurrent" or "scratch".
constexpr std::string_view GroupKindName(GroupKind kind) {
  return NamesOf(kind).name;
}

// The kind named `name` or its alias; nullopt for another name.
constexpr std::optional<GroupKind> ParseGroupKind(std::string_view name) {
  for (const GroupKindNames& k : kGroupKinds) {
    if (name == k.name || name == k.alias) return k.kind;
  }
  return std::nullopt;
}

}  // namespace hkv
