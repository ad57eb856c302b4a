// cache bundles: export_bundle writes the format of bundle.hpp, import_bundle checks an archive
// whole (pass 1) and then writes its entries through the store (pass 2) under a journal.
#include "core/cache/bundle.hpp"

#include "core/system/atomic_file.hpp"
#include "core/system/unique_fd.hpp"
#include "core/system/little_endian.hpp"

#include <fmt/format.h>
#include <sodium.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace kjit::cache {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view k_header_magic = "KJITBNDL";
constexpr std::string_view k_trailer_magic = "KJBTRAIL";
constexpr std::string_view k_done_magic = "KJBNDONE";
constexpr std::string_view k_signed_prefix{"kjit bundle 1 signature\0", 24};
constexpr std::size_t k_bundle_header_size = 32;
constexpr std::size_t k_hash_size = crypto_generichash_BYTES;  // 32: BLAKE2b-256
constexpr std::size_t k_trailer_head = 8 + 8 + 8 + 8;          // magic, records_end, manifest_size, entries
constexpr std::size_t k_trailer_fixed = k_trailer_head + k_hash_size + 1 + 1 + 2 + 4 + 8;
constexpr std::size_t k_max_signature = 1024;
constexpr std::uint64_t k_max_entry = 1ull << 32;  // 4 GiB: an entry announcing more is refused unread
constexpr std::uint64_t k_max_manifest = 1 << 20;
constexpr std::size_t k_write_buffer = 1 << 20;
constexpr std::uint64_t k_journal_every = 512;  // entries between journal updates
constexpr std::string_view k_journal = "import";

static_assert(k_hash_size == 32);

void init_sodium_once() {
  static const int initialized = sodium_init();
  (void)initialized;
}

using system::get_le;
using system::put_le;

