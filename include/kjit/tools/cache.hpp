// kjit::Cache: administration of a cache directory, what `kjit cache` does: counters summed
// over every process, usage, listing, verification, pruning and clearing, and warm bundles
// (export, import) with their signing keys. Host programs use it to warm, inspect or trim a
// cache. merge_bundles makes one bundle of several (the shards of one warm). Throws UsageError
// for a malformed size or duration.
#pragma once

#include <kjit/export.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit {

struct CacheStats {
  std::filesystem::path dir;
  std::uint64_t entries = 0, bytes = 0, max_size = 0;
  // Summed over every process that used the directory. The cache's counter list, field for
  // field by name (kjit copies them by that list: a counter added there must be added here).
  std::uint64_t hits = 0, misses = 0, compiles = 0, waits = 0, damaged = 0, evictions = 0, bytes_written = 0,
                bytes_read = 0, store_failures = 0;
  // The remote tier (KJIT_REMOTE_CACHE): GETs made on the request path and their summed latency
  // (microseconds), their hits and misses (rejected: a value present but damaged, foreign or
  // unsigned, never loaded), failed calls (timeouts among them), writes made and dropped (queue
  // full, value too large, remote skipped), and bytes each way; of them, the hits an HTTP level
  // answered, the HTTP levels' failed calls, and the writes that backfilled a faster level.
  std::uint64_t remote_requests = 0, remote_hits = 0, remote_misses = 0, remote_rejected = 0, remote_errors = 0,
                remote_timeouts = 0, remote_writes = 0, remote_dropped = 0, remote_bytes_read = 0,
                remote_bytes_written = 0, remote_latency_us = 0, remote_http_hits = 0, remote_http_errors = 0,
                remote_backfills = 0;
  // Reads not made because the key's shard was down (skipped in its back-off): misses.
  std::uint64_t remote_shard_down = 0;
};

struct CacheEntryInfo {
  std::string key;  // 32 hex digits
  std::filesystem::path path;
  std::uint64_t size = 0;
  std::chrono::system_clock::time_point last_use;
  // From the entry itself: the program (a tuner's name for a decision), the arch ("sm_90"; empty
  // for a decision) and the kinds it holds ("cubin", "ptx", "ltoir", "tuning"). All empty when
  // the entry could not be read or checked (`kjit cache verify` says why).
  std::string program;
  std::string arch;
  std::vector<std::string> kinds;
  // The NVRTC options it was compiled with (canonical, the arch's included): what tells entries of
  // one program and arch apart. Empty for a decision, a link, and an entry an older kjit wrote.
  std::vector<std::string> options;
  // The name expressions it instantiated ("scale<float>", Program::instantiate, the CLI's
  // --instantiate), which tell apart entries of one program, arch and options. Empty where none
  // were given (and in an entry an older kjit wrote).
  std::vector<std::string> name_expressions;
};

struct CacheListResult {
  std::vector<CacheEntryInfo> entries;
  // Symbolic links inside the cache, left alone and not followed: path, why.
  std::vector<std::pair<std::filesystem::path, std::string>> skipped;
};

// A kjit::Tuner decision kept in the cache (`kjit cache ls --tuning`).
struct CacheTuningInfo {
  std::string key;  // the decision's key, 32 hex digits
  std::filesystem::path path;
  std::chrono::system_clock::time_point last_use;
  std::string device;
  std::string tuning_key;
  std::string name;  // the tuner's ("scale.cu: scale"); empty for decisions of earlier kjit versions
  std::size_t chosen = 0;
  std::vector<std::string> labels;
  std::vector<double> median_us;  // < 0: not timed to the end
  // With KJIT_TUNE_METRICS=sol when it was decided: why the winner won, from the speed-of-light
  // figures of it and the fastest measured runner-up ("DRAM 91.0% vs 64.2%, ... (vs block 128)").
  std::string why;
};

