// kjit::cache bundles: one archive of a cache's entries (compile results and tuning decisions
// alike: both are entries), to seed other caches: an image, a fleet's nodes, a CI artefact
// (`kjit cache export` / `import`). The format (docs/bundles.md), integers little-endian:
//
//   <bundle>   ::= <header> <record>* <manifest> <trailer>
//   <header>   ::= "KJITBNDL" u16 version(1) u16 0 u32 0 generation[16]                  32 bytes
//   <record>   ::= u64 size, the entry's bytes (its own format: core/cache/entry.hpp)
//   <manifest> ::= text, "name value" lines: kjit-bundle, generation, toolkit, kjit, entries,
//                  bytes, created, selection
//   <trailer>  ::= "KJBTRAIL" u64 records_end u64 manifest_size u64 entries hash[32]
//                  u8 scheme u8 0 u16 signature_size signature u32 trailer_size "KJBNDONE"
//
// `hash` is BLAKE2b-256 of every byte before it; the signature (none, HMAC-SHA256 or ed25519,
// made by the caller: cache/ holds no keys) covers "kjit bundle 1 signature\0" + hash, so the
// whole archive. The last 12 bytes, the trailer's size and the completion marker "KJBNDONE",
// are read first: an archive cut short, or still being written, is refused at once.
//
// merge_bundles writes one archive of several (the shards of one warm), each checked whole first.
//
// import_bundle checks the whole archive before it writes anything: the completion marker, the
// hash, the signature, the header's and manifest's generation and counts against the trailer's,
// and every entry as a disk hit checks it (core/cache/entry's parse). Only then does it write, each
// entry through the store's own atomic put, skipping those already there and valid, under a
// journal (the store's note "import"), so a process killed mid-import leaves a valid cache and the
// next import says so and finishes. An archive changed on disk while it is imported stops the
// import (each entry's BLAKE2b is checked again as it is written). No CUDA here; nothing throws
// past allocation failures.
#pragma once

#include "core/system/tools_api.hpp"
#include "core/cache/entry.hpp"
#include "core/cache/key.hpp"
#include "core/system/result.hpp"
#include "core/cache/store.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::cache {

inline constexpr std::uint16_t k_bundle_format_version = 1;

enum class BundleScheme : std::uint8_t { none = 0, hmac_sha256 = 1, ed25519 = 2 };
KJIT_TOOLS_API std::string_view scheme_name(BundleScheme scheme);  // "none", "hmac-sha256", "ed25519"

struct BundleSignature {
  BundleScheme scheme = BundleScheme::none;
  std::string bytes;
};
// Signs `message` (what a bundle's signature covers); the caller's keys.
using BundleSign = std::function<BundleSignature(std::string_view message)>;
// Checks a bundle's signature over `message`; a Failure says why the bundle is refused.
using BundleVerify = std::function<system::Result<void>(const BundleSignature& signature, std::string_view message)>;

struct BundleManifest {
  std::string generation;  // 32 hex digits, random, one per export
  std::string toolkit;     // the exporter's NVRTC version ("13.0")
  std::string kjit;        // the exporter's kjit version
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;  // the entries' bytes
  std::int64_t created = 0;  // unix seconds
  std::string selection;   // what was selected ("arch sm_90; last used within 604800 s"), one line
};

struct BundleExportOptions {
  std::string toolkit, kjit, selection;  // into the manifest
  // Which entries go in: `pick` before one is read (its size and last use), `keep` once it was
  // read and checked (its sections); unset: every one.
  std::function<bool(const EntryInfo&)> pick;
  std::function<bool(const Key&, std::string_view bytes, const std::vector<SectionRef>&)> keep;
  BundleSign sign;  // unset: an unsigned bundle
};

struct BundleExportResult {
  BundleManifest manifest;
  BundleScheme scheme = BundleScheme::none;
  std::uint64_t file_size = 0;
  std::vector<Skipped> skipped;  // damaged entries (removed, as a hit removes them) and links
};

