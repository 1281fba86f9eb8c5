// Digest functions behind the key functions. Pure, thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "hkv/types.h"

namespace hkv::internal {

// SHA-256 of `data`, all 32 bytes.
BlockHash Sha256(std::span<const std::uint8_t> data);

// XXH3-128 of `data` in canonical (big-endian) byte order, in bytes 0..15.
BlockHash Xxh3_128(std::span<const std::uint8_t> data);

}  // namespace hkv::internal
