// kjit::request::to_entry / from_entry: the one translation between a CompileResult and the
// cache's entry (cache::Entry: cubin, ptx, log, lowered names, meta). from_entry builds a hit's
// result from an entry read in place: the small sections are copied out and the entry's buffer
// itself becomes the cubin (from_entry_copy: the cubin is copied). An entry holds what its inputs
// determine and nothing of when or where it was made (the meta section: program, arch, options,
// kjit and NVRTC versions; no time), so two hosts compiling one key write the same bytes: a
// sharded warm merges into the bundle one host would make (docs/sharding.md). Never throws past
// allocation failures.
#pragma once

#include <kjit/compile_options.hpp>
#include <kjit/compile_result.hpp>

#include "core/cache/entry.hpp"
#include "core/cache/key.hpp"
#include "core/cache/store.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace kjit::request {

cache::Entry to_entry(const CompileResult& result);
// The result of a checked entry (the first section of each kind counts), as a hit.
CompileResult from_entry(cache::GetResult&& entry, std::string program_name, const Arch& arch,
                         std::vector<std::string> flags, const cache::Key& key);
// from_entry() that leaves `bytes` alone: the cubin is copied out (a remote hit, whose entry
// bytes go on to the disk's backfill).
CompileResult from_entry_copy(std::string_view bytes, const std::vector<cache::SectionRef>& sections,
                              std::string program_name, const Arch& arch, std::vector<std::string> flags,
                              const cache::Key& key);

}  // namespace kjit::request
