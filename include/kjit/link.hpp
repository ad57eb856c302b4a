// kjit::Link: device code from several parts linked by nvJitLink into one cubin: Programs
// compiled as relocatable device code (-rdc=true; -dlto too with lto()), so that a kernel in
// one calls an `extern __device__` function defined in another, and prebuilt device code
// (cubin, fatbin, PTX, LTO-IR, relocatable objects and static libraries). A program whose kernels
// launch kernels from the device gets the toolkit's device runtime, libcudadevrt.a, added unless
// the link has one (none found: LinkError naming where kjit looked). Runtime::link() makes it one
// cache entry like any compile; Runtime::load(Link) loads it. The key covers every part's
// content, the link options and nvJitLink's version (the toolkit's, whose libcudadevrt.a it is).
#pragma once

#include <kjit/export.hpp>

#include <kjit/program.hpp>

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kjit {

class KJIT_API Link {
public:
  // What a prebuilt part holds (nvJitLink's input types).
  enum class InputKind { cubin, ptx, ltoir, fatbin, object, library };

  struct Input {
    InputKind kind;
    std::string name;   // named in errors and nvJitLink's log
    std::string bytes;
  };

  // `name` names the linked result in errors, dumps and `kjit cache ls`.
  explicit Link(std::string name) : m_name(std::move(name)) {}

  // A program compiled for the link (with the options given to Runtime::link, plus -rdc=true,
  // and -dlto under lto()). Its name expressions name kernels of the linked result.
  Link& add(Program program) & {
    m_programs.push_back(std::move(program));
    return *this;
  }
  Link&& add(Program program) && { return std::move(add(std::move(program))); }
  // Prebuilt device code read from a file; the kind comes from the extension (.cubin, .ptx,
  // .ltoir, .fatbin, .o, .a). Throws IoError when it cannot be read, UsageError for another
  // extension.
  Link& add_file(const std::filesystem::path& file) &;
  Link&& add_file(const std::filesystem::path& file) && { return std::move(add_file(file)); }
  Link& add_data(InputKind kind, std::string name, std::string bytes) & {
    m_inputs.push_back(Input{kind, std::move(name), std::move(bytes)});
    return *this;
  }
  Link&& add_data(InputKind kind, std::string name, std::string bytes) && {
    return std::move(add_data(kind, std::move(name), std::move(bytes)));
  }
  // Link-time optimization: programs are compiled to LTO-IR (-dlto) and linked with -lto.
  Link& lto(bool on = true) & {
    m_lto = on;
    return *this;
  }
  Link&& lto(bool on = true) && { return std::move(lto(on)); }
  // A raw nvJitLink option ("-O3", "-maxrregcount=64", "-ftz=true", ...), part of the key.
  // -arch and -lto are set by kjit.
  Link& option(std::string nvjitlink_option) & {
    m_options.push_back(std::move(nvjitlink_option));
    return *this;
  }
  Link&& option(std::string nvjitlink_option) && { return std::move(option(std::move(nvjitlink_option))); }

  const std::string& name() const noexcept { return m_name; }
  const std::vector<Program>& programs() const noexcept { return m_programs; }
  const std::vector<Input>& inputs() const noexcept { return m_inputs; }
  bool lto() const noexcept { return m_lto; }
  const std::vector<std::string>& options() const noexcept { return m_options; }

private:
  std::string m_name;
  std::vector<Program> m_programs;
  std::vector<Input> m_inputs;
  std::vector<std::string> m_options;
  bool m_lto = false;
};

KJIT_API std::string_view to_string(Link::InputKind kind);
// The kind a file's extension names (".cubin" -> cubin, ".a" -> library, ...); throws UsageError
// for any other, listing the known ones.
KJIT_API Link::InputKind link_input_kind(const std::filesystem::path& file);
// nvJitLink's version as "13.0" (loads libnvJitLink). Throws LinkError when it cannot be loaded.
KJIT_API std::string nvjitlink_version();

}  // namespace kjit