std::string hex_of(std::string_view bytes) {
  std::string out(bytes.size() * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  out.pop_back();
  return out;
}

class Blake2b {
public:
  Blake2b() {
    init_sodium_once();
    crypto_generichash_init(&m_state, nullptr, 0, k_hash_size);
  }
  void update(std::string_view bytes) {
    crypto_generichash_update(&m_state, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  }
  std::string finish() {
    std::string out(k_hash_size, '\0');
    crypto_generichash_final(&m_state, reinterpret_cast<unsigned char*>(out.data()), out.size());
    return out;
  }
  static std::string of(std::string_view bytes) {
    Blake2b h;
    h.update(bytes);
    return h.finish();
  }

private:
  crypto_generichash_state m_state;
};

// One line for a manifest or journal value: no line breaks.
std::string one_line(std::string_view text) {
  std::string out(text);
  std::replace_if(out.begin(), out.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return out;
}

std::string manifest_text(const BundleManifest& m) {
  return fmt::format("kjit-bundle {}\ngeneration {}\ntoolkit {}\nkjit {}\nentries {}\nbytes {}\ncreated {}\nselection {}\n",
                     k_bundle_format_version, m.generation, one_line(m.toolkit), one_line(m.kjit), m.entries, m.bytes,
                     m.created, one_line(m.selection));
}

// "name value" lines into (name, value) pairs.
std::vector<std::pair<std::string, std::string>> lines_of(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos) out.emplace_back(std::string(line), std::string());
    else out.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
  }
  return out;
}

std::optional<std::uint64_t> number(const std::string& text) {
  if (text.empty() || text.size() > 20 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoull(text);
}

bool is_generation(const std::string& text) {
  return text.size() == 32 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

system::Result<BundleManifest> parse_manifest(std::string_view text) {
  BundleManifest m;
  bool version = false, entries = false, bytes = false;
  for (const auto& [name, value] : lines_of(text)) {
    if (name == "kjit-bundle") {
      if (value != std::to_string(k_bundle_format_version)) {
        return system::Failure{fmt::format("its manifest is of format {} (this kjit reads {})", value, k_bundle_format_version)};
      }
      version = true;
    } else if (name == "generation") {
      m.generation = value;
    } else if (name == "toolkit") {
      m.toolkit = value;
    } else if (name == "kjit") {
      m.kjit = value;
    } else if (name == "entries") {
      auto n = number(value);
      if (!n) return system::Failure{fmt::format("its manifest's entry count \"{}\" is not a number", value)};
      m.entries = *n;
      entries = true;
    } else if (name == "bytes") {
      auto n = number(value);
      if (!n) return system::Failure{fmt::format("its manifest's byte count \"{}\" is not a number", value)};
      m.bytes = *n;
      bytes = true;
    } else if (name == "created") {
      if (auto n = number(value)) m.created = static_cast<std::int64_t>(*n);
    } else if (name == "selection") {
      m.selection = value;
    }
  }
  if (!version || !entries || !bytes || !is_generation(m.generation)) {
    return system::Failure{"its manifest lacks its format, generation, entry count or byte count"};
  }
  return m;
}

std::string journal_text(const ImportJournal& j) {
  return fmt::format("kjit-import 1\ngeneration {}\nentries {}\nwritten {}\nsource {}\n", j.generation, j.entries,
                     j.written, one_line(j.source));
}

std::optional<ImportJournal> parse_journal(std::string_view text) {
  ImportJournal j;
  bool version = false;
  for (const auto& [name, value] : lines_of(text)) {
    if (name == "kjit-import") version = value == "1";
    else if (name == "generation") j.generation = value;
    else if (name == "entries") j.entries = number(value).value_or(0);
    else if (name == "written") j.written = number(value).value_or(0);
    else if (name == "source") j.source = value;
  }
  if (!version || !is_generation(j.generation)) return std::nullopt;
  return j;
}

// pread of exactly `n` bytes at `offset`: 0, the errno, or -1 for the file ending first.
int read_at(int fd, std::uint64_t offset, char* out, std::size_t n) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (got == 0) return -1;
    out += got;
    n -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
  return 0;
}

// Where a bundle is read from: a file (pread) or bytes in memory (fetched from a remote store).
struct Source {
  std::uint64_t size = 0;
  // Exactly `n` bytes at `offset` into `out`: 0, an errno, or -1 for the source ending first.
  std::function<int(std::uint64_t offset, char* out, std::size_t n)> read;
};

Source memory_source(std::string_view bytes) {
  return Source{bytes.size(), [bytes](std::uint64_t offset, char* out, std::size_t n) {
                  if (offset > bytes.size() || n > bytes.size() - offset) return -1;
                  std::memcpy(out, bytes.data() + offset, n);
                  return 0;
                }};
}

// Where one record's entry lies in the bundle, and what pass 1 found in it.
struct Record {
  std::uint64_t offset = 0;  // of the entry's bytes
  std::uint64_t size = 0;
  Key key;
  std::string digest;  // BLAKE2b-256 of the entry's bytes
};

struct Checked {
  BundleManifest manifest;
  BundleScheme scheme = BundleScheme::none;
  std::vector<Record> records;
};

// What a refusal means for the caller's work: an import's, a merge's.
enum class Refusing { import, merge };

std::string refused(const std::string& file, std::string_view why, Refusing what = Refusing::import) {
  return fmt::format("the bundle {} is refused, and nothing was {}: {}", file,
                     what == Refusing::import ? "imported from it" : "merged", why);
}

// Pass 1: everything about the bundle, before anything is written.
system::Result<Checked> check_bundle(const Source& in, const std::string& file, const BundleVerify& verify,
                                     Refusing refusing = Refusing::import) {
  auto refuse = [&](std::string_view why) { return system::Failure{refused(file, why, refusing)}; };
  auto io = [&](int err, std::string_view what) {
    if (err < 0) return refuse(fmt::format("it ends inside {} (truncated)", what));
    return system::Failure{fmt::format("reading the bundle {} ({}): {}", file, what, std::strerror(err))};
  };
  auto fetch = [&](std::uint64_t offset, char* out, std::size_t n) { return in.read(offset, out, n); };
  const std::uint64_t size = in.size;
  if (size < k_bundle_header_size + k_trailer_fixed) {
    return refuse(fmt::format("it holds {} bytes, fewer than a bundle's header and trailer (truncated)", size));
  }

  // The completion marker, then the trailer it closes.
  char tail[12];
  if (int err = fetch(size - sizeof tail, tail, sizeof tail); err != 0) return io(err, "its end");
  if (std::string_view(tail + 4, 8) != k_done_magic) {
    return refuse("it does not end with the completion marker (truncated, or still being written)");
  }
  const std::uint64_t trailer_size = get_le(tail, 4);
  if (trailer_size < k_trailer_fixed || trailer_size > k_trailer_fixed + k_max_signature ||
      trailer_size > size - k_bundle_header_size) {
    return refuse(fmt::format("its trailer announces {} bytes, which cannot be", trailer_size));
  }
  const std::uint64_t trailer_at = size - trailer_size;
  std::string trailer(trailer_size, '\0');
  if (int err = fetch(trailer_at, trailer.data(), trailer.size()); err != 0) return io(err, "its trailer");
  if (std::string_view(trailer).substr(0, 8) != k_trailer_magic) return refuse("its trailer's marker is missing");
  const std::uint64_t records_end = get_le(trailer.data() + 8, 8);
  const std::uint64_t manifest_size = get_le(trailer.data() + 16, 8);
  const std::uint64_t entries = get_le(trailer.data() + 24, 8);
  const std::string hash = trailer.substr(k_trailer_head, k_hash_size);
  std::size_t pos = k_trailer_head + k_hash_size;
  const auto scheme = static_cast<unsigned char>(trailer[pos]);
  const std::uint64_t signature_size = get_le(trailer.data() + pos + 2, 2);
  pos += 4;
  if (scheme > static_cast<unsigned char>(BundleScheme::ed25519)) return refuse(fmt::format("unknown signature scheme {}", scheme));
  if (trailer[pos - 3] != '\0') return refuse("its trailer's reserved byte is not zero");
  if (k_trailer_fixed + signature_size != trailer_size) return refuse("its trailer's sizes do not add up");
  BundleSignature signature{static_cast<BundleScheme>(scheme), trailer.substr(pos, signature_size)};
  if (get_le(trailer.data() + pos + signature_size, 4) != trailer_size) return refuse("its trailer's sizes do not add up");
  if (manifest_size > k_max_manifest || records_end < k_bundle_header_size || records_end > trailer_at ||
      trailer_at - records_end != manifest_size) {
    return refuse("its trailer does not describe this file (records and manifest out of place)");
  }

  // The header and every record, hashed in file order; each entry checked as a disk hit is.
  Blake2b whole;
  char header[k_bundle_header_size];
  if (int err = fetch(0, header, sizeof header); err != 0) return io(err, "its header");
  if (std::string_view(header, 8) != k_header_magic) return refuse("it is not a kjit bundle (no KJITBNDL header)");
  if (get_le(header + 8, 2) != k_bundle_format_version) {
    return refuse(fmt::format("it is of format {} (this kjit reads {})", get_le(header + 8, 2), k_bundle_format_version));
  }
  if (get_le(header + 10, 6) != 0) return refuse("its header's reserved bytes are not zero");
  whole.update(std::string_view(header, sizeof header));
  Checked out;
  std::uint64_t at = k_bundle_header_size, entry_bytes = 0;
  std::string bytes;
  while (at < records_end) {
    char head[8];
    if (records_end - at < sizeof head) return refuse(fmt::format("record {} is cut short", out.records.size()));
    if (int err = fetch(at, head, sizeof head); err != 0) return io(err, "a record");
    const std::uint64_t n = get_le(head, 8);
    at += sizeof head;
    if (n > records_end - at || n > k_max_entry) {
      return refuse(fmt::format("record {} announces {} bytes, more than the bundle holds", out.records.size(), n));
    }
    bytes.resize(n);
    if (int err = fetch(at, bytes.data(), n); err != 0) return io(err, "a record");
    whole.update(std::string_view(head, sizeof head));
    whole.update(bytes);
    const InPlaceParse parsed = parse_in_place(bytes);
    if (!parsed.error.empty()) {
      return refuse(fmt::format("entry {} (byte {}) is damaged: {}", out.records.size(), at, parsed.error));
    }
    out.records.push_back({at, n, parsed.key, Blake2b::of(bytes)});
    entry_bytes += n;
    at += n;
  }
  std::string manifest(manifest_size, '\0');
  if (int err = fetch(records_end, manifest.data(), manifest.size()); err != 0) return io(err, "its manifest");
  whole.update(manifest);
  whole.update(std::string_view(trailer).substr(0, k_trailer_head));
  const std::string computed = whole.finish();
  if (sodium_memcmp(computed.data(), hash.data(), k_hash_size) != 0) {
    return refuse("its hash does not match its content (damaged, altered, or parts of several bundles)");
  }

  // The hash holds: the signature says who made it.
  const std::string message = bundle_signed_message(hash);
  if (verify) {
    if (auto ok = verify(signature, message); !ok) return refuse(ok.error().message);
  } else if (signature.scheme != BundleScheme::none) {
    return refuse(fmt::format("it is signed ({}), and no key is configured here to check it", scheme_name(signature.scheme)));
  }
  auto m = parse_manifest(manifest);
  if (!m) return refuse(m.error().message);
  if (hex_of(std::string_view(header + 16, 16)) != m->generation) {
    return refuse("its header and manifest name different generations (parts of several bundles)");
  }
  if (m->entries != entries || out.records.size() != entries || m->bytes != entry_bytes) {
    return refuse(fmt::format("it holds {} entries of {} bytes; its manifest announces {} of {} and its trailer {} "
                              "(partial)",
                              out.records.size(), entry_bytes, m->entries, m->bytes, entries));
  }
  out.manifest = std::move(*m);
  out.scheme = signature.scheme;
  return out;
}

Key import_lock_key() { return Hasher(1, Hasher::Fields::drop).field("kjit", "bundle import").finish(); }

}  // namespace

std::string_view scheme_name(BundleScheme scheme) {
  switch (scheme) {
  case BundleScheme::hmac_sha256: return "hmac-sha256";
  case BundleScheme::ed25519: return "ed25519";
  case BundleScheme::none: break;
  }
  return "none";
}

std::string bundle_signed_message(std::string_view hash) {
  std::string out(k_signed_prefix);
  out += hash;
  return out;
}

namespace {

using Write = std::function<system::Result<void>(std::string_view)>;

// A bundle's bytes in file order, handed to `write` in pieces of about k_write_buffer: the
// header (a new generation), each entry given to add(), then the manifest and the trailer with
// its signature (finish()). The one writer of the format: export and merge both use it.
class BundleWriter {
public:
  BundleWriter(Write write, std::string toolkit, std::string kjit, std::string selection) : m_write(std::move(write)) {
    init_sodium_once();
    std::string generation(16, '\0');
    randombytes_buf(generation.data(), generation.size());
    m_manifest.generation = hex_of(generation);
    m_manifest.toolkit = std::move(toolkit);
    m_manifest.kjit = std::move(kjit);
    m_manifest.selection = std::move(selection);
    m_manifest.created =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    m_buffer.reserve(k_write_buffer + 64);
    std::string header(k_header_magic);
    put_le(header, k_bundle_format_version, 2);
    put_le(header, 0, 2);
    put_le(header, 0, 4);
    header += generation;
    emit(header);
  }

  bool failed() const { return m_failed.has_value(); }

  void add(std::string_view entry) {
    std::string head;
    put_le(head, entry.size(), 8);
    emit(head);
    emit(entry);
    m_at += head.size() + entry.size();
    m_manifest.entries += 1;
    m_manifest.bytes += entry.size();
  }

  struct Finished {
    BundleManifest manifest;
    BundleScheme scheme = BundleScheme::none;
    std::uint64_t file_size = 0;
  };

  system::Result<Finished> finish(const BundleSign& sign) {
    const std::string manifest = manifest_text(m_manifest);
    emit(manifest);
    std::string trailer(k_trailer_magic);
    put_le(trailer, m_at, 8);
    put_le(trailer, manifest.size(), 8);
    put_le(trailer, m_manifest.entries, 8);
    emit(trailer);
    const std::string hash = m_whole.finish();
    BundleSignature signature = sign ? sign(bundle_signed_message(hash)) : BundleSignature{};
    if (signature.bytes.size() > k_max_signature) return system::Failure{"a bundle signature longer than 1 KiB"};
    std::string rest = hash;
    rest.push_back(static_cast<char>(signature.scheme));
    rest.push_back('\0');
    put_le(rest, signature.bytes.size(), 2);
    rest += signature.bytes;
    put_le(rest, k_trailer_fixed + signature.bytes.size(), 4);
    rest += k_done_magic;
    emit(rest, false);
    if (!m_failed && !m_buffer.empty()) {
      if (auto w = m_write(m_buffer); !w) m_failed = w.error();
    }
    if (m_failed) return *m_failed;
    return Finished{m_manifest, signature.scheme, m_at + manifest.size() + trailer.size() + rest.size()};
  }

private:
  void emit(std::string_view bytes, bool hashed = true) {
    if (hashed) m_whole.update(bytes);
    m_buffer += bytes;
    if (m_buffer.size() >= k_write_buffer && !m_failed) {
      if (auto w = m_write(m_buffer); !w) m_failed = w.error();
      m_buffer.clear();
    }
  }

  Write m_write;
  BundleManifest m_manifest;
  Blake2b m_whole;
  std::string m_buffer;
  std::optional<system::Failure> m_failed;
  std::uint64_t m_at = k_bundle_header_size;
};

// The export itself.
system::Result<BundleExportResult> export_to(Store& store, const Write& write, const BundleExportOptions& options) {
  if (auto ok = store.trusted(); !ok) return ok.error();
  BundleExportResult result;
  BundleWriter out(write, options.toolkit, options.kjit, options.selection);
  ListResult listed = store.list_with_skipped();
  result.skipped = std::move(listed.skipped);
  for (const EntryInfo& info : listed.entries) {
    if (out.failed()) break;
    if (options.pick && !options.pick(info)) continue;
    GetResult got = store.peek_in_place(info.key);
    if (got.outcome == GetResult::Outcome::miss) continue;  // evicted meanwhile
    if (got.outcome != GetResult::Outcome::hit) {
      result.skipped.push_back({info.path.string(), got.message});
      continue;
    }
    if (options.keep && !options.keep(info.key, got.bytes, got.sections)) continue;
    out.add(got.bytes);
  }
  auto finished = out.finish(options.sign);
  if (!finished) return finished.error();
  result.manifest = std::move(finished->manifest);
  result.scheme = finished->scheme;
  result.file_size = finished->file_size;
  return result;
}

}  // namespace

system::Result<BundleExportResult> export_bundle(Store& store, const std::string& file, const BundleExportOptions& options) {
  if (auto ok = store.trusted(); !ok) return ok.error();
  auto out = system::AtomicFile::create(file);
  if (!out) return system::Failure{fmt::format("writing the bundle {}: {}", file, out.error().message)};
  auto r = export_to(store, [&](std::string_view bytes) { return out->write(bytes); }, options);
  if (!r) return system::Failure{fmt::format("writing the bundle {}: {}", file, r.error().message)};
  if (auto c = out->commit(system::AtomicFile::Sync::yes); !c) {
    return system::Failure{fmt::format("writing the bundle {}: {}", file, c.error().message)};
  }
  return r;
}

system::Result<BundleExportResult> export_bundle_bytes(Store& store, std::string& out, const BundleExportOptions& options) {
  out.clear();
  return export_to(store, [&](std::string_view bytes) -> system::Result<void> {
    out += bytes;
    return {};
  }, options);
}

std::optional<ImportJournal> read_import_journal(const Store& store) {
  auto note = store.read_note(std::string(k_journal));
  if (!note || !note->has_value()) return std::nullopt;
  auto j = parse_journal(**note);
  if (!j) return ImportJournal{std::string(32, '0'), "(an unreadable journal)", 0, 0};
  return j;
}

namespace {

system::Result<BundleImportResult> import_from(Store& store, const Source& in, const std::string& source,
                                               const BundleImportOptions& options) {
  if (auto ok = store.trusted(); !ok) return ok.error();

  // One import at a time into a store: the journal is one.
  std::optional<system::FileLock> lock;
  if (!options.check_only) {
    auto l = store.lock(import_lock_key(), 0ms);
    if (!l) {
      return system::Failure{l.error().timed_out()
                         ? fmt::format("another kjit cache import is running into {}; wait for it, then import again",
                                       store.config().dir)
                         : fmt::format("locking {} for an import: {}", store.config().dir, l.error().message)};
    }
    lock.emplace(std::move(*l));
  }
  BundleImportResult result;
  result.earlier = read_import_journal(store);

  auto checked = check_bundle(in, source, options.verify);
  if (!checked) return checked.error();
  result.manifest = std::move(checked->manifest);
  result.scheme = checked->scheme;
  result.resumed = result.earlier && result.earlier->generation == result.manifest.generation;
  if (options.check_only) return result;

  ImportJournal journal{result.manifest.generation, source, result.manifest.entries, 0};
  if (auto w = store.write_note(std::string(k_journal), journal_text(journal)); !w) {
    return system::Failure{fmt::format("writing the import journal in {}: {}", store.config().dir, w.error().message)};
  }
  if (options.checked) options.checked(result.manifest);
  // Each entry is published at once and counted in the usage total in batches, one lock each: a
  // process killed between the two leaves the total short until a recount (`kjit cache verify`),
  // as a killed writer's does.
  std::vector<UsageChange> uncounted;
  auto count = [&] {
    result.evicted += store.account(uncounted);
    uncounted.clear();
  };
  std::string bytes;
  std::uint64_t done = 0;
  for (const Record& r : checked->records) {
    bytes.resize(r.size);
    const int err = in.read(r.offset, bytes.data(), bytes.size());
    if (err != 0 || sodium_memcmp(Blake2b::of(bytes).data(), r.digest.data(), k_hash_size) != 0) {
      count();
      return system::Failure{fmt::format("the bundle {} changed while it was imported (entry {} is not the one checked); {} of "
                                 "{} entries are in the cache; import it again once it stays as it is",
                                 source, done, done, result.manifest.entries)};
    }
    const GetResult there = store.peek_in_place(r.key);
    if (there.outcome == GetResult::Outcome::hit) {
      result.present += 1;
    } else {
      PutResult put = store.put_bytes(r.key, bytes, Store::Accounting::deferred);
      if (!put.stored) {
        count();
        return system::Failure{fmt::format("importing the bundle {}: {}; {} of {} entries are in the cache, and the next "
                                   "import finishes",
                                   source, put.message, done, result.manifest.entries)};
      }
      result.written += 1;
      uncounted.push_back(std::move(put.change));
    }
    done += 1;
    if (done % k_journal_every == 0 && done < result.manifest.entries) {
      count();
      journal.written = done;
      (void)store.write_note(std::string(k_journal), journal_text(journal));  // progress only: best effort
    }
  }
  count();
  if (auto rm = store.remove_note(std::string(k_journal)); !rm) {
    return system::Failure{fmt::format("the bundle {} was imported, but its journal stays: {}", source, rm.error().message)};
  }
  return result;
}

}  // namespace

namespace {

// A bundle file open for reading (pread), as long as this lives.
struct FileSource {
  std::unique_ptr<system::UniqueFd> fd;
  Source source;
};

system::Result<FileSource> open_bundle(const std::string& file, const std::string& shown, Refusing what) {
  FileSource out{std::make_unique<system::UniqueFd>(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)), {}};
  if (out.fd->get() < 0) return system::Failure{fmt::format("reading the bundle {}: {}", file, std::strerror(errno))};
  struct stat st{};
  if (::fstat(out.fd->get(), &st) != 0) {
    return system::Failure{fmt::format("reading the bundle {}: {}", file, std::strerror(errno))};
  }
  if (!S_ISREG(st.st_mode)) {
    return system::Failure{refused(shown, "it is not a regular file (a bundle is read from its end first)", what)};
  }
  const int raw = out.fd->get();
  out.source = Source{static_cast<std::uint64_t>(st.st_size), [raw](std::uint64_t offset, char* into, std::size_t n) {
                        return read_at(raw, offset, into, n);
                      }};
  return out;
}

}  // namespace

