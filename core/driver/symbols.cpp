#include "core/driver/symbols.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace kjit::driver {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// The position of the '(' that opens the declaration's last top-level parameter list.
std::optional<std::size_t> parameter_list_start(std::string_view d) {
  if (d.empty() || d.back() != ')') return std::nullopt;
  int depth = 0;
  for (std::size_t i = d.size(); i-- > 0;) {
    char c = d[i];
    if (c == ')' || c == '>' || c == ']') ++depth;
    if (c == '(' || c == '<' || c == '[') {
      if (--depth == 0) return c == '(' ? std::optional<std::size_t>(i) : std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string demangle(const std::string& symbol) {
  // Only a function's mangled name: __cxa_demangle also reads types, so that an extern "C"
  // kernel named "f" or "i" would come back as "float" or "int".
  if (symbol.rfind("_Z", 0) != 0) return symbol;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status),
                                                &std::free);
  return status == 0 && d ? std::string(d.get()) : symbol;
}

std::string plain_name(std::string_view declaration) {
  std::string_view head = declaration;
  if (auto open = parameter_list_start(declaration)) head = declaration.substr(0, *open);
  // A template's return type comes first ("void scale<float>"): the name is after the last
  // space outside template arguments.
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < head.size(); ++i) {
    if (head[i] == '<') ++depth;
    if (head[i] == '>') --depth;
    if (head[i] == ' ' && depth == 0) start = i + 1;
  }
  return std::string(trim(head.substr(start)));
}

std::optional<std::vector<std::string>> parameter_types(std::string_view declaration) {
  auto open = parameter_list_start(declaration);
  if (!open) return std::nullopt;
  std::string_view list = declaration.substr(*open + 1, declaration.size() - *open - 2);
  std::vector<std::string> out;
  if (trim(list).empty() || trim(list) == "void") return out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '<' || c == '(' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back(trim(list.substr(start, i - start)));
      start = i + 1;
    }
  }
  return out;
}

}  // namespace kjit::driver
