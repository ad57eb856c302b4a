// ptxas verbose output (-Xptxas=-v) -> ResourceUsage per function, and the table/JSON views.
#include "tools/inspect/function_names.hpp"
#include "tools/inspect/inspect_json.hpp"
#include "tools/inspect/ptx_text.hpp"

#include <kjit/error.hpp>
#include <kjit/tools/inspect.hpp>

#include "core/spi/compile.hpp"
#include "core/spi/driver.hpp"
#include <kjit/module.hpp>
#include <kjit/device.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>

namespace kjit::inspect {

namespace {

// The first unsigned number in `s` (saturating), or nullopt.
std::optional<std::uint64_t> first_number(std::string_view s, std::size_t* where = nullptr) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!text::is_digit(s[i])) continue;
    if (i > 0 && (text::is_ident_char(s[i - 1]) || s[i - 1] == '[' || s[i - 1] == '.')) continue;
    std::uint64_t value = 0;
    std::size_t j = i;
    while (j < s.size() && text::is_digit(s[j])) {
      value = value > (UINT64_MAX - 9) / 10 ? UINT64_MAX : value * 10 + static_cast<std::uint64_t>(s[j] - '0');
      ++j;
    }
    if (where) *where = i;
    return value;
  }
  return std::nullopt;
}

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

int to_int(std::uint64_t v) { return v > 1000000000 ? 1000000000 : static_cast<int>(v); }

// Applies one comma-separated item ("Used 8 registers", "384 bytes smem") to `u`.
void apply_item(std::string_view item, ResourceUsage& u) {
  const auto number = first_number(item);
  if (!number) return;
  const std::uint64_t n = *number;
  if (contains(item, "spill stores")) u.spill_stores = n;
  else if (contains(item, "spill loads")) u.spill_loads = n;
  else if (contains(item, "stack frame")) u.stack_frame = n;
  else if (contains(item, "cumulative stack")) u.cumulative_stack = n;
  else if (contains(item, "registers")) u.registers = to_int(n);
  else if (contains(item, "barriers")) u.barriers = to_int(n);
  else if (contains(item, "smem")) u.shared = n;
  else if (contains(item, "cmem")) u.constant = u.constant.value_or(0) + n < n ? UINT64_MAX : u.constant.value_or(0) + n;
  else if (contains(item, "lmem")) u.local = n;
}

std::string quoted_after(std::string_view line, std::string_view marker, std::size_t from = 0) {
  const std::size_t at = line.find(marker, from);
  if (at == std::string_view::npos) return {};
  const std::size_t start = at + marker.size();
  const std::size_t end = line.find('\'', start);
  return std::string(line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
}

}  // namespace

std::vector<ResourceUsage> parse_ptxas_log(std::string_view log) {
  std::vector<ResourceUsage> usage;
  std::optional<std::size_t> current;
  auto get = [&](const std::string& name) -> std::size_t {
    for (std::size_t i = 0; i < usage.size(); ++i) {
      if (usage[i].function == name) return i;
    }
    usage.push_back(ResourceUsage{.function = name, .name = name});
    return usage.size() - 1;
  };
  for (std::string_view line : text::split_lines(log)) {
    line = text::trim(line);
    if (line.empty()) continue;
    if (const std::size_t at = line.find("Compiling entry function '"); at != std::string_view::npos) {
      const std::string name = quoted_after(line, "Compiling entry function '");
      if (name.empty()) continue;
      current = get(name);
      usage[*current].is_entry = true;
      const std::string arch = quoted_after(line, " for '", at);
      if (!arch.empty()) usage[*current].arch = arch;
      continue;
    }
    if (const std::size_t at = line.find("Function properties for "); at != std::string_view::npos) {
      const std::string name(text::trim(line.substr(at + 24)));
      if (name.empty()) continue;
      current = get(name);
      continue;
    }
    if (!current) continue;
    const bool properties = contains(line, "bytes stack frame") || contains(line, "spill stores");
    const bool used = contains(line, "Used ") && contains(line, "registers");
    if (!properties && !used) continue;
    // Drop the "ptxas info    :" / "ptxas         ." prefix.
    if (line.substr(0, 5) == "ptxas") {
      std::size_t p = 5;
      while (p < line.size() && !text::is_digit(line[p]) && line[p] != 'U') ++p;
      line = line.substr(p);
    }
    std::size_t start = 0;
    while (start <= line.size()) {
      std::size_t comma = line.find(',', start);
      if (comma == std::string_view::npos) comma = line.size();
      apply_item(line.substr(start, comma - start), usage[*current]);
      start = comma + 1;
    }
  }
  std::vector<std::string> symbols;
  for (const ResourceUsage& u : usage) symbols.push_back(u.function);
  const std::vector<std::string> names = display_names(symbols);
  for (std::size_t i = 0; i < usage.size(); ++i) usage[i].name = names[i];
  return usage;
}

std::optional<ResourceUsage> find_usage(const std::vector<ResourceUsage>& usage, std::string_view function) {
  for (const ResourceUsage& u : usage) {
    if (u.function == function) return u;
  }
  for (const ResourceUsage& u : usage) {
    if (u.name == function) return u;
  }
  return std::nullopt;
}

namespace {

// The most threads a block of a kernel with `registers` registers per thread can have on `arch`:
// registers are given to warps in units of 256, from 64K a block (32K on sm_53 and sm_62), and a
// block has at most 1024 threads (every arch NVRTC 12 and 13 compile for).
int threads_by_registers(int registers, int arch) {
  const int per_block = arch == 53 || arch == 62 ? 32768 : 65536;
  const int per_warp = (std::max(registers, 1) * 32 + 255) / 256 * 256;
  return std::min(1024, per_block / per_warp * 32);
}

}  // namespace

