#include "hkv/tier_chain.h"

#include <algorithm>
#include <deque>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "check.h"

namespace hkv {
namespace {

// Known groups, forgetting the least recently used past a bound.
class Directory {
 public:
  explicit Directory(std::size_t capacity) : capacity_(capacity) {}

  void Learn(const BlockHash& key, KnownGroup group) {
    Entry& entry = entries_[key];
    entry.group = std::move(group);
    Touch(key, entry);
    while (entries_.size() > capacity_) ForgetOldest();
  }
  void Touch(const BlockHash& key) {
    if (auto it = entries_.find(key); it != entries_.end())
      Touch(key, it->second);
  }
  void Forget(const BlockHash& key) { entries_.erase(key); }
  const KnownGroup* Find(const BlockHash& key) const {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second.group;
  }
  std::size_t size() const { return entries_.size(); }
  std::vector<BlockHash> Keys() const {
    std::vector<BlockHash> keys;
    keys.reserve(entries_.size());
    for (const auto& [key, entry] : entries_) keys.push_back(key);
    return keys;
  }

 private:
  struct Entry {
    KnownGroup group;
    std::uint64_t stamp = 0;
  };
  void Touch(const BlockHash& key, Entry& entry) {
    entry.stamp = ++clock_;
    order_.emplace_back(entry.stamp, key);
    if (order_.size() > 2 * entries_.size() + 64) Compact();
  }
  // Drops order_ records a later touch or a forget made stale.
  void Compact() {
    std::deque<std::pair<std::uint64_t, BlockHash>> live;
    for (const auto& [stamp, key] : order_) {
      auto it = entries_.find(key);
      if (it != entries_.end() && it->second.stamp == stamp)
        live.emplace_back(stamp, key);
    }
    order_ = std::move(live);
  }
  void ForgetOldest() {
    while (!order_.empty()) {
      auto [stamp, key] = order_.front();
      order_.pop_front();
      auto it = entries_.find(key);
      if (it != entries_.end() && it->second.stamp == stamp) {
        entries_.erase(it);
        return;
      }
    }
  }

  std::size_t capacity_;
  std::uint64_t clock_ = 0;
  absl::flat_hash_map<BlockHash, Entry> entries_;
  std::deque<std::pair<std::uint64_t, BlockHash>> order_;
};

KnownGroup Describe(const ObjectGroup& group, std::uint64_t bytes) {
  KnownGroup known{.end_tokens = group.end_tokens, .bytes = bytes};
  for (const ObjectPart& part : group.parts) known.groups.push_back(part.group);
  return known;
}

}  // namespace

struct TierChain::Impl {
  TierChainOptions options;
  NamespaceDigest ns;
  std::vector<std::unique_ptr<ObjectStore>> stores;
  std::vector<TierCounters> counters;
  Directory directory;

  Impl(TierChainOptions chain_options,
       std::vector<std::unique_ptr<ObjectStore>> tier_stores)
      : options(std::move(chain_options)),
        ns(DigestNamespace(options.ns)),
        stores(std::move(tier_stores)),
        counters(stores.size()),
        directory(options.max_directory_entries) {}

  // The valid group in tier `t` under `name`, counting what went wrong;
  // a refused object is erased.
  std::optional<ObjectGroup> Check(std::size_t t, const std::string& name,
                                   const BlockHash& key, ObjectRead read) {
    TierCounters& c = counters[t];
    if (read.status == StoreStatus::kAbsent) {
      ++c.absent;
      return std::nullopt;
    }
    if (read.status == StoreStatus::kError) {
      ++c.store_errors;
      return std::nullopt;
    }
    DecodedObject decoded = DecodeObjectGroup(read.bytes, ns, key);
    if (decoded.defect != ObjectDefect::kNone) {
      ++c.defects[static_cast<std::size_t>(decoded.defect)];
      if (stores[t]->Erase(name) == StoreStatus::kError) ++c.store_errors;
      return std::nullopt;
    }
    ++c.groups_loaded;
    c.bytes_loaded += read.bytes.size();
    return std::move(decoded.group);
  }

