#include "groups/kind_traits.h"

#include <utility>

#include "groups/chunked_local.h"
#include "groups/full_attention.h"
#include "groups/recurrent_state.h"
#include "groups/scratch.h"
#include "groups/sliding_window.h"

namespace hkv::internal {

const KindTraits& TraitsOf(GroupKind kind) {
  switch (kind) {
    case GroupKind::kSlidingWindow:
      return SlidingWindowTraits();
    case GroupKind::kChunkedLocal:
      return ChunkedLocalTraits();
    case GroupKind::kRecurrent:
      return RecurrentTraits();
    case GroupKind::kScratch:
      return ScratchTraits();
    case GroupKind::kFullAttention:
      break;
  }
  return FullAttentionTraits();
}

Result<void> SpecError(std::string message) {
  return Fail(ErrorCode::kInvalidArgument, std::move(message));
}

}  // namespace hkv::internal
