// Containers: Sequential (a chain of one-tensor-in, one-tensor-out layers) and ModuleList (an
// indexable list of modules, for stacks such as transformer blocks). Children are named "0",
// "1", ... so parameters read "layers.1.weight", as in PyTorch.
//
//   tt::nn::Sequential mlp(tt::nn::Linear(784, 256), tt::nn::ReLU(), tt::nn::Linear(256, 10));
//   Tensor logits = mlp(x);
//   auto fc = mlp.ptr<tt::nn::Linear>(0);   // typed access to an item
//
// Sequential erases each item's type at push_back: it keeps the module (shared) and a call of
// that module's forward(const Tensor&), so any class with such a forward can join.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tinytorch/nn/module.h"

namespace tt::nn {

class Sequential : public Module {
 public:
  Sequential() = default;
  // Sequential(Linear(2, 3), ReLU(), ...) or with std::shared_ptr items.
  template <typename First, typename... Rest,
            typename = std::enable_if_t<!std::is_same<std::decay_t<First>, Sequential>::value>>
  explicit Sequential(First&& first, Rest&&... rest) {
    push_back(std::forward<First>(first));
    (push_back(std::forward<Rest>(rest)), ...);
  }

  // Appends a module held by shared pointer (shared with the caller).
  template <typename M>
  void push_back(std::shared_ptr<M> module) {
    static_assert(std::is_base_of<Module, M>::value, "Sequential items must derive from nn::Module");
    TT_CHECK(module != nullptr, "Sequential::push_back: null module");
    register_module(std::to_string(items_.size()), module);
    M* raw = module.get();
    items_.push_back({module, [raw](const Tensor& x) { return raw->forward(x); }});
  }
  // Appends a module given by value (moved into a new shared pointer).
  template <typename M, typename = std::enable_if_t<std::is_base_of<Module, std::decay_t<M>>::value>>
  void push_back(M&& module) {
    push_back(std::make_shared<std::decay_t<M>>(std::forward<M>(module)));
  }

  // x goes through every item in order.
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  // Item i as a Module; negative i counts from the end.
  std::shared_ptr<Module> operator[](int64_t i) const;
  // Item i as its own type; a wrong type is an error naming the item's actual type.
  template <typename M>
  std::shared_ptr<M> ptr(int64_t i) const {
    auto typed = std::dynamic_pointer_cast<M>((*this)[i]);
    TT_CHECK(typed != nullptr, "Sequential::ptr: item ", i, " is a ", (*this)[i]->name(), ", not the requested type");
    return typed;
  }

 private:
  struct Item {
    std::shared_ptr<Module> module;
    std::function<Tensor(const Tensor&)> forward;
  };
  std::vector<Item> items_;
};

class ModuleList : public Module {
 public:
  ModuleList() = default;
  template <typename M>
  void push_back(std::shared_ptr<M> module) {
    static_assert(std::is_base_of<Module, M>::value, "ModuleList items must derive from nn::Module");
    TT_CHECK(module != nullptr, "ModuleList::push_back: null module");
    register_module(std::to_string(items_.size()), module);
    items_.push_back(std::move(module));
  }
  size_t size() const { return items_.size(); }
  std::shared_ptr<Module> operator[](int64_t i) const;
  template <typename M>
  std::shared_ptr<M> ptr(int64_t i) const {
    auto typed = std::dynamic_pointer_cast<M>((*this)[i]);
    TT_CHECK(typed != nullptr, "ModuleList::ptr: item ", i, " is a ", (*this)[i]->name(), ", not the requested type");
    return typed;
  }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> items_;
};

}  // namespace tt::nn
