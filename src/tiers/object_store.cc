#include "hkv/object_store.h"

#include <algorithm>

namespace hkv {

bool ValidObjectName(std::string_view name) {
  constexpr std::size_t kMaxNameLength = 128;
  if (name.empty() || name.size() > kMaxNameLength) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '_' ||
           c == '-';
  });
}

std::vector<StoreStatus> ObjectStore::PutMany(
    std::span<const NamedObject> objects) {
  std::vector<StoreStatus> statuses;
  statuses.reserve(objects.size());
  for (const NamedObject& object : objects) {
    statuses.push_back(Put(object.name, object.bytes));
  }
  return statuses;
}

std::vector<ObjectRead> ObjectStore::GetMany(
    std::span<const std::string> names) {
  std::vector<ObjectRead> reads;
  reads.reserve(names.size());
  for (const std::string& name : names) reads.push_back(Get(name));
  return reads;
}

}  // namespace hkv