  // Reads the named objects of tier `t` into the directory, in batches so
  // that a large shared store is not read at once; returns those learned.
  std::size_t Learn(std::size_t t, std::span<const std::string> names,
                    std::span<const BlockHash> keys) {
    constexpr std::size_t kBatch = 64;
    std::size_t learned = 0;
    for (std::size_t from = 0; from < names.size(); from += kBatch) {
      const std::size_t n = std::min(kBatch, names.size() - from);
      std::vector<ObjectRead> reads =
          stores[t]->GetMany(names.subspan(from, n));
      for (std::size_t j = 0; j < n; ++j) {
        const std::uint64_t size = reads[j].bytes.size();
        std::optional<ObjectGroup> group =
            Check(t, names[from + j], keys[from + j], std::move(reads[j]));
        if (!group) continue;
        directory.Learn(keys[from + j], Describe(*group, size));
        ++learned;
      }
    }
    return learned;
  }
};

TierChain::TierChain(TierChainOptions options,
                     std::vector<std::unique_ptr<ObjectStore>> stores) {
  HKV_REQUIRE(!stores.empty(), "a tier chain has at least one store");
  for (const auto& store : stores) {
    HKV_REQUIRE(store != nullptr, "a tier chain's stores are not null");
  }
  HKV_REQUIRE(options.max_directory_entries >= 1,
              "a tier chain's directory holds at least one group");
  impl_ = std::make_unique<Impl>(std::move(options), std::move(stores));
}
TierChain::TierChain(TierChain&&) noexcept = default;
TierChain& TierChain::operator=(TierChain&&) noexcept = default;
TierChain::~TierChain() = default;

std::size_t TierChain::num_tiers() const { return impl_->stores.size(); }
const NamespaceDigest& TierChain::namespace_digest() const { return impl_->ns; }

std::size_t TierChain::Store(std::span<const ObjectGroup> groups) {
  if (groups.empty()) return 0;
  std::vector<NamedObject> objects;
  objects.reserve(groups.size());
  for (const ObjectGroup& group : groups) {
    objects.push_back({.name = ObjectName(impl_->ns, group.key),
                       .bytes = EncodeObjectGroup(group, impl_->ns)});
  }
  std::vector<bool> taken(groups.size(), false);
  for (std::size_t t = 0; t < impl_->stores.size(); ++t) {
    const std::vector<StoreStatus> status = impl_->stores[t]->PutMany(objects);
    for (std::size_t i = 0; i < groups.size(); ++i) {
      if (status[i] == StoreStatus::kOk) {
        ++impl_->counters[t].groups_stored;
        taken[i] = true;
      } else {
        ++impl_->counters[t].store_errors;
      }
    }
  }
  std::size_t stored = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (!taken[i]) continue;
    impl_->directory.Learn(groups[i].key,
                           Describe(groups[i], objects[i].bytes.size()));
    ++stored;
  }
  return stored;
}

std::vector<std::optional<ObjectGroup>> TierChain::Load(
    std::span<const BlockHash> keys) {
  std::vector<std::optional<ObjectGroup>> found(keys.size());
  std::vector<std::uint64_t> sizes(keys.size(), 0);
  std::vector<std::string> names;
  for (const BlockHash& key : keys) names.push_back(ObjectName(impl_->ns, key));
  std::vector<std::size_t> wanted(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) wanted[i] = i;
  for (std::size_t t = 0; t < impl_->stores.size() && !wanted.empty(); ++t) {
    std::vector<std::string> batch;
    for (std::size_t i : wanted) batch.push_back(names[i]);
    std::vector<ObjectRead> reads = impl_->stores[t]->GetMany(batch);
    std::vector<std::size_t> still;
    for (std::size_t j = 0; j < wanted.size(); ++j) {
      const std::size_t i = wanted[j];
      sizes[i] = reads[j].bytes.size();
      found[i] = impl_->Check(t, names[i], keys[i], std::move(reads[j]));
      if (!found[i]) {
        still.push_back(i);
        continue;
      }
      // Copied into the tiers above, which missed it.
      const std::string bytes = EncodeObjectGroup(*found[i], impl_->ns);
      for (std::size_t above = 0; above < t; ++above) {
        if (impl_->stores[above]->Put(names[i], bytes) == StoreStatus::kOk)
          ++impl_->counters[above].groups_stored;
      }
    }
    wanted = std::move(still);
  }
  // What was read is what the tiers hold now (another writer may have
  // replaced a group with fewer parts).
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (found[i]) {
      impl_->directory.Learn(keys[i], Describe(*found[i], sizes[i]));
    } else {
      impl_->directory.Forget(keys[i]);
    }
  }
  return found;
}

void TierChain::Drop(const BlockHash& key) {
  const std::string name = ObjectName(impl_->ns, key);
  for (std::size_t t = 0; t < impl_->stores.size(); ++t) {
    if (impl_->stores[t]->Erase(name) == StoreStatus::kError)
      ++impl_->counters[t].store_errors;
  }
  impl_->directory.Forget(key);
}

Result<std::size_t> TierChain::Refresh() {
  const std::string prefix = ObjectNamePrefix(impl_->ns);
  std::size_t learned = 0;
  bool listed = false;
  for (std::size_t t = 0; t < impl_->stores.size(); ++t) {
    Result<std::vector<std::string>> names =
        impl_->stores[t]->List(prefix, impl_->options.max_directory_entries);
    if (!names) {
      ++impl_->counters[t].store_errors;
      continue;
    }
    listed = true;
    std::vector<std::string> unknown;
    std::vector<BlockHash> keys;
    for (const std::string& name : *names) {
      std::optional<BlockHash> key = KeyOfObjectName(impl_->ns, name);
      if (!key || impl_->directory.Find(*key) != nullptr) continue;
      unknown.push_back(name);
      keys.push_back(*key);
    }
    learned += impl_->Learn(t, unknown, keys);
  }
  if (!listed)
    return Fail(ErrorCode::kIoError, "no tier could list its objects");
  return learned;
}

const KnownGroup* TierChain::Find(const BlockHash& key) const {
  return impl_->directory.Find(key);
}
std::size_t TierChain::num_known_groups() const {
  return impl_->directory.size();
}
std::vector<BlockHash> TierChain::KnownKeys() const {
  return impl_->directory.Keys();
}

std::vector<TierCounters> TierChain::counters() const {
  std::vector<TierCounters> out = impl_->counters;
  for (std::size_t t = 0; t < out.size(); ++t) {
    out[t].store = impl_->stores[t]->counters();
  }
  return out;
}

}  // namespace hkv
