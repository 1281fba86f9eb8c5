// Named values in recency order, oldest first: what the host and file stores
// evict from. O(1) lookup, insertion, removal and move to the newest end; an
// intrusive doubly linked list threaded through the hash map's nodes (whose
// addresses are stable), with a sentinel node.
//
// Thread-compatible. Neither copyable nor movable (nodes point at the
// sentinel member).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace hkv::internal {

template <typename Value>
class RecencyMap {
 public:
  RecencyMap() { sentinel_.prev = sentinel_.next = &sentinel_; }
  RecencyMap(const RecencyMap&) = delete;
  RecencyMap& operator=(const RecencyMap&) = delete;

  std::size_t size() const { return nodes_.size(); }
  bool empty() const { return nodes_.empty(); }

  // The value under `name`, or nullptr when there is none.
  Value* Find(std::string_view name) {
    const auto it = nodes_.find(name);
    return it == nodes_.end() ? nullptr : &it->second.value;
  }

  // Stores `value` under `name` as the newest entry, replacing any.
  void Put(std::string_view name, Value value) {
    auto [it, inserted] = nodes_.try_emplace(std::string(name));
    Node& node = it->second;
    if (inserted) {
      node.name = &it->first;
    } else {
      Unlink(node);
    }
    node.value = std::move(value);
    LinkNewest(node);
  }

  // Makes `name` the newest entry. Returns false when there is none.
  bool Touch(std::string_view name) {
    const auto it = nodes_.find(name);
    if (it == nodes_.end()) return false;
    Unlink(it->second);
    LinkNewest(it->second);
    return true;
  }

  // Removes `name`. Returns false when there was none.
  bool Erase(std::string_view name) {
    const auto it = nodes_.find(name);
    if (it == nodes_.end()) return false;
    Unlink(it->second);
    nodes_.erase(it);
    return true;
  }

  // The oldest entry. REQUIRES: !empty().
  const std::string& oldest_name() const { return *sentinel_.next->name; }
  const Value& oldest_value() const { return sentinel_.next->value; }
  // Removes the oldest entry. REQUIRES: !empty().
  void PopOldest() {
    Node& node = *sentinel_.next;
    Unlink(node);
    nodes_.erase(nodes_.find(*node.name));
  }

  // Calls `visit(name, value)` oldest first until it returns false. O(n).
  void ForEach(const std::function<bool(const std::string&, const Value&)>&
                   visit) const {
    for (const Node* n = sentinel_.next; n != &sentinel_; n = n->next) {
      if (!visit(*n->name, n->value)) return;
    }
  }

 private:
  struct Node {
    Value value{};
    const std::string* name = nullptr;  // the map key; null in the sentinel
    Node* prev = nullptr;
    Node* next = nullptr;
  };
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const {
      return std::hash<std::string_view>{}(name);
    }
  };

  void Unlink(Node& node) {
    node.prev->next = node.next;
    node.next->prev = node.prev;
  }
  void LinkNewest(Node& node) {
    node.prev = sentinel_.prev;
    node.next = &sentinel_;
    sentinel_.prev->next = &node;
    sentinel_.prev = &node;
  }

  // Every node of nodes_ is on the list exactly once, oldest after sentinel_.
  std::unordered_map<std::string, Node, NameHash, std::equal_to<>> nodes_;
  Node sentinel_;
};

}  // namespace hkv::internal
