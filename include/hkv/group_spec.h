// One cache group's description (a set of layers sharing a block table),
// and the facts that follow from it alone: whether it serves prefix hits,
// the tokens one block covers, the blocks one request holds at most.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>

#include "hkv/group_kind.h"

namespace hkv {

// Which recurrent states the kernel leaves behind: in kAlign only at the end
// of each scheduled chunk (the scheduler aligns chunks so that reusable
// states exist); in kAll at every block boundary. kNone caches no state: the
// group never limits a hit, and a request holds its current state (plus
// speculative blocks) only.
enum class RecurrentMode { kAlign, kAll, kNone };

// Whether the group's layers feed a draft model (EAGLE/MTP) that must
// recompute the last hash unit of a hit.
enum class Speculation { kNone, kEagle };

// How a group's pages spread over decode-context-parallel ranks: sharded
// pages hold block_size tokens on each of `dcp` ranks, so one block covers
// block_size x dcp tokens; replicated pages are whole on every rank.
enum class DcpLayout { kSharded, kReplicated };

struct GroupSpec {
  GroupKind kind = GroupKind::kFullAttention;
  std::uint32_t block_size = 16;  // tokens per page on one rank
  Speculation speculation = Speculation::kNone;
  std::uint32_t sliding_window = 0;  // W, for kSlidingWindow
  // kFullAttention, 0: none. Decode reads the whole prompt but only the
  // last `output_window` tokens after it (R-SWA): output blocks that fall
  // out of it are released. Lookups are those of full attention.
  std::uint32_t output_window = 0;
  std::uint32_t chunk_size = 0;                // C, for kChunkedLocal
  DcpLayout dcp_layout = DcpLayout::kSharded;  // recurrent: never sharded
  RecurrentMode recurrent_mode = RecurrentMode::kAlign;  // kRecurrent
  // State blocks for speculative tokens, kept after the current state.
  std::uint32_t speculative_blocks = 0;  // kRecurrent
  std::uint32_t scratch_blocks = 0;      // kScratch: blocks per request
  // kRecurrent kAlign, 0 or 1: 1 when the kernel can also leave the state
  // at the prompt's checkpoint from inside the prompt's last chunk (an
  // extra block; NewBlocks::state_exports says where). Chunks then need not
  // stop there.
  std::uint32_t checkpoint_blocks = 0;
};

// Whether a group's blocks can serve prefix hits (all but scratch groups and
// recurrent kNone).
bool IsPrefixCacheable(const GroupSpec& group);

// Tokens one block of `group` covers: block_size times the DCP width for
// sharded attention groups; recurrent states are never sharded.
std::uint64_t TokensPerBlock(const GroupSpec& group, std::uint32_t dcp);

// What bounds the blocks one request holds at once: its length, and the
// tokens scheduled but not yet processed (a step's new tokens included).
struct RequestBounds {
  std::uint64_t max_model_len = 0;
  std::uint64_t max_in_flight_tokens = 0;
  std::uint32_t dcp = 1;
};

// The most blocks one request holds at once in `group` (spec §5.1, "max
// memory per request"): full attention covers the whole length; a window
// covers W - 1 + in-flight tokens plus one block it straddles; a chunked
// group its chunk plus in-flight tokens; an aligned recurrent group its
// state, the previous one, and the speculative blocks; a scratch group its
// pages. Pool sizing and whole-sequence admission both use it, so they
// cannot drift apart (spec §9 item 13). In-flight tokens count at most the
// length. REQUIRES: the group's block holds at least one token (else
// UsageError).
std::uint64_t MaxBlocksPerRequest(const GroupSpec& group,
                                  const RequestBounds& bounds);

}  // namespace hkv
