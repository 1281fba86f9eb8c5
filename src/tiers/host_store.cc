#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/object_store.h"
#include "tiers/recency_map.h"

namespace hkv {
namespace {

class HostStore final : public ObjectStore {
 public:
  explicit HostStore(std::uint64_t capacity_bytes)
      : capacity_bytes_(capacity_bytes) {}

  std::string_view kind() const override { return "host"; }

  StoreStatus Put(std::string_view name, std::string_view object) override {
    if (!ValidObjectName(name) || object.size() > capacity_bytes_) {
      return Failed();
    }
    // The old bytes under `name` go first, so that they are not counted as
    // an eviction and never push out another object.
    if (const std::string* old = objects_.Find(name)) {
      bytes_held_ -= old->size();
      objects_.Erase(name);
    }
    while (bytes_held_ + object.size() > capacity_bytes_) EvictOldest();
    objects_.Put(name, std::string(object));
    bytes_held_ += object.size();
    ++counters_.objects_put;
    counters_.bytes_put += object.size();
    return StoreStatus::kOk;
  }

  ObjectRead Get(std::string_view name) override {
    if (!ValidObjectName(name)) return {.status = Failed()};
    const std::string* bytes = objects_.Find(name);
    if (bytes == nullptr) return {.status = StoreStatus::kAbsent};
    objects_.Touch(name);
    ++counters_.objects_read;
    counters_.bytes_read += bytes->size();
    return {.status = StoreStatus::kOk, .bytes = *bytes};
  }

  StoreStatus Erase(std::string_view name) override {
    if (!ValidObjectName(name)) return Failed();
    if (const std::string* bytes = objects_.Find(name)) {
      bytes_held_ -= bytes->size();
      objects_.Erase(name);
    }
    return StoreStatus::kOk;
  }

  Result<std::vector<std::string>> List(std::string_view prefix,
                                        std::size_t limit) override {
    std::vector<std::string> names;
    objects_.ForEach([&](const std::string& name, const std::string&) {
      if (names.size() == limit) return false;
      if (name.starts_with(prefix)) names.push_back(name);
      return true;
    });
    return names;
  }

  StoreCounters counters() const override { return counters_; }
  std::uint64_t bytes_held() const override { return bytes_held_; }

 private:
  StoreStatus Failed() {
    ++counters_.errors;
    return StoreStatus::kError;
  }

  // REQUIRES: objects_ is not empty.
  void EvictOldest() {
    const std::uint64_t size = objects_.oldest_value().size();
    ++counters_.evicted_objects;
    counters_.evicted_bytes += size;
    bytes_held_ -= size;
    objects_.PopOldest();
  }

  const std::uint64_t capacity_bytes_;
  // Least recently read or written first; the sum of their sizes is
  // bytes_held_ <= capacity_bytes_.
  internal::RecencyMap<std::string> objects_;
  std::uint64_t bytes_held_ = 0;
  StoreCounters counters_;
};

}  // namespace

std::unique_ptr<ObjectStore> MakeHostStore(std::uint64_t capacity_bytes) {
  return std::make_unique<HostStore>(capacity_bytes);
}

}  // namespace hkv