struct CachePruneResult {
  std::uint64_t removed_entries = 0, removed_bytes = 0, kept_entries = 0, kept_bytes = 0;
  // Symbolic links inside the cache, left alone and not followed: path, why.
  std::vector<std::pair<std::filesystem::path, std::string>> skipped;
  // Entries that should have gone and could not be removed (kept): path, why ("Read-only file system").
  std::vector<std::pair<std::filesystem::path, std::string>> not_removed;
};

struct CacheVerifyResult {
  std::uint64_t ok = 0;
  std::vector<std::pair<std::filesystem::path, std::string>> damaged;  // removed: path, why
  std::vector<std::pair<std::filesystem::path, std::string>> skipped;  // links, left alone: path, why
  // Damaged entries that could not be removed (a read-only cache): path, why.
  std::vector<std::pair<std::filesystem::path, std::string>> not_removed;
};

// The keys a bundle is signed with and checked by (docs/bundles.md): RuntimeConfig's fields of the
// same names, the KJIT_REMOTE_* variables. An ed25519 key and the secret are never both given.
struct BundleKeys {
  std::filesystem::path secret_file;       // HMAC-SHA256 with the fleet secret: signs and checks
  std::filesystem::path signing_key_file;  // ed25519 (CI): signs, and checks with its public key
  std::filesystem::path public_key_file;   // ed25519 public keys, one a line: check only
};

struct CacheExportOptions {
  // Only compile results for these archs ("sm_90", "compute_90"); empty: every arch. Tuning
  // decisions (entries too, with no arch: their key names the device) go along whatever the arch.
  std::vector<std::string> archs;
  std::optional<std::chrono::seconds> older_than;  // only entries last used longer ago than this
  std::optional<std::chrono::seconds> newer_than;  // only entries last used within this
  // Only these entries (keys, 32 hex digits: what one `kjit warm --shard` warmed); empty: every one.
  // A key the cache lacks is listed in the result's `missing`.
  std::vector<std::string> only_keys;
  // Signs the bundle: the signing key, else the secret; none: unsigned. Public keys alone cannot
  // sign: an export then throws UsageError.
  BundleKeys keys;
};

// What a bundle's manifest says of it.
struct CacheBundleInfo {
  std::string generation;  // 32 hex digits, random, one per export
  std::string toolkit;     // the exporter's NVRTC version
  std::string kjit_version;
  std::uint64_t entries = 0, bytes = 0;
  std::chrono::system_clock::time_point created;
  std::string signature;  // "none", "hmac-sha256" or "ed25519"
  std::string selection;  // what the export selected ("arch sm_90; newer than 7d")
};

// A bundle kept in the fleet's HTTP or S3 store (docs/bundles.md): a value under the name
// "kjit:bundle:<name>", so the file <url>/ac/<SHA-256 of that name>, which any server that takes
// PUT keeps (docs/http-store.md); or an OCI artifact in a registry (url oci://HOST/REPO:TAG to
// push, :TAG or @sha256:DIGEST to pull; no name). A node with public keys only imports it and
// never writes it.
struct RemoteBundle {
  std::string url;                  // an http(s):// or s3:// store, a KJIT_REMOTE_CACHE list (its first such entry), or oci://
  std::string name;                 // the bundle's name there ("warm-sm90"): letters, digits, . _ - (not for oci://)
  std::filesystem::path auth_file;  // KJIT_REMOTE_HTTP_AUTH_FILE: "user:password" or "Bearer <token>"
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};  // the whole transfer
};

struct CacheExportResult {
  std::filesystem::path file;  // empty for a remote bundle
  std::string remote;          // a remote bundle: "bundle <name> in <url>" (its password redacted), or the oci:// reference
  std::string digest;          // an OCI artifact's manifest digest ("sha256:..."); empty otherwise
  std::uint64_t file_size = 0;
  CacheBundleInfo bundle;
  // Entries left out: damaged ones (removed, as a hit removes them) and links: path, why.
  std::vector<std::pair<std::filesystem::path, std::string>> skipped;
  // Keys of `only_keys` the cache did not hold (evicted, damaged, never written).
  std::vector<std::string> missing;
};

