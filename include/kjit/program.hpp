// kjit::Program: what to compile. A name (used in errors, dumps and the cache key), the CUDA
// source, in-memory headers reachable by #include "name", and name expressions (for example
// "scale<float>") that NVRTC instantiates and whose lowered (mangled) names the result keeps.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kjit {

class Program {
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

  const std::string& name() const noexcept { return m_name; }
  const std::string& source() const noexcept { return m_source; }
  const std::vector<std::pair<std::string, std::string>>& headers() const noexcept { return m_headers; }
  const std::vector<std::string>& name_expressions() const noexcept { return m_name_expressions; }

private:
  std::string m_name;
  std::string m_source;
  std::vector<std::pair<std::string, std::string>> m_headers;
  std::vector<std::string> m_name_expressions;
};

}  // namespace kjit
