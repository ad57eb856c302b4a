#include "core/driver/cubin_info.hpp"

#include <elf.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace kjit::driver {
namespace {

constexpr std::uint8_t k_fmt_sized = 0x04;      // EIFMT_SVAL: a u16 size, then that many bytes
constexpr std::uint8_t k_attr_param_cbank = 0x0a;  // EIATTR_PARAM_CBANK
constexpr std::uint8_t k_attr_kparam_info = 0x17;  // EIATTR_KPARAM_INFO
constexpr std::uint8_t k_attr_cbank_param_size = 0x19;  // EIATTR_CBANK_PARAM_SIZE (fmt 3)
constexpr std::uint8_t k_attr_kparam_info_v2 = 0x45;  // EIATTR_KPARAM_INFO_V2 (large parameter lists)
constexpr std::uint8_t k_attr_max_threads = 0x05;     // EIATTR_MAX_THREADS (.maxntid)
constexpr std::uint8_t k_attr_reqntid = 0x10;         // EIATTR_REQNTID (.reqntid)
constexpr std::uint8_t k_attr_frame_size = 0x11;      // EIATTR_FRAME_SIZE (in .nv.info)
constexpr std::uint8_t k_attr_min_stack_size = 0x12;  // EIATTR_MIN_STACK_SIZE (in .nv.info)
constexpr std::uint8_t k_attr_regcount = 0x2f;        // EIATTR_REGCOUNT (in .nv.info)

template <class T>
bool read_at(std::string_view bytes, std::uint64_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

// Calls `visit(name, header)` for every section of an ELF64 little-endian image whose header and
// bytes lie inside the image; false when `image` is not such a file. `visit` returns false to stop.
template <class Visit>
bool for_each_section(std::string_view image, Visit visit) {
  Elf64_Ehdr eh;
  if (!read_at(image, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
      eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum) {
    return false;
  }
  auto section = [&](std::uint64_t i, Elf64_Shdr& sh) {
    return read_at(image, eh.e_shoff + i * sizeof(Elf64_Shdr), sh) && sh.sh_offset <= image.size() &&
           sh.sh_size <= image.size() - sh.sh_offset;
  };
  Elf64_Shdr strtab;
  if (!section(eh.e_shstrndx, strtab)) return false;
  std::string_view names = image.substr(strtab.sh_offset, strtab.sh_size);
  for (std::uint64_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!section(i, sh) || sh.sh_name >= names.size()) continue;
    std::string_view n = names.substr(sh.sh_name);
    n = n.substr(0, n.find('\0'));
    if (!visit(n, sh)) break;
  }
  return true;
}

// The bytes of the section named `prefix` + `symbol`, or an empty view.
std::string_view find_section(std::string_view image, std::string_view prefix, std::string_view symbol) {
  std::string_view found;
  for_each_section(image, [&](std::string_view n, const Elf64_Shdr& sh) {
    if (n.size() != prefix.size() + symbol.size() || !n.starts_with(prefix) || !n.ends_with(symbol)) return true;
    found = image.substr(sh.sh_offset, sh.sh_size);
    return false;
  });
  return found;
}

// One attribute record of a .nv.info section.
struct Record {
  std::uint8_t fmt = 0, attr = 0;
  std::uint16_t value = 0;  // fmt 1-3: the value; fmt 4: the size of `body`
  std::string_view body;
};

// Calls `visit(record)` for each record of `info`; false when a record does not parse.
template <class Visit>
bool for_each_record(std::string_view info, Visit visit) {
  std::uint64_t pos = 0;
  while (pos < info.size()) {
    Record r;
    if (!read_at(info, pos, r.fmt) || !read_at(info, pos + 1, r.attr) || !read_at(info, pos + 2, r.value)) return false;
    pos += 4;
    if (r.fmt < 1 || r.fmt > k_fmt_sized) return false;  // a layout kjit does not know
    if (r.fmt == k_fmt_sized) {
      r.body = info.substr(pos, r.value);
      if (r.body.size() != r.value) return false;
      pos += r.value;
    }
    visit(r);
  }
  return true;
}

// The index of `symbol` in the symbol table that section header `symtab` describes, or nullopt.
std::optional<std::uint32_t> symbol_index(std::string_view image, std::string_view symbol, std::uint32_t symtab_index) {
  std::optional<std::uint32_t> found;
  std::optional<Elf64_Shdr> symtab, strtab;
  std::uint32_t i = 0;
  std::uint32_t strtab_index = 0;
  for_each_section(image, [&](std::string_view, const Elf64_Shdr& sh) {
    if (i == symtab_index && sh.sh_type == SHT_SYMTAB) {
      symtab = sh;
      strtab_index = sh.sh_link;
    }
    ++i;
    return true;
  });
  if (!symtab) return std::nullopt;
  i = 0;
  for_each_section(image, [&](std::string_view, const Elf64_Shdr& sh) {
    if (i++ == strtab_index) strtab = sh;
    return true;
  });
  if (!strtab) return std::nullopt;
  const std::string_view strings = image.substr(strtab->sh_offset, strtab->sh_size);
  const std::string_view symbols = image.substr(symtab->sh_offset, symtab->sh_size);
  for (std::uint64_t k = 0; k + sizeof(Elf64_Sym) <= symbols.size(); k += sizeof(Elf64_Sym)) {
    Elf64_Sym sym;
    if (!read_at(symbols, k, sym) || sym.st_name >= strings.size()) continue;
    std::string_view n = strings.substr(sym.st_name);
    if (n.substr(0, n.find('\0')) == symbol) {
      found = static_cast<std::uint32_t>(k / sizeof(Elf64_Sym));
      break;
    }
  }
  return found;
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
  bool consistent = true;
  const bool parsed = for_each_record(info, [&](const Record& r) {
    if (r.fmt != k_fmt_sized) {
      if (r.attr == k_attr_cbank_param_size && r.fmt == 0x03) total_size = r.value;
      return;
    }
    if (r.attr == k_attr_kparam_info || r.attr == k_attr_kparam_info_v2) {
      std::uint16_t ordinal = 0, offset = 0;
      std::uint32_t word = 0;
      if (r.value != 12 || !read_at(r.body, 4, ordinal) || !read_at(r.body, 6, offset) || !read_at(r.body, 8, word)) {
        consistent = false;
        return;
      }
      if (ordinal >= params.size()) params.resize(ordinal + 1u);
      if (params[ordinal].seen) consistent = false;
      // V1 keeps the size in bits 18..31 beside flags; V2 (seen when the list passes 4 KB) in
      // the low 16 bits, with flags above (sm_120 marks pointers there).
      params[ordinal] = {offset, r.attr == k_attr_kparam_info ? word >> 18 : word & 0xffffu, true};
    } else if (r.attr == k_attr_param_cbank) {
      std::uint16_t size = 0;
      if (r.value != 8 || !read_at(r.body, 6, size)) consistent = false;
      total_cbank = size;
    }
  });
  if (!parsed || !consistent) return std::nullopt;
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

std::optional<CubinFunctionResources> cubin_function_resources(std::string_view image, std::string_view symbol) {
  if (symbol.empty()) return std::nullopt;
  const std::string_view own = find_section(image, ".nv.info.", symbol);
  if (own.empty()) return std::nullopt;
  CubinFunctionResources out;
  bool consistent = true;
  auto dims = [&](const Record& r) {
    std::array<std::uint32_t, 3> d{};
    if (r.value != 12 || !read_at(r.body, 0, d[0]) || !read_at(r.body, 4, d[1]) || !read_at(r.body, 8, d[2])) {
      consistent = false;
    }
    return d;
  };
  const bool parsed = for_each_record(own, [&](const Record& r) {
    if (r.fmt != k_fmt_sized) return;
    if (r.attr == k_attr_max_threads) out.max_ntid = dims(r);
    if (r.attr == k_attr_reqntid) out.req_ntid = dims(r);
  });
  if (!parsed || !consistent) return std::nullopt;

  // The module's .nv.info: records naming the function by its symbol's index; and the
  // function's constant banks.
  std::optional<std::uint64_t> frame, min_stack;
  bool module_ok = true;
  for_each_section(image, [&](std::string_view n, const Elf64_Shdr& sh) {
    if (n.starts_with(".nv.constant") && n.ends_with(symbol) && n.size() > 13 + symbol.size() &&
        n[n.size() - symbol.size() - 1] == '.') {
      const std::string_view bank = n.substr(12, n.size() - symbol.size() - 13);
      if (!bank.empty() && std::all_of(bank.begin(), bank.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        out.constant += sh.sh_size;
      }
    }
    if (n != ".nv.info") return true;
    const auto index = symbol_index(image, symbol, sh.sh_link);
    if (!index) return true;
    module_ok = for_each_record(image.substr(sh.sh_offset, sh.sh_size), [&](const Record& r) {
      std::uint32_t sym = 0, value = 0;
      if (r.fmt != k_fmt_sized || r.value != 8 || !read_at(r.body, 0, sym) || !read_at(r.body, 4, value) ||
          sym != *index) {
        return;
      }
      if (r.attr == k_attr_regcount) out.registers = static_cast<int>(value);
      if (r.attr == k_attr_frame_size) frame = value;
      if (r.attr == k_attr_min_stack_size) min_stack = value;
    });
    return true;
  });
  if (!module_ok) return std::nullopt;
  out.local = min_stack ? min_stack : frame;
  return out;
}

}  // namespace kjit::driver
