// kjit::test::TempDir: a fresh temporary directory per test case, removed afterwards.
#pragma once

#include <filesystem>
#include <string>

namespace kjit::test {

class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return m_path; }
  std::filesystem::path operator/(const std::string& name) const { return m_path / name; }

private:
  std::filesystem::path m_path;
};

// Whole-file helpers for tests (write_file creates missing parent folders).
std::string read_file(const std::filesystem::path& path);
void write_file(const std::filesystem::path& path, const std::string& content);

}  // namespace kjit::test
