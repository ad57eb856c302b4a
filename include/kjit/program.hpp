// kjit::Program: what to compile. A name (used in errors, dumps and the cache key), the CUDA
// source, in-memory headers reachable by #include "name", and name expressions (for example
// "scale<float>") that NVRTC instantiates and whose lowered (mangled) names the result keeps.
#pragma once

#include <kjit/export.hpp>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace kjit {

class KJIT_API Program {
public:
  Program(std::string name, std::string source) : m_name(std::move(name)), m_source(std::move(source)) {}

  Program& header(std::string name, std::string content) & {
    m_headers.emplace_back(std::move(name), std::move(content));
    return *this;
  }
  Program&& header(std::string name, std::string content) && { return std::move(header(std::move(name), std::move(content))); }
  Program& instantiate(std::string name_expression) & {
    m_name_expressions.push_back(std::move(name_expression));
    return *this;
  }
  Program&& instantiate(std::string name_expression) && { return std::move(instantiate(std::move(name_expression))); }

  // The folder of the file the source came from: quoted #includes resolve there first.
  Program& directory(std::filesystem::path dir) & {
    m_directory = std::move(dir);
    return *this;
  }
  Program&& directory(std::filesystem::path dir) && { return std::move(directory(std::move(dir))); }

  // Folders searched, in order, after directory() for #include (the source loader's manifest
  // include dirs and search roots). Like directory() they are not part of the cache key; the
  // content of every header found through them is.
  Program& include_path(std::vector<std::filesystem::path> dirs) & {
    m_include_path = std::move(dirs);
    return *this;
  }
  Program&& include_path(std::vector<std::filesystem::path> dirs) && { return std::move(include_path(std::move(dirs))); }

  const std::string& name() const noexcept { return m_name; }
  const std::filesystem::path& directory() const noexcept { return m_directory; }
  const std::vector<std::filesystem::path>& include_path() const noexcept { return m_include_path; }
  const std::string& source() const noexcept { return m_source; }
  const std::vector<std::pair<std::string, std::string>>& headers() const noexcept { return m_headers; }
  const std::vector<std::string>& name_expressions() const noexcept { return m_name_expressions; }

private:
  std::string m_name;
  std::string m_source;
  std::filesystem::path m_directory;
  std::vector<std::filesystem::path> m_include_path;
  std::vector<std::pair<std::string, std::string>> m_headers;
  std::vector<std::string> m_name_expressions;
};

// Reads a .cu file into a Program named by the path as given, with its folder as directory().
// Throws IoError when the file cannot be read.
KJIT_API Program read_program(const std::filesystem::path& file);

}  // namespace kjit
