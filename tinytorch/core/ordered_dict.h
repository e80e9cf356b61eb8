// OrderedDict: a small insertion-ordered map from string keys to values, as LibTorch's
// torch::OrderedDict. Modules keep their parameters, buffers and children in one, so that
// named_parameters() and state_dict() list entries in the order they were registered.
// A hash index beside the ordered items makes lookup and insertion O(1), so building a dict of
// many entries (a checkpoint with tens of thousands of tensors) stays linear.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tinytorch/core/error.h"

namespace tt {

template <typename V>
class OrderedDict {
 public:
  using Item = std::pair<const std::string, V>;  // keys are fixed once inserted (the index relies on it)

  OrderedDict() = default;
  OrderedDict(const OrderedDict&) = default;
  OrderedDict(OrderedDict&&) noexcept = default;
  // Assignment rebuilds rather than assigning item by item (the keys are const).
  OrderedDict& operator=(const OrderedDict& other) {
    if (this != &other) {
      OrderedDict copy(other);
      *this = std::move(copy);
    }
    return *this;
  }
  OrderedDict& operator=(OrderedDict&& other) noexcept {
    items_.swap(other.items_);
    index_.swap(other.index_);
    return *this;
  }

  // Adds key -> value; a key already present is an error (names must be unique).
  V& insert(std::string key, V value) {
    TT_CHECK(!contains(key), "OrderedDict: key \"", key, "\" is already present");
    return append(std::move(key), std::move(value));
  }
  // Adds or replaces, keeping the original position when the key exists.
  V& insert_or_assign(const std::string& key, V value) {
    if (V* v = find(key)) return *v = std::move(value);
    return append(key, std::move(value));
  }

  V* find(const std::string& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  const V* find(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
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
  void clear() {
    items_.clear();
    index_.clear();
  }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  const std::vector<Item>& items() const { return items_; }

 private:
  // Adds an item the caller knows is new; if indexing it fails (out of memory) it is removed
  // again, so items and index always agree.
  V& append(std::string key, V value) {
    items_.emplace_back(std::move(key), std::move(value));
    try {
      index_.emplace(items_.back().first, items_.size() - 1);
    } catch (...) {
      items_.pop_back();
      throw;
    }
    return items_.back().second;
  }

  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;  // key -> position in items_
};

}  // namespace tt
