// kjit::tune::PublishedTable: values published once and then read by any thread without a lock
// or an allocation: a tuner's decisions by tuning key, a spec tuner's launches by shape. The
// launch path reads it; only a value's first use (deciding, remembering a shape) writes it, under
// its owner's mutex. Pure (no CUDA).
//
// Open addressing over atomic pointers to nodes that never move or go before the table: a reader
// loads the slot array and each slot with acquire, so it sees a node whole or not at all. Growing
// publishes a new array (twice the size) and keeps the old ones (a reader may still be walking
// one), so all the arrays together are under twice the last; a reader on an old array misses only
// what was added after it, and its owner's slow path then looks again under the mutex.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace kjit::tune {

template <class Value>
class PublishedTable {
public:
  PublishedTable() { grow(16); }
  PublishedTable(const PublishedTable&) = delete;
  PublishedTable& operator=(const PublishedTable&) = delete;

  // The value of hash `hash` for which `matches(value)` holds, or null. Any thread, any time:
  // no lock, no allocation (`matches` must allocate nothing either).
  template <class Match>
  const Value* find(std::uint64_t hash, const Match& matches) const {
    const Slots* s = m_slots.load(std::memory_order_acquire);
    for (std::size_t i = hash & s->mask;; i = (i + 1) & s->mask) {
      const Node* n = s->slots[i].load(std::memory_order_acquire);
      if (n == nullptr) return nullptr;
      if (n->hash == hash && matches(n->value)) return &n->value;
    }
  }

  // Adds `value` under `hash`; its address stays valid as long as the table. Writers only, one
  // at a time (the owner's mutex), and only for a value find() does not have.
  const Value& insert(std::uint64_t hash, Value value) {
    auto node = std::make_unique<Node>(Node{hash, std::move(value)});
    const Slots* s = m_slots.load(std::memory_order_relaxed);
    if ((m_nodes.size() + 1) * 2 > s->mask + 1) s = grow((s->mask + 1) * 2);
    m_nodes.push_back(std::move(node));
    place(*s, m_nodes.back().get());
    m_size.store(m_nodes.size(), std::memory_order_relaxed);
    return m_nodes.back()->value;
  }

  // How many values it holds (any thread; may lag an insert in progress).
  std::size_t size() const { return m_size.load(std::memory_order_relaxed); }

private:
  struct Node {
    std::uint64_t hash;
    Value value;
  };
  struct Slots {
    std::size_t mask;
    std::unique_ptr<std::atomic<const Node*>[]> slots;  // value-initialized: null
  };

  static void place(const Slots& s, const Node* n) {
    std::size_t i = n->hash & s.mask;
    while (s.slots[i].load(std::memory_order_relaxed) != nullptr) i = (i + 1) & s.mask;
    s.slots[i].store(n, std::memory_order_release);
  }

  const Slots* grow(std::size_t capacity) {
    auto s = std::make_unique<Slots>(Slots{capacity - 1, std::make_unique<std::atomic<const Node*>[]>(capacity)});
    for (const auto& n : m_nodes) place(*s, n.get());
    m_arrays.push_back(std::move(s));
    m_slots.store(m_arrays.back().get(), std::memory_order_release);
    return m_arrays.back().get();
  }

  std::atomic<const Slots*> m_slots{nullptr};
  std::vector<std::unique_ptr<Slots>> m_arrays;  // every array published, the current one last
  std::vector<std::unique_ptr<Node>> m_nodes;
  std::atomic<std::size_t> m_size{0};
};

}  // namespace kjit::tune
