// kjit::Cache's warm bundles over core/cache/bundle (the format, the checks, the journal) and
// core/cache/remote/signer (the keys): which entries an export selects, how a bundle is signed and
// which signatures an import accepts, a bundle kept in the fleet's HTTP store (the value
// "kjit:bundle:<name>"); and `kjit cache keygen`'s key pair.
#include "tools/admin/cache_impl.hpp"

#include <kjit/runtime.hpp>

#include "core/spi/cache.hpp"
#include "core/spi/system.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <memory>
#include <set>

namespace kjit {
namespace {

std::optional<cache::Signer> signer_of(const BundleKeys& keys) {
  auto s = cache::Signer::from_files(keys.secret_file.native(), keys.signing_key_file.native(),
                                     keys.public_key_file.native());
  if (!s) throw UsageError(s.error().message);
  return std::move(*s);
}

cache::BundleScheme scheme_of(const cache::Signer& s) {
  return s.scheme() == cache::Signer::Scheme::ed25519 ? cache::BundleScheme::ed25519 : cache::BundleScheme::hmac_sha256;
}

// The variable that names the key a scheme is checked with.
std::string_view check_variable(cache::BundleScheme scheme) {
  return scheme == cache::BundleScheme::ed25519 ? "KJIT_REMOTE_PUBLIC_KEY_FILE" : "KJIT_REMOTE_SECRET_FILE";
}

CacheBundleInfo info_of(const cache::BundleManifest& m, cache::BundleScheme scheme) {
  CacheBundleInfo out;
  out.generation = m.generation;
  out.toolkit = m.toolkit;
  out.kjit_version = m.kjit;
  out.entries = m.entries;
  out.bytes = m.bytes;
  out.created = std::chrono::system_clock::time_point(std::chrono::seconds(m.created));
  out.signature = std::string(cache::scheme_name(scheme));
  out.selection = m.selection;
  return out;
}

// The arch a compile result records in its meta section; nullopt for an entry with none (a
// tuning decision).
std::optional<std::string> arch_of(std::string_view bytes, const std::vector<cache::SectionRef>& sections) {
  for (const cache::SectionRef& s : sections) {
    if (s.kind != cache::SectionKind::meta) continue;
    const auto meta = nlohmann::json::parse(bytes.substr(s.offset, s.size), nullptr, false);
    if (meta.is_object() && meta.contains("arch") && meta["arch"].is_string()) return meta["arch"].get<std::string>();
  }
  return std::nullopt;
}

bool is_decision(const std::vector<cache::SectionRef>& sections) {
  return std::any_of(sections.begin(), sections.end(),
                     [](const cache::SectionRef& s) { return s.kind == cache::SectionKind::tuning; });
}

}  // namespace

namespace {

// What an export of `options` hands cache/bundle: the selection and the signature. `signer` is
// the caller's and outlives the options.
// `kept`, when given, receives the key of every entry the export writes.
cache::BundleExportOptions export_options(const CacheExportOptions& options, const std::optional<cache::Signer>& signer,
                                          std::set<std::string>* kept = nullptr) {
  if (signer && !signer->can_sign()) {
    throw UsageError(fmt::format("a bundle cannot be signed with public keys alone (KJIT_REMOTE_PUBLIC_KEY_FILE={}): "
                                 "export where the signing key is (KJIT_REMOTE_SIGNING_KEY_FILE)",
                                 options.keys.public_key_file.string()));
  }
  cache::BundleExportOptions o;
  o.toolkit = nvrtc_version();
  o.kjit = std::string(version());
  std::vector<std::string> selection;
  if (!options.archs.empty()) selection.push_back(fmt::format("arch {}", fmt::join(options.archs, ",")));
  if (options.older_than) selection.push_back(fmt::format("last used more than {} s ago", options.older_than->count()));
  if (options.newer_than) selection.push_back(fmt::format("last used within {} s", options.newer_than->count()));
  o.selection = selection.empty() ? "all" : fmt::format("{}", fmt::join(selection, "; "));
  if (options.older_than || options.newer_than) {
    o.pick = [now = std::chrono::system_clock::now(), older = options.older_than,
              newer = options.newer_than](const cache::EntryInfo& e) {
      const auto age = now - e.last_use;
      if (older && age <= *older) return false;
      if (newer && age > *newer) return false;
      return true;
    };
  }
  if (!options.only_keys.empty()) {
    selection.push_back(fmt::format("{} entr{} named", options.only_keys.size(), options.only_keys.size() == 1 ? "y" : "ies"));
    o.selection = fmt::format("{}", fmt::join(selection, "; "));
    auto keys = std::make_shared<std::set<std::string>>(options.only_keys.begin(), options.only_keys.end());
    o.pick = [keys, by_age = std::move(o.pick)](const cache::EntryInfo& e) {
      return keys->count(e.key.hex()) != 0 && (!by_age || by_age(e));
    };
  }
  if (!options.archs.empty()) {
    o.keep = [archs = options.archs](const cache::Key&, std::string_view bytes,
                                     const std::vector<cache::SectionRef>& sections) {
      if (is_decision(sections)) return true;
      const auto arch = arch_of(bytes, sections);
      return arch && std::find(archs.begin(), archs.end(), *arch) != archs.end();
    };
  }
  if (kept) {
    o.keep = [kept, archs = std::move(o.keep)](const cache::Key& key, std::string_view bytes,
                                               const std::vector<cache::SectionRef>& sections) {
      if (archs && !archs(key, bytes, sections)) return false;
      kept->insert(key.hex());
      return true;
    };
  }
  if (signer) {
    o.sign = [&signer](std::string_view message) {
      return cache::BundleSignature{scheme_of(*signer), signer->sign(message)};
    };
  }
  return o;
}

CacheExportResult export_result(const cache::BundleExportResult& r, const CacheExportOptions& options,
                                const std::set<std::string>& kept) {
  CacheExportResult out;
  out.file_size = r.file_size;
  out.bundle = info_of(r.manifest, r.scheme);
  for (const auto& s : r.skipped) out.skipped.emplace_back(s.path, s.why);
  for (const auto& k : options.only_keys) {
    if (kept.count(k) == 0) out.missing.push_back(k);
  }
  return out;
}

// What an import hands cache/bundle: the rule of docs/bundles.md. With a key, only what it
// signed; without one, only unsigned bundles (a signature that cannot be checked proves nothing,
// and is not ignored). `signer` is the caller's and outlives the options.
cache::BundleImportOptions import_options(const CacheImportOptions& options, const std::optional<cache::Signer>& signer) {
  cache::BundleImportOptions o;
  o.check_only = options.check_only;
  o.verify = [&signer](const cache::BundleSignature& sig, std::string_view message) -> system::Result<void> {
    using cache::BundleScheme;
    if (!signer) {
      if (sig.scheme == BundleScheme::none) return {};
      return system::Failure{fmt::format("it is signed ({}), and no key is configured here to check it (set {})",
                                         cache::scheme_name(sig.scheme), check_variable(sig.scheme))};
    }
    const BundleScheme want = scheme_of(*signer);
    if (sig.scheme == BundleScheme::none) {
      return system::Failure{fmt::format("it is unsigned, and this process imports only bundles signed with its key ({})",
                                         signer->variable())};
    }
    if (sig.scheme != want) {
      return system::Failure{fmt::format("it is signed with {}, and this process checks {} signatures ({})",
                                         cache::scheme_name(sig.scheme), cache::scheme_name(want), signer->variable())};
    }
    if (!signer->verify(sig.bytes, message)) {
      return system::Failure{want == BundleScheme::ed25519
                                 ? "its ed25519 signature is not valid for any of this node's public keys (altered, "
                                   "or signed with a key not listed in KJIT_REMOTE_PUBLIC_KEY_FILE)"
                                 : "its signature is not valid for this fleet's secret (altered, or signed with "
                                   "another secret)"};
    }
    return {};
  };
  return o;
}

CacheImportResult import_result(const cache::BundleImportResult& r, const cache::Store& store) {
  CacheImportResult out;
  out.bundle = info_of(r.manifest, r.scheme);
  out.written = r.written;
  out.present = r.present;
  out.evicted = r.evicted;
  out.resumed = r.resumed;
  if (r.earlier) {
    out.earlier = CacheImportIncomplete{r.earlier->generation, r.earlier->source, r.earlier->entries, r.earlier->written};
  }
  try {
    const std::string here = nvrtc_version();
    if (!r.manifest.toolkit.empty() && r.manifest.toolkit != here) {
      out.warnings.push_back(fmt::format("the bundle was made with NVRTC {}, and this kjit's is {}: its compile results "
                                         "are not found here (a key names its toolkit)",
                                         r.manifest.toolkit, here));
    }
  } catch (const Error&) {
    // No NVRTC to compare with: nothing to warn about.
  }
  if (r.evicted > 0) {
    out.warnings.push_back(fmt::format("the cache's budget ({} bytes) evicted {} entries during the import: raise "
                                       "KJIT_CACHE_MAX_SIZE to keep the whole bundle",
                                       store.folder()->config().max_size, r.evicted));
  }
  return out;
}

// The largest bundle fetched from a remote store: refused from the length the server announces.
constexpr std::uint64_t k_max_remote_bundle = 4ull << 30;

struct OpenedRemote {
  std::unique_ptr<cache::RemoteStore> store;
  std::string value_name;  // "kjit:bundle:<name>"
  std::string source;      // "<name> in <url>", the password redacted
  std::string shown;       // "bundle <source>"
};

OpenedRemote open_remote_bundle(const RemoteBundle& b) {
  // A store whose backend keeps whole bundles (its row says so), or a KJIT_REMOTE_CACHE list's
  // first such level.
  auto keeps_bundles = [](std::string_view u) {
    const cache::RemoteBackend* row = cache::remote_backend_of(u);
    return row != nullptr && row->can.bundles;
  };
  std::string url = b.url;
  if (!keeps_bundles(url)) {
    if (auto list = cache::parse_remote_list(url)) {
      for (const cache::RemoteListEntry& level : list->levels) {
        if (keeps_bundles(level.url)) {
          url = level.url;
          break;
        }
      }
    }
  }
  if (!keeps_bundles(url)) {
    std::string forms;
    for (const cache::RemoteBackend& row : cache::remote_backends()) {
      if (row.can.bundles) forms += (forms.empty() ? "" : " or ") + std::string(row.form);
    }
    throw UsageError(fmt::format("a remote bundle goes to a store that keeps whole bundles, and \"{}\" names none "
                                 "(expected {}, or a KJIT_REMOTE_CACHE list with such an entry)",
                                 cache::redact_url(b.url), forms));
  }
  const bool good_name = !b.name.empty() && b.name.size() <= 200 &&
                         std::all_of(b.name.begin(), b.name.end(), [](char c) {
                           return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
                         });
  if (!good_name) {
    throw UsageError(fmt::format("bundle name \"{}\": use 1 to 200 letters, digits, '.', '_' or '-' (warm-sm90)", b.name));
  }
  cache::HttpCredentials credentials;
  if (!b.auth_file.empty()) {
    auto c = cache::read_http_credentials(b.auth_file.string());
    if (!c) throw UsageError(c.error().message);
    credentials = std::move(*c);
  }
  const auto connect = std::min<std::chrono::milliseconds>(b.timeout, std::chrono::seconds(10));
  auto store = cache::open_remote_store(url, {cache::RemoteTimeouts{connect, b.timeout}, credentials});
  if (!store) throw UsageError(store.error().message);
  OpenedRemote out{std::move(*store), "kjit:bundle:" + b.name, {}, {}};
  out.source = fmt::format("{} in {}", b.name, out.store->url());
  out.shown = "bundle " + out.source;
  return out;
}

// An oci:// reference: the registry's row keeps bundles only.
bool is_registry(const std::string& url) {
  const cache::RemoteBackend* row = cache::remote_backend_of(url);
  return row != nullptr && row->place == cache::RemotePlace::bundles;
}

cache::OciRegistry open_registry(const RemoteBundle& b) {
  auto ref = cache::parse_oci_reference(b.url);
  if (!ref) throw UsageError(ref.error().message);
  cache::HttpCredentials credentials;
  if (!b.auth_file.empty()) {
    auto c = cache::read_http_credentials(b.auth_file.string());
    if (!c) throw UsageError(c.error().message);
    credentials = std::move(*c);
  }
  const auto connect = std::min<std::chrono::milliseconds>(b.timeout, std::chrono::seconds(10));
  return cache::OciRegistry(std::move(*ref), cache::RemoteTimeouts{connect, b.timeout}, std::move(credentials));
}

}  // namespace

CacheExportResult Cache::export_bundle(const std::filesystem::path& file, const CacheExportOptions& options) {
  cache::Store& store = m_impl->trusted().store;
  const std::optional<cache::Signer> signer = signer_of(options.keys);
  std::set<std::string> kept;
  auto r = cache::export_bundle(store, file.string(), export_options(options, signer, &kept));
  m_impl->stats.flush();
  if (!r) throw IoError(r.error().message);
  CacheExportResult out = export_result(*r, options, kept);
  out.file = file;
  return out;
}

CacheExportResult Cache::export_bundle(const RemoteBundle& to, const CacheExportOptions& options) {
  cache::Store& store = m_impl->trusted().store;
  const std::optional<cache::Signer> signer = signer_of(options.keys);
  if (is_registry(to.url)) {  // an OCI artifact: the bundle its one layer
    cache::OciRegistry registry = open_registry(to);
    std::string bytes;
    std::set<std::string> kept;
    auto r = cache::export_bundle_bytes(store, bytes, export_options(options, signer, &kept));
    m_impl->stats.flush();
    if (!r) throw IoError(r.error().message);
    auto pushed = registry.push(bytes);
    if (!pushed) throw IoError(fmt::format("pushing the bundle: {}", pushed.error().message));
    CacheExportResult out = export_result(*r, options, kept);
    out.remote = to.url;
    out.digest = *pushed;
    out.file_size = bytes.size();
    return out;
  }
  OpenedRemote remote = open_remote_bundle(to);
  std::string bytes;
  std::set<std::string> kept;
  auto r = cache::export_bundle_bytes(store, bytes, export_options(options, signer, &kept));
  m_impl->stats.flush();
  if (!r) throw IoError(r.error().message);
  if (auto put = remote.store->put(remote.value_name, bytes, std::chrono::milliseconds(0)); !put) {
    throw IoError(fmt::format("writing {}: {}", remote.shown, put.error().message));
  }
  CacheExportResult out = export_result(*r, options, kept);
  out.remote = remote.shown;
  return out;
}

CacheImportResult Cache::import_bundle(const std::filesystem::path& file, const CacheImportOptions& options) {
  cache::Store& store = m_impl->trusted().store;
  const std::optional<cache::Signer> signer = signer_of(options.keys);
  auto r = cache::import_bundle(store, file.string(), import_options(options, signer));
  m_impl->stats.flush();
  if (!r) throw IoError(r.error().message);
  return import_result(*r, store);
}

CacheImportResult Cache::import_bundle(const RemoteBundle& from, const CacheImportOptions& options) {
  cache::Store& store = m_impl->trusted().store;
  const std::optional<cache::Signer> signer = signer_of(options.keys);
  if (is_registry(from.url)) {  // the artifact's digests checked, then the bundle as a file is
    cache::OciRegistry registry = open_registry(from);
    auto pulled = registry.pull(k_max_remote_bundle);
    if (!pulled) throw IoError(fmt::format("pulling the bundle: {}", pulled.error().message));
    cache::BundleImportOptions o = import_options(options, signer);
    o.source = fmt::format("{} ({})", from.url, pulled->digest);
    auto r = cache::import_bundle_bytes(store, pulled->bytes, o);
    m_impl->stats.flush();
    if (!r) throw IoError(r.error().message);
    CacheImportResult out = import_result(*r, store);
    out.digest = pulled->digest;
    return out;
  }
  OpenedRemote remote = open_remote_bundle(from);
  auto got = remote.store->get(remote.value_name, k_max_remote_bundle);
  if (!got) throw IoError(fmt::format("reading {}: {}", remote.shown, got.error().message));
  if (!got->has_value()) throw IoError(fmt::format("reading {}: there is no such bundle", remote.shown));
  cache::BundleImportOptions o = import_options(options, signer);
  o.source = remote.source;
  auto r = cache::import_bundle_bytes(store, **got, o);
  m_impl->stats.flush();
  if (!r) throw IoError(r.error().message);
  return import_result(*r, store);
}

BundleMergeResult merge_bundles(const std::vector<std::filesystem::path>& inputs, const std::filesystem::path& output,
                                const BundleMergeOptions& options) {
  if (inputs.empty()) throw UsageError("merging bundles: give the bundles to merge (kjit cache bundle merge A B ... -o ALL)");
  const std::optional<cache::Signer> signer = signer_of(options.keys);
  // Signed as an export signs (and refused for public keys alone), inputs checked as an import checks.
  const cache::BundleExportOptions signing = export_options(CacheExportOptions{.keys = options.keys}, signer);
  const cache::BundleImportOptions checking = import_options(CacheImportOptions{.keys = options.keys}, signer);
  std::vector<std::string> files;
  for (const auto& f : inputs) files.push_back(f.string());
  auto r = cache::merge_bundles(files, output.string(),
                                cache::BundleMergeOptions{std::string(version()), checking.verify, signing.sign});
  if (!r) throw IoError(r.error().message);
  BundleMergeResult out;
  out.file = output;
  out.file_size = r->file_size;
  out.bundle = info_of(r->manifest, r->scheme);
  for (const auto& in : r->inputs) out.inputs.push_back(info_of(in.manifest, in.scheme));
  out.duplicates = r->duplicates;
  for (const auto& k : r->conflicts) out.conflicts.push_back(k.hex());
  return out;
}

SigningKeyFiles generate_signing_key(const std::filesystem::path& prefix) {
  if (prefix.empty() || prefix.filename().empty()) {
    throw UsageError(fmt::format("--out \"{}\": give a file prefix such as ci-2026 (writes ci-2026.key and ci-2026.pub)",
                                 prefix.string()));
  }
  SigningKeyFiles out{prefix.string() + ".key", prefix.string() + ".pub", {}};
  // The folder first: a missing one would otherwise be named through the temporary file's name.
  if (const std::filesystem::path folder = prefix.parent_path(); !folder.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec)) {
      throw IoError(fmt::format("writing the key pair {} and {}: the folder {} {}; make it first (mkdir -p {})",
                                out.key_file.string(), out.public_key_file.string(), folder.string(),
                                std::filesystem::exists(folder, ec) ? "is not a folder" : "does not exist",
                                folder.string()));
    }
  }
  for (const auto& f : {out.key_file, out.public_key_file}) {
    std::error_code ec;
    if (std::filesystem::symlink_status(f, ec).type() != std::filesystem::file_type::not_found) {
      throw UsageError(fmt::format("{} exists; a key is never replaced: remove it first, or choose another prefix",
                                   f.string()));
    }
  }
  cache::Signer::KeyPair pair = cache::Signer::generate_ed25519();
  if (auto w = system::write_file_atomically(out.key_file, pair.secret_text, system::AtomicFile::Sync::yes,
                                            system::FileMode{0600, true});
      !w) {
    throw IoError(w.error().message);
  }
  if (auto w = system::write_file_atomically(out.public_key_file, pair.public_text); !w) throw IoError(w.error().message);
  out.public_key = pair.public_text.substr(0, pair.public_text.size() - 1);
  return out;
}

}  // namespace kjit