struct CacheImportOptions {
  // Checks the signature. With a key given, only a bundle it signed (or, for the secret, that
  // the secret signed) is imported; with none, only an unsigned one: a signed bundle then needs
  // its key to be checked (docs/bundles.md).
  BundleKeys keys;
  bool check_only = false;  // check the whole bundle, import nothing
};

// An import into this cache that did not finish (killed, or a write failed).
struct CacheImportIncomplete {
  std::string generation;
  std::string file;
  std::uint64_t entries = 0;
  std::uint64_t written = 0;  // at least this many were in the cache when it stopped
};

struct CacheImportResult {
  CacheBundleInfo bundle;
  std::string digest;         // an OCI artifact's manifest digest, the tag resolved ("sha256:..."); empty otherwise
  std::uint64_t written = 0;  // entries written
  std::uint64_t present = 0;  // already in the cache and valid: skipped
  std::uint64_t evicted = 0;  // evicted by the budget while importing
  std::optional<CacheImportIncomplete> earlier;  // found when this import started
  bool resumed = false;       // `earlier` was this bundle: finished now
  // What the caller should know ("made with NVRTC 12.8; this kjit's is 13.0: ...").
  std::vector<std::string> warnings;
};

// What merge_bundles made of several bundles: the shards of one warm (`kjit warm --shard I/N
// --bundle F`), or bundles of anything, into one.
struct BundleMergeOptions {
  // Checks each input's signature as an import does (a signed input needs its key; with a key,
  // only what it signed), and signs the result as an export does: the signing key, else the
  // secret, else unsigned. Public keys alone check the inputs and cannot sign: UsageError.
  BundleKeys keys;
};

struct BundleMergeResult {
  std::filesystem::path file;
  std::uint64_t file_size = 0;
  CacheBundleInfo bundle;              // the merged bundle's manifest
  std::vector<CacheBundleInfo> inputs;  // each input's, in the order given
  // Entries found in more than one input: with the same bytes (written once), and with different
  // bytes (the first input's kept: two compiles of one key that differ, or two tuning decisions).
  std::uint64_t duplicates = 0;
  std::vector<std::string> conflicts;  // their keys
};

// Checks every input whole, as an import does (completion marker, hash, signature, every entry),
// before writing anything, then writes one bundle of their entries, each key once, in key order,
// byte for byte as the inputs hold them, replacing `output` whole. Throws IoError, naming the
// input and why, when one is refused or cannot be read, or the inputs were made by different
// toolkits (NVRTC versions), and nothing is written then; IoError when the output cannot be
// written; UsageError for no input, or public keys alone (they cannot sign).
KJIT_API BundleMergeResult merge_bundles(const std::vector<std::filesystem::path>& inputs,
                                         const std::filesystem::path& output, const BundleMergeOptions& options = {});

// A new ed25519 key pair (`kjit cache keygen`): PREFIX.key, the signing key (0600, for CI), and
// PREFIX.pub, its public key (one line; a public key file may list several). An existing file is
// never replaced: UsageError. IoError when a file cannot be written, or its folder is not there (named).
struct SigningKeyFiles {
  std::filesystem::path key_file, public_key_file;
  std::string public_key;  // the line written to public_key_file
};
KJIT_API SigningKeyFiles generate_signing_key(const std::filesystem::path& prefix);

class KJIT_API Cache {
public:
  // `dir` empty: the default cache dir (KJIT_CACHE_DIR, XDG_CACHE_HOME, ~/.cache/kjit).
  // `shared`: a team cache (KJIT_CACHE_SHARED). The folder is checked as a Runtime checks it;
  // one that cannot be used (it cannot be made, another user's, writable by others) makes every
  // call below throw UnavailableError saying which folder is not in use and why.
  explicit Cache(std::filesystem::path dir = {}, std::uint64_t max_size = 2ull << 30, bool shared = false);
  ~Cache();
  Cache(Cache&&) noexcept;
  Cache& operator=(Cache&&) noexcept;

