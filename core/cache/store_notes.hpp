// kjit::cache::StoreNotes: small files of kjit's own at the top of a store folder
// (cache/store_folder.hpp), such as a bundle import's journal (core/cache/bundle). A note is `name`
// (no '/'; not an entry, shard, `locks`, `usage`, `stats` or CACHEDIR.TAG); it is read only as a
// regular file that passes the folder's trust check, never through a link; replaced whole through
// AtomicFile::create_at; removed. Maintenance never looks at notes. Failures are returned, never thrown.
#pragma once

#include "core/cache/store_folder.hpp"
#include "core/system/result.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace kjit::cache {

class StoreNotes {
public:
  explicit StoreNotes(std::shared_ptr<StoreFolder> folder) : m_folder(std::move(folder)) {}

  // The note's bytes; nullopt when there is none (or the folder is not made yet).
  system::Result<std::optional<std::string>> read(const std::string& name) const;
  system::Result<void> write(const std::string& name, std::string_view bytes);
  system::Result<void> remove(const std::string& name);
  // <folder>/<name>, for messages.
  std::string path(const std::string& name) const { return m_folder->path(name); }

private:
  std::shared_ptr<StoreFolder> m_folder;
};

}  // namespace kjit::cache
