// kjit::compile::PchDirectories: the folders NVRTC's precompiled headers go into, private to
// this process (a fresh temporary folder, removed with the object). NVRTC names PCH files after
// the program, so two compiles of one program name must not share a folder at the same time:
// each compile leases a slot folder of its own, and slots are reused (with their PCH files)
// by later compiles. At most as many slots as compiles ran at once, each keeping its newest
// k_files_per_slot PCH files (NVRTC uses a PCH only for the same command-line options, so
// variants that differ in defines each create their own). Throws IoError when the
// temporary folder cannot be made.
//
// PCH files are large (~170 MB for <cub/...>), so a folder must not outlive its process:
//  - the object removes its folder when destroyed;
//  - an object never destroyed (Runtime::global, a process ending through exit()) has its
//    folder removed by an atexit handler;
//  - a process killed outright cannot clean up, so each folder holds a `.lock` file flocked
//    for the object's life, and making a new folder first removes every kjit-pch-* folder in
//    the same base whose lock nobody holds (the kernel released it when its holder died). The
//    lock is taken before the file is renamed into the folder, so a folder being set up is
//    never mistaken for an abandoned one; a folder without a lock file is left alone unless it
//    is more than an hour old.
#pragma once

#include <filesystem>
#include <mutex>
#include <vector>

namespace kjit::compile {

class PchDirectories {
public:
  static constexpr std::size_t k_files_per_slot = 2;

  // `base`: where the private folder is made (default: the system's temporary folder).
  explicit PchDirectories(std::filesystem::path base = {}) : m_base(std::move(base)) {}
  ~PchDirectories();
  PchDirectories(const PchDirectories&) = delete;
  PchDirectories& operator=(const PchDirectories&) = delete;

  class Lease {
  public:
    Lease(PchDirectories& owner, std::size_t slot, std::filesystem::path dir)
        : m_owner(&owner), m_slot(slot), m_dir(std::move(dir)) {}
    ~Lease() {
      if (m_owner) m_owner->release(m_slot);
    }
    Lease(Lease&& other) noexcept : m_owner(other.m_owner), m_slot(other.m_slot), m_dir(std::move(other.m_dir)) {
      other.m_owner = nullptr;
    }
    Lease& operator=(Lease&&) = delete;
    const std::filesystem::path& dir() const { return m_dir; }

  private:
    PchDirectories* m_owner;
    std::size_t m_slot;
    std::filesystem::path m_dir;
  };

  // A slot folder no other compile uses until the lease ends.
  Lease acquire();
  // The private root folder (empty until the first acquire()).
  std::filesystem::path root() const;
  // Removes the kjit-pch-* folders in `base` whose owners are gone; returns how many.
  static std::size_t remove_abandoned(const std::filesystem::path& base);

private:
  void release(std::size_t slot);
  void make_root();

  mutable std::mutex m_mutex;
  std::filesystem::path m_base;
  std::filesystem::path m_root;
  int m_lock_fd = -1;
  int m_owner_pid = 0;  // the process that made m_root (a forked child leaves it alone)
  std::vector<bool> m_busy;
};

}  // namespace kjit::compile
