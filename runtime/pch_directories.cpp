#include "runtime/pch_directories.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kjit::runtime {

PchDirectories::~PchDirectories() {
  std::error_code ec;
  if (!m_root.empty()) std::filesystem::remove_all(m_root, ec);
}

PchDirectories::Lease PchDirectories::acquire() {
  std::lock_guard lock(m_mutex);
  if (m_root.empty()) {
    std::error_code ec;
    auto tmp = std::filesystem::temp_directory_path(ec);
    if (ec) tmp = "/tmp";
    std::string pattern = (tmp / "kjit-pch-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
      throw IoError(fmt::format("creating a private folder for precompiled headers in {}: {}", tmp.string(),
                                std::strerror(errno)));
    }
    m_root = pattern;
  }
  std::size_t slot = 0;
  while (slot < m_busy.size() && m_busy[slot]) ++slot;
  if (slot == m_busy.size()) m_busy.push_back(false);
  auto dir = m_root / fmt::format("{}", slot);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    throw IoError(fmt::format("creating the precompiled-header folder {}: {}", dir.string(), ec.message()));
  }
  m_busy[slot] = true;
  return Lease(*this, slot, dir);
}

std::filesystem::path PchDirectories::root() const {
  std::lock_guard lock(m_mutex);
  return m_root;
}

void PchDirectories::release(std::size_t slot) {
  // NVRTC adds a PCH file (~100-200 MB for <cub/...>) whenever the options differ from every
  // file it has, so a slot keeps only its newest few.
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(m_root / fmt::format("{}", slot), ec)) {
    if (e.path().extension() == ".pch") files.emplace_back(e.last_write_time(ec), e.path());
  }
  if (files.size() > k_files_per_slot) {
    std::sort(files.begin(), files.end());
    for (std::size_t i = 0; i + k_files_per_slot < files.size(); ++i) std::filesystem::remove(files[i].second, ec);
  }
  std::lock_guard lock(m_mutex);
  m_busy[slot] = false;
}

}  // namespace kjit::runtime
