// The parts of a cache folder beside a Store's request path, as a test builds them over the
// store's own StoreFolder (so that they count into the same counters): its maintenance, its notes
// and its persistent stats read or reset. A test that flushes keeps one StoreStats of its own
// (it remembers what it added).
#pragma once

#include "core/cache/store.hpp"
#include "core/cache/store_maintenance.hpp"
#include "core/cache/store_notes.hpp"
#include "core/cache/store_stats.hpp"

namespace kjit::test {

inline cache::StoreMaintenance maintenance_of(const cache::Store& store) { return cache::StoreMaintenance(store.folder()); }
inline cache::StoreNotes notes_of(const cache::Store& store) { return cache::StoreNotes(store.folder()); }
inline cache::StoreStats stats_of(const cache::Store& store) { return cache::StoreStats(store.folder()); }

}  // namespace kjit::test