std::vector<ResourceUsage> usage_from_result(const CompileResult& result) {
  std::vector<ResourceUsage> usage = parse_ptxas_log(result.log);
  if (!result.has_cubin() || !result.arch.is_real()) return usage;
  for (ResourceUsage& u : usage) {
    const auto cubin = driver::cubin_function_resources(result.cubin, u.function);
    if (!cubin) continue;  // a device function ptxas inlined or merged: the cubin has no records of it
    if (cubin->local) u.local = cubin->local;
    u.constant = cubin->constant;
    if (!u.is_entry) continue;
    int limit = threads_by_registers(u.registers > 0 ? u.registers : cubin->registers.value_or(0), result.arch.number());
    for (const auto& bound : {cubin->max_ntid, cubin->req_ntid}) {
      if (!bound) continue;
      const std::uint64_t threads = std::uint64_t{(*bound)[0]} * (*bound)[1] * (*bound)[2];
      if (threads > 0) limit = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(limit), threads));
    }
    u.max_threads_per_block = limit;
  }
  return usage;
}

CompileOptions with_resource_report(CompileOptions options) {
  const bool already = std::any_of(options.flags.begin(), options.flags.end(), [](const std::string& f) {
    return f == "-Xptxas=-v" || f == "--ptxas-options=-v" || f == "-Xptxas=--verbose" || f == "--ptxas-options=--verbose";
  });
  if (!already && !kjit::normalized(options).arch.is_virtual()) options.flags.push_back("-Xptxas=-v");
  return options;
}

std::vector<ResourceUsage> resource_usage(const CompileResult& result) {
  if (result.arch.is_virtual()) {
    throw UsageError(fmt::format("computing resource usage of {}: arch {} is virtual (PTX only); ptxas runs "
                                 "only for a real arch such as sm_90",
                                 result.program_name, result.arch.str()));
  }
  std::vector<ResourceUsage> usage = usage_from_result(result);
  if (usage.empty() && result.has_cubin()) {
    // Compiled without ptxas's report (-Xptxas=-v): the cubin alone does not say what spilled.
    // Functions there are, and none reported, is a result that cannot answer: say how to ask.
    const PtxModule module = parse_ptx(result.ptx);
    const bool has_functions = std::any_of(module.functions.begin(), module.functions.end(),
                                           [](const PtxFunction& f) { return f.is_definition; });
    if (has_functions) {
      throw UsageError(fmt::format(
          "computing resource usage of {}: it was compiled without ptxas's report (-Xptxas=-v), and the cubin "
          "alone does not say what spills; compile it with the report (C++: inspect::with_resource_report(options); "
          "kjit resources FILE.cu)",
          result.program_name));
    }
  }
  // With a GPU of the compiled arch, the driver's function attributes complete (and confirm)
  // what ptxas said: max threads per block is known only there.
  if (device_count() > 0 && result.arch.is_real() && result.has_cubin()) {
    Device device = Device::current();
    if (device.compute_capability() == result.arch.number()) {
      Module module = driver::ModuleAccess::load(result, device);
      for (ResourceUsage& u : usage) {
        if (!u.is_entry || !module.has_kernel(u.function)) continue;
        KernelAttributes a = module.attributes(u.function);
        u.max_threads_per_block = a.max_threads_per_block;
      }
    }
  }
  return usage;
}

std::string resources_table(const std::vector<ResourceUsage>& usage) {
  std::size_t width = 8;
  for (const ResourceUsage& u : usage) width = std::max(width, u.name.empty() ? u.function.size() : u.name.size());
  auto known = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string("-"); };
  std::string out = fmt::format("{:<{}}  {:>7}  {:>4}  {:>8}  {:>8}  {:>6}  {:>8}  {:>6}  {:>6}  {:>6}  {:>7}\n",
                                "function", width, "arch", "regs", "spill-st", "spill-ld", "stack", "cum-stk", "smem",
                                "cmem", "lmem", "max-thr");
  for (const ResourceUsage& u : usage) {
    out += fmt::format("{:<{}}  {:>7}  {:>4}  {:>8}  {:>8}  {:>6}  {:>8}  {:>6}  {:>6}  {:>6}  {:>7}{}\n",
                       u.name.empty() ? u.function : u.name, width, u.arch.empty() ? "-" : u.arch, u.registers,
                       u.spill_stores, u.spill_loads, u.stack_frame, u.cumulative_stack, u.shared, known(u.constant),
                       known(u.local), known(u.max_threads_per_block), u.is_entry ? "" : "  (device function)");
  }
  return out;
}

nlohmann::json usage_json(const ResourceUsage& u) {
  nlohmann::json j{{"function", u.name.empty() ? u.function : u.name}, {"symbol", u.function}, {"arch", u.arch},
                   {"entry", u.is_entry},            {"registers", u.registers},
                   {"barriers", u.barriers},         {"stack_frame", u.stack_frame},
                   {"spill_stores", u.spill_stores}, {"spill_loads", u.spill_loads},
                   {"cumulative_stack", u.cumulative_stack}, {"shared", u.shared},
                   {"constant", nullptr}, {"local", nullptr}, {"max_threads_per_block", nullptr}};
  if (u.constant) j["constant"] = *u.constant;
  if (u.local) j["local"] = *u.local;
  if (u.max_threads_per_block) j["max_threads_per_block"] = *u.max_threads_per_block;
  return j;
}

std::string resources_json(const std::vector<ResourceUsage>& usage) {
  nlohmann::json j = nlohmann::json::array();
  for (const ResourceUsage& u : usage) j.push_back(usage_json(u));
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kjit::inspect