// Writes the store's entries `options` select to `file` (replaced whole through AtomicFile, so a
// reader never sees a part of it). A Failure names the file and why.
KJIT_TOOLS_API system::Result<BundleExportResult> export_bundle(Store& store, const std::string& file, const BundleExportOptions& options);

// The same, into `out` (a bundle for a remote store).
KJIT_TOOLS_API system::Result<BundleExportResult> export_bundle_bytes(Store& store, std::string& out, const BundleExportOptions& options);

// An import that did not finish (the store's journal): which bundle, and how far it got.
struct ImportJournal {
  std::string generation;
  std::string source;
  std::uint64_t entries = 0;
  std::uint64_t written = 0;  // at least this many were written (it is updated every few hundred)
};

struct BundleImportOptions {
  // Checks the signature; unset: no key, so only an unsigned bundle is accepted.
  BundleVerify verify;
  bool check_only = false;  // check the whole bundle, write nothing
  std::string source;       // the bundle as the journal and messages name it (the file, by default)
  // Called once the bundle was checked, before the first write (tests kill the process there).
  std::function<void(const BundleManifest&)> checked;
};

struct BundleImportResult {
  BundleManifest manifest;
  BundleScheme scheme = BundleScheme::none;
  std::uint64_t written = 0;  // entries written into the store
  std::uint64_t present = 0;  // entries already there and valid: skipped
  std::uint64_t evicted = 0;  // entries the puts evicted to stay within the store's budget
  std::optional<ImportJournal> earlier;  // an import that had not finished when this one started
  bool resumed = false;  // `earlier` was of this bundle (its generation): this import finished it
};

// Checks `file` whole, then writes its entries into `store` (see above). A Failure when the
// bundle is refused (nothing was written then), another import into this store is running, or
// a write failed (what was written stays, and the journal: the next import finishes).
KJIT_TOOLS_API system::Result<BundleImportResult> import_bundle(Store& store, const std::string& file, const BundleImportOptions& options);

// The same, from a bundle's bytes in memory (fetched from a remote store; options.source names it).
KJIT_TOOLS_API system::Result<BundleImportResult> import_bundle_bytes(Store& store, std::string_view bytes,
                                                       const BundleImportOptions& options);

struct BundleMergeOptions {
  std::string kjit;      // the merging kjit's version, into the manifest (its toolkit: the inputs')
  BundleVerify verify;   // checks each input's signature; unset: only unsigned inputs are accepted
  BundleSign sign;       // unset: an unsigned bundle
};

struct BundleMergeInput {
  BundleManifest manifest;
  BundleScheme scheme = BundleScheme::none;
};

struct BundleMergeResult {
  BundleManifest manifest;
  BundleScheme scheme = BundleScheme::none;
  std::uint64_t file_size = 0;
  std::vector<BundleMergeInput> inputs;  // in the order given
  std::uint64_t duplicates = 0;          // entries in more than one input, with the same bytes
  std::vector<Key> conflicts;            // keys in more than one input with different bytes (the first kept)
};

// One bundle of the entries of `files` (each key once: the first input's; in key order; each
// entry's bytes as its input holds them), written to `output` through AtomicFile. Every input is
// checked whole first, as import_bundle checks one (a Failure naming it: "the bundle F is refused,
// and nothing was merged: ..."), and inputs of different toolkits are refused; each entry is read
// again and compared with what the check saw before it is written.
KJIT_TOOLS_API system::Result<BundleMergeResult> merge_bundles(const std::vector<std::string>& files,
                                                               const std::string& output,
                                                               const BundleMergeOptions& options);

// The store's journal of an import that did not finish, if any.
std::optional<ImportJournal> read_import_journal(const Store& store);

// What a bundle's signature covers: "kjit bundle 1 signature\0" + the 32-byte hash.
std::string bundle_signed_message(std::string_view hash);

}  // namespace kjit::cache
