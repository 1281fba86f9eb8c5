// DecodeEventBatch on arbitrary bytes (both hash encodings): never crashes
// or reads out of bounds; a batch it accepts encodes again to bytes that
// decode to the same batch.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.h"
#include "hkv/event_publisher.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data,
                                      std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (const hkv::HashEncoding hashes :
       {hkv::HashEncoding::kBytes, hkv::HashEncoding::kLow64}) {
    const hkv::Result<hkv::DecodedBatch> first =
        hkv::DecodeEventBatch(bytes, hkv::KeyFunction::kXxh3_128Cbor, hashes);
    if (!first) continue;
    const std::string again = hkv::EncodeEventBatch(
        first->events, first->timestamp_s, first->data_parallel_rank,
        hkv::KeyFunction::kXxh3_128Cbor, hashes);
    const hkv::Result<hkv::DecodedBatch> second =
        hkv::DecodeEventBatch(again, hkv::KeyFunction::kXxh3_128Cbor, hashes);
    hkv::fuzz::Require(second.has_value(), "a re-encoded batch decodes");
    hkv::fuzz::Require(second->events.size() == first->events.size(),
                       "a re-encoded batch keeps its events");
    hkv::fuzz::Require(
        hkv::EncodeEventBatch(second->events, second->timestamp_s,
                              second->data_parallel_rank,
                              hkv::KeyFunction::kXxh3_128Cbor, hashes) == again,
        "encoding a decoded batch is stable");
  }
  return 0;
}
