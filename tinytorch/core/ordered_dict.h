// OrderedDict: a small insertion-ordered map from string keys to values, as LibTorch's
// torch::OrderedDict. Modules keep their parameters, buffers and children in one, so that
// named_parameters() and state_dict() list entries in the order they were registered.
// Lookup is a linear scan: modules hold a handful of entries, and order matters more than speed.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tinytorch/core/error.h"

namespace tt {

template <typename V>
class OrderedDict {
 public:
  using Item = std::pair<std::string, V>;

  // Adds key -> value; a key already present is an error (names must be unique).
  V& insert(std::string key, V value) {
    TT_CHECK(!contains(key), "OrderedDict: key \"", key, "\" is already present");
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().second;
  }
  // Adds or replaces, keeping the original position when the key exists.
  V& insert_or_assign(const std::string& key, V value) {
    if (V* v = find(key)) return *v = std::move(value);
    items_.emplace_back(key, std::move(value));
    return items_.back().second;
  }

  V* find(const std::string& key) {
    for (auto& item : items_)
      if (item.first == key) return &item.second;
    return nullptr;
  }
  const V* find(const std::string& key) const {
    for (const auto& item : items_)
      if (item.first == key) return &item.second;
    return nullptr;
  }
  bool contains(const std::string& key) const { return find(key) != nullptr; }

  V& operator[](const std::string& key) {
    V* v = find(key);
    TT_CHECK_INDEX(v != nullptr, "OrderedDict: no key \"", key, "\"");
    return *v;
  }
  const V& operator[](const std::string& key) const {
    const V* v = find(key);
    TT_CHECK_INDEX(v != nullptr, "OrderedDict: no key \"", key, "\"");
    return *v;
  }

  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& item : items_) out.push_back(item.first);
    return out;
  }
  std::vector<V> values() const {
    std::vector<V> out;
    for (const auto& item : items_) out.push_back(item.second);
    return out;
  }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear() { items_.clear(); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  const std::vector<Item>& items() const { return items_; }

 private:
  std::vector<Item> items_;
};

}  // namespace tt