system::Result<BundleImportResult> import_bundle(Store& store, const std::string& file, const BundleImportOptions& options) {
  const std::string source = options.source.empty() ? file : options.source;
  auto in = open_bundle(file, source, Refusing::import);
  if (!in) return in.error();
  return import_from(store, in->source, source, options);
}

system::Result<BundleImportResult> import_bundle_bytes(Store& store, std::string_view bytes, const BundleImportOptions& options) {
  return import_from(store, memory_source(bytes), options.source.empty() ? std::string("(in memory)") : options.source,
                     options);
}

system::Result<BundleMergeResult> merge_bundles(const std::vector<std::string>& files, const std::string& output,
                                                const BundleMergeOptions& options) {
  if (files.empty()) return system::Failure{"merging bundles: no bundle was given"};
  // Pass 1: every input checked whole, as an import checks it, before anything is written.
  std::vector<FileSource> sources;
  std::vector<Checked> checked;
  BundleMergeResult result;
  for (const std::string& file : files) {
    auto in = open_bundle(file, file, Refusing::merge);
    if (!in) return in.error();
    auto c = check_bundle(in->source, file, options.verify, Refusing::merge);
    if (!c) return c.error();
    result.inputs.push_back({c->manifest, c->scheme});
    sources.push_back(std::move(*in));
    checked.push_back(std::move(*c));
  }
  for (std::size_t i = 1; i < checked.size(); ++i) {
    if (checked[i].manifest.toolkit != checked[0].manifest.toolkit) {
      return system::Failure{fmt::format("merging bundles: {} was made with NVRTC {} and {} with NVRTC {}; a key names "
                                         "its toolkit, so merge the bundles of one toolkit",
                                         files[0], checked[0].manifest.toolkit, files[i], checked[i].manifest.toolkit)};
    }
  }

  // Each key once (the first input's), in key order.
  struct Pick {
    std::size_t input = 0;
    const Record* record = nullptr;
  };
  std::vector<Pick> picks;
  for (std::size_t i = 0; i < checked.size(); ++i) {
    for (const Record& r : checked[i].records) picks.push_back({i, &r});
  }
  std::stable_sort(picks.begin(), picks.end(),
                   [](const Pick& a, const Pick& b) { return a.record->key.bytes < b.record->key.bytes; });
  std::vector<Pick> kept;
  kept.reserve(picks.size());
  for (const Pick& p : picks) {
    if (!kept.empty() && kept.back().record->key == p.record->key) {
      if (kept.back().record->digest == p.record->digest) {
        result.duplicates += 1;
      } else if (result.conflicts.empty() || !(result.conflicts.back() == p.record->key)) {
        result.conflicts.push_back(p.record->key);
      }
      continue;
    }
    kept.push_back(p);
  }

  // Pass 2: the entries, read again and compared with what pass 1 checked, into one bundle.
  std::string selection = fmt::format("merge of {} bundles", files.size());
  if (std::all_of(checked.begin(), checked.end(),
                  [&](const Checked& c) { return c.manifest.selection == checked[0].manifest.selection; })) {
    selection += "; " + checked[0].manifest.selection;
  }
  auto out = system::AtomicFile::create(output);
  if (!out) return system::Failure{fmt::format("writing the bundle {}: {}", output, out.error().message)};
  BundleWriter writer([&](std::string_view bytes) { return out->write(bytes); }, checked[0].manifest.toolkit,
                      options.kjit, selection);
  std::string bytes;
  for (const Pick& p : kept) {
    if (writer.failed()) break;
    bytes.resize(p.record->size);
    const int err = sources[p.input].source.read(p.record->offset, bytes.data(), bytes.size());
    if (err != 0 || sodium_memcmp(Blake2b::of(bytes).data(), p.record->digest.data(), k_hash_size) != 0) {
      return system::Failure{fmt::format("the bundle {} changed while it was merged (an entry is not the one checked); "
                                         "nothing was written: merge again once it stays as it is",
                                         files[p.input])};
    }
    writer.add(bytes);
  }
  auto finished = writer.finish(options.sign);
  if (!finished) return system::Failure{fmt::format("writing the bundle {}: {}", output, finished.error().message)};
  if (auto c = out->commit(system::AtomicFile::Sync::yes); !c) {
    return system::Failure{fmt::format("writing the bundle {}: {}", output, c.error().message)};
  }
  result.manifest = std::move(finished->manifest);
  result.scheme = finished->scheme;
  result.file_size = finished->file_size;
  return result;
}

}  // namespace kjit::cache