  std::filesystem::path dir() const;
  CacheStats stats();
  std::vector<CacheEntryInfo> list() const;
  // list(), and the symbolic links it left alone (maintenance never follows a link in the cache).
  CacheListResult list_with_skipped() const;
  // The tuner's decisions among the entries (each read and checked), most recently used first.
  std::vector<CacheTuningInfo> tuning_decisions() const;
  // Reads and checks every entry; damaged ones are removed and listed.
  CacheVerifyResult verify();
  // Removes entries unused for `older_than`, then the least recently used until at most
  // `max_size` bytes remain (nullopt: the configured budget).
  CachePruneResult prune(std::optional<std::uint64_t> max_size,
                         std::optional<std::chrono::seconds> older_than = std::nullopt);
  CachePruneResult clear();

  // Writes the entries (and tuning decisions) `options` select into one signed archive, a warm
  // bundle (docs/bundles.md), replacing `file` whole. Throws IoError when it cannot be written.
  CacheExportResult export_bundle(const std::filesystem::path& file, const CacheExportOptions& options = {});
  // Checks the bundle whole (completion marker, hash, signature, every entry as a disk hit
  // checks it), then writes each entry into this cache atomically, skipping those already there
  // and valid; a killed import leaves a valid cache, and the next one reports it and finishes.
  // Throws IoError when the bundle is refused (nothing is imported then) or a write fails.
  CacheImportResult import_bundle(const std::filesystem::path& file, const CacheImportOptions& options = {});
  // The same through the fleet's HTTP store: the bundle is made in memory and PUT whole, or fetched
  // whole (at most 4 GiB) and then checked and imported as a file is. IoError when the store
  // fails or has no such bundle; UsageError for a URL that is not http(s):// or a wrong name.
  CacheExportResult export_bundle(const RemoteBundle& to, const CacheExportOptions& options = {});
  CacheImportResult import_bundle(const RemoteBundle& from, const CacheImportOptions& options = {});

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// One round trip to each server of a remote cache (`kjit cache remote ping`; `url` as
// KJIT_REMOTE_CACHE: a comma list of Redis shards, then HTTP levels): whether every server
// answered, what each says of itself ("redis 7.0.15; http 404 nginx/1.22.1") and how long it all
// took, or why not (`message`); and each server on its own (`servers`, in the tier's order: the
// shards, then the HTTP levels), with whether a shard would refuse writes now (a Redis at
// maxmemory under noeviction, a read-only replica: it still serves reads). An HTTP level is asked
// with the credentials in `http_auth_file` (KJIT_REMOTE_HTTP_AUTH_FILE). Throws UsageError for an
// address or credentials file it cannot use.
struct RemoteServerPing {
  std::string url;  // with its password redacted (redact_remote_url)
  bool shard = true;  // a Redis shard of the first level; false: an HTTP level
  double weight = 1;  // a shard's
  bool ok = false;
  std::string server;
  std::chrono::microseconds round_trip{0};
  std::string refusing_writes;  // why, when it would; empty otherwise
  std::string message;
};
struct RemotePing {
  std::string url;  // the whole list, its passwords redacted
  bool ok = false;  // every server answered
  std::string server;  // what each server that answered says, joined by "; "
  std::chrono::microseconds round_trip{0};  // all of them
  std::string message;  // why each that did not answer, joined by "; "
  std::vector<RemoteServerPing> servers;
};
KJIT_API RemotePing ping_remote_cache(const std::string& url, std::chrono::milliseconds timeout,
                                      const std::filesystem::path& http_auth_file = {});
// A remote cache's address as kjit prints it everywhere: "redis://:***@host:6379" (the password
// replaced; the rest kept).
KJIT_API std::string redact_remote_url(std::string_view url);

// "2G", "512M", "1.5GiB", "1048576": bytes. Throws UsageError naming `what` otherwise.
KJIT_API std::uint64_t parse_size(std::string_view text, std::string_view what);
// "30s", "10m", "2h", "7d", "2w". Throws UsageError naming `what` otherwise.
KJIT_API std::chrono::seconds parse_duration(std::string_view text, std::string_view what);

}  // namespace kjit
