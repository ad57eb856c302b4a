// Whether a cache directory may be trusted: its entries are executable code, so a folder that
// someone else owns or can write into is a way to plant a kernel. The cache directory (and the
// <temp dir>/kjit-cache-<uid> fallback) is created mode 0700; an existing one is used only when
// this user (or root: a read-only cache shipped in an image) owns it and neither group nor others
// may write into it. A shared team cache opts in:
// then the group may write (the folder is created 2770, set-group-ID) and any owner is accepted;
// a folder everyone may write into is refused all the same. Nothing here throws.
#pragma once

#include "cache/result.hpp"

#include <string>

namespace kjit::cache {

enum class DirSharing { private_to_user, group };

// Creates `dir` (and its parents) when missing, then checks it as above. A Failure says what is
// wrong with which folder and how to fix it; the caller then keeps nothing on disk.
Result<void> prepare_trusted_dir(const std::string& dir, DirSharing sharing);

}  // namespace kjit::cache
