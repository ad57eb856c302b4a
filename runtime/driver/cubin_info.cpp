#include "runtime/driver/cubin_info.hpp"

#include <elf.h>

#include <cstdint>
#include <cstring>

namespace kjit::driver {
namespace {

constexpr std::uint8_t k_fmt_sized = 0x04;      // EIFMT_SVAL: a u16 size, then that many bytes
constexpr std::uint8_t k_attr_param_cbank = 0x0a;  // EIATTR_PARAM_CBANK
constexpr std::uint8_t k_attr_kparam_info = 0x17;  // EIATTR_KPARAM_INFO
constexpr std::uint8_t k_attr_cbank_param_size = 0x19;  // EIATTR_CBANK_PARAM_SIZE (fmt 3)
constexpr std::uint8_t k_attr_kparam_info_v2 = 0x45;  // EIATTR_KPARAM_INFO_V2 (large parameter lists)

template <class T>
bool read_at(std::string_view bytes, std::uint64_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

// The bytes of the section named `prefix` + `symbol`, or an empty view.
std::string_view find_section(std::string_view image, std::string_view prefix,
                                           std::string_view symbol) {
  Elf64_Ehdr eh;
  if (!read_at(image, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum) {
    return {};
  }
  auto section = [&](std::uint64_t i, Elf64_Shdr& sh) {
    return read_at(image, eh.e_shoff + i * sizeof(Elf64_Shdr), sh) && sh.sh_offset <= image.size() &&
           sh.sh_size <= image.size() - sh.sh_offset;
  };
  Elf64_Shdr strtab;
  if (!section(eh.e_shstrndx, strtab)) return {};
  std::string_view names = image.substr(strtab.sh_offset, strtab.sh_size);
  for (std::uint64_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!section(i, sh) || sh.sh_name >= names.size()) continue;
    std::string_view n = names.substr(sh.sh_name);
    const std::size_t size = prefix.size() + symbol.size();
    if (n.size() > size && n[size] == '\0' && n.substr(0, prefix.size()) == prefix &&
        n.substr(prefix.size(), symbol.size()) == symbol) {
      return image.substr(sh.sh_offset, sh.sh_size);
    }
  }
  return {};
}

}  // namespace

std::optional<std::vector<std::size_t>> cubin_param_sizes(std::string_view image, std::string_view symbol) {
  if (symbol.empty()) return std::nullopt;
  const std::string_view info = find_section(image, ".nv.info.", symbol);
  if (info.empty()) return std::nullopt;

  struct Param {
    std::uint32_t offset = 0, size = 0;
    bool seen = false;
  };
  std::vector<Param> params;
  std::optional<std::uint32_t> total_cbank, total_size;
  std::uint64_t pos = 0;
  while (pos < info.size()) {
    std::uint8_t fmt = 0, attr = 0;
    std::uint16_t value = 0;
    if (!read_at(info, pos, fmt) || !read_at(info, pos + 1, attr) || !read_at(info, pos + 2, value)) {
      return std::nullopt;
    }
    pos += 4;
    if (fmt < 1 || fmt > k_fmt_sized) return std::nullopt;  // a layout kjit does not know
    if (fmt != k_fmt_sized) {
      if (attr == k_attr_cbank_param_size && fmt == 0x03) total_size = value;
      continue;
    }
    const std::string_view body = info.substr(pos, value);
    if (body.size() != value) return std::nullopt;
    pos += value;
    if (attr == k_attr_kparam_info || attr == k_attr_kparam_info_v2) {
      std::uint16_t ordinal = 0, offset = 0;
      std::uint32_t word = 0;
      if (value != 12 || !read_at(body, 4, ordinal) || !read_at(body, 6, offset) || !read_at(body, 8, word)) {
        return std::nullopt;
      }
      if (ordinal >= params.size()) params.resize(ordinal + 1u);
      if (params[ordinal].seen) return std::nullopt;
      // V1 keeps the size in bits 18..31 beside flags; V2 (seen when the list passes 4 KB) in
      // the low 16 bits, with flags above (sm_120 marks pointers there).
      params[ordinal] = {offset, attr == k_attr_kparam_info ? word >> 18 : word & 0xffffu, true};
    } else if (attr == k_attr_param_cbank) {
      std::uint16_t size = 0;
      if (value != 8 || !read_at(body, 6, size)) return std::nullopt;
      total_cbank = size;
    }
  }
  // Cross-checks: one record per ordinal, no overlap past the stated total, the last parameter
  // ending at that total.
  const std::uint32_t total = total_cbank.value_or(total_size.value_or(0));
  if (total_cbank && total_size && *total_cbank != *total_size) return std::nullopt;
  std::vector<std::size_t> sizes;
  sizes.reserve(params.size());
  std::uint32_t end = 0;
  for (const Param& p : params) {
    if (!p.seen || p.size == 0 || p.offset < end || p.offset + p.size > total) return std::nullopt;
    end = p.offset + p.size;
    sizes.push_back(p.size);
  }
  if (end != total) return std::nullopt;
  return sizes;
}

}  // namespace kjit::driver
