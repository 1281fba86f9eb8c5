// Extra keys (spec §2.4): which tagged tuples a unit's key carries.
#include <algorithm>
#include <string>

#include "core/digest.h"
#include "hkv/keys.h"

namespace hkv {
namespace {

std::uint64_t End(const MultimodalItem& item) {
  return std::uint64_t{item.offset} + item.length;
}

// SHA-256 of the embedding rows [start, end) that exist.
EmbedsDigest RowsDigest(const PromptEmbeds& embeds, std::uint32_t start,
                        std::uint32_t end) {
  const std::size_t width = embeds.bytes_per_token;
  const std::size_t rows = embeds.bytes.size() / width;
  const std::size_t first = std::min<std::size_t>(start, rows);
  const std::size_t last = std::min<std::size_t>(end, rows);
  const BlockHash digest = internal::Sha256(
      std::span(embeds.bytes).subspan(first * width, (last - first) * width));
  EmbedsDigest out;
  std::copy_n(digest.bytes.begin(), out.size(), out.begin());
  return out;
}

// The spec's scan: skip items that end at or before `start`, stop at the
// first item starting at or after `end`; an item continuing past `end` ends
// the scan too.
void AddMultimodal(const std::vector<MultimodalItem>& items,
                   std::uint32_t start, std::uint32_t end,
                   std::vector<ExtraKey>& keys) {
  for (const MultimodalItem& item : items) {
    if (End(item) <= start) continue;
    if (item.offset >= end) break;
    keys.push_back(ExtraKey::Multimodal(
        item.identifier, std::int64_t{item.offset} - std::int64_t{start}));
    if (End(item) > end) break;
  }
}

}  // namespace

std::string_view ExtraKeyTag(ExtraKeyKind kind) {
  switch (kind) {
    case ExtraKeyKind::kLora:
      return "lora";
    case ExtraKeyKind::kMultimodal:
      return "mm";
    case ExtraKeyKind::kPromptEmbeds:
      return "prompt_embeds";
    case ExtraKeyKind::kCacheSalt:
      break;
  }
  return "cache_salt";
}

ExtraKey ExtraKey::Lora(std::string name, std::string path) {
  return {.kind = ExtraKeyKind::kLora,
          .name = std::move(name),
          .path = std::move(path)};
}

ExtraKey ExtraKey::Multimodal(std::string identifier, std::int64_t offset) {
  return {.kind = ExtraKeyKind::kMultimodal,
          .name = std::move(identifier),
          .offset = offset};
}

ExtraKey ExtraKey::CacheSalt(std::string salt) {
  return {.kind = ExtraKeyKind::kCacheSalt, .name = std::move(salt)};
}

ExtraKey ExtraKey::PromptEmbeds(const EmbedsDigest& digest) {
  return {.kind = ExtraKeyKind::kPromptEmbeds, .digest = digest};
}

bool KeyExtras::empty() const {
  return lora_name.empty() && multimodal.empty() && cache_salt.empty() &&
         prompt_embeds.bytes_per_token == 0;
}

Result<void> KeyExtras::Validate() const {
  if (!lora_path.empty() && lora_name.empty()) {
    return Fail(ErrorCode::kInvalidArgument,
                "lora_path '" + lora_path + "' has no lora_name");
  }
  for (std::size_t i = 0; i < multimodal.size(); ++i) {
    if (End(multimodal[i]) > UINT32_MAX) {
      return Fail(
          ErrorCode::kInvalidArgument,
          "multimodal item " + std::to_string(i) + " ends past token 2^32 - 1");
    }
    if (i > 0 && multimodal[i].offset < multimodal[i - 1].offset) {
      return Fail(ErrorCode::kInvalidArgument,
                  "multimodal items are not sorted by offset (item " +
                      std::to_string(i) + " starts before item " +
                      std::to_string(i - 1) + ")");
    }
  }
  const PromptEmbeds& embeds = prompt_embeds;
  if (embeds.bytes_per_token == 0
          ? !embeds.bytes.empty()
          : embeds.bytes.size() % embeds.bytes_per_token != 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "prompt_embeds: " + std::to_string(embeds.bytes.size()) +
                    " bytes are not whole rows of bytes_per_token " +
                    std::to_string(embeds.bytes_per_token));
  }
  return {};
}

std::vector<ExtraKey> UnitExtraKeys(const KeyExtras& extras,
                                    std::uint32_t start, std::uint32_t end) {
  std::vector<ExtraKey> keys;
  if (!extras.lora_name.empty()) {
    keys.push_back(ExtraKey::Lora(extras.lora_name, extras.lora_path));
  }
  AddMultimodal(extras.multimodal, start, end, keys);
  if (start == 0 && !extras.cache_salt.empty()) {
    keys.push_back(ExtraKey::CacheSalt(extras.cache_salt));
  }
  if (extras.prompt_embeds.bytes_per_token > 0) {
    keys.push_back(
        ExtraKey::PromptEmbeds(RowsDigest(extras.prompt_embeds, start, end)));
  }
  return keys;
}

}  // namespace hkv
