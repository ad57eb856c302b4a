// Whether a cache directory may be trusted: its entries are executable code, so a folder that
// someone else owns or can write into is a way to plant a kernel. This file is the one place
// where that is decided; every path that opens a cache does so through cache::StoreFolder, whose
// constructor calls open_trusted_dir, and the store's parts then reach everything inside through
// the checked descriptor (openat, O_NOFOLLOW) and checks what it finds with TrustedDir::check.
//
// A private cache (the default) is created 0700; an existing one is used only when this user (or
// root: a read-only cache shipped in an image) owns it and neither group nor others may write
// into it. A team cache (KJIT_CACHE_SHARED) must be owned by this user or root, carry a group
// that is one of this user's groups, and never be writable by everyone; it is created 2770
// (set-group-ID), and everything kjit makes inside is 2770 / 0660 whatever the umask. Every
// shard folder and entry read from a team cache must carry that group (or be this user's or
// root's and closed to the group) and be writable by no one outside it.
// The <temp dir>/kjit-cache-<uid> fallback is never a team cache and never a symbolic link.
// Nothing here throws.
#pragma once

#include "core/system/file_mode.hpp"
#include "core/system/result.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <sys/types.h>

namespace kjit::cache {

enum class DirSharing { private_to_user, group };


// A cache folder that passed the checks, held open: the store reaches everything inside through
// fd(), never through a path that could have been replaced meanwhile.
class TrustedDir {
public:
  TrustedDir(int fd, std::string path, DirSharing sharing, gid_t group);
  ~TrustedDir();
  TrustedDir(const TrustedDir&) = delete;
  TrustedDir& operator=(const TrustedDir&) = delete;

  int fd() const { return m_fd; }
  const std::string& path() const { return m_path; }
  DirSharing sharing() const { return m_sharing; }  // private_to_user for the temp fallback, always
  gid_t group() const { return m_group; }

  // Whether a folder or file found inside (its fstat) may be used; `path` names it in the Failure.
  // When it may not but is this user's, its mode (and in a team cache its group) is mended
  // through `fd` first: a cache written under another umask heals instead of being refused.
  system::Result<void> check(int fd, const struct stat& st, std::string_view path) const;
  // Opens the folder `name` inside the folder `parent_fd` (creating it when missing, with the
  // mode above set exactly), never following a link, and checks it. The descriptor is the caller's.
  system::Result<int> open_folder(int parent_fd, const char* name, bool create) const;
  // How kjit creates files here.
  system::FileMode file_mode() const;

private:
  int m_fd = -1;
  std::string m_path;
  DirSharing m_sharing;
  gid_t m_group;
};

// Opens `dir` (creating it and its parents when missing and `create`), then checks it as above.
// A Failure says what is wrong with which folder and how to fix it; the caller then keeps nothing
// on disk.
system::Result<std::shared_ptr<const TrustedDir>> open_trusted_dir(const std::string& dir, DirSharing sharing,
                                                           bool create = true);
// open_trusted_dir, keeping only the verdict.
system::Result<void> prepare_trusted_dir(const std::string& dir, DirSharing sharing);

}  // namespace kjit::cache
