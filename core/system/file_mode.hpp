// How kjit creates a file: the mode passed to open(O_CREAT), and whether it is then set exactly
// with fchmod (a team cache's files: 0660 whatever the umask; core/cache/dir_trust decides).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

namespace kjit::system {

struct FileMode {
  mode_t mode = 0666;
  bool exact = false;
};

}  // namespace kjit::system
