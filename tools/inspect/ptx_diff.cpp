// diff(): two builds of a program compared function by function: summary deltas and a
// unified diff of the normalized (or raw) PTX; DiffResult renders as text and JSON.
#include "core/spi/driver.hpp"
#include "tools/inspect/function_names.hpp"
#include "tools/inspect/inspect_json.hpp"
#include "tools/inspect/ptx_parser.hpp"
#include "tools/inspect/ptx_text.hpp"
#include "tools/inspect/unified_diff.hpp"

#include <kjit/tools/inspect.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kjit::inspect {

namespace {

std::vector<std::string> module_lines(const PtxModule& m) {
  std::vector<std::string> lines = m.directives;
  for (const PtxFunction& f : m.functions) {
    if (f.is_definition) continue;
    for (std::string& l : function_lines(f)) lines.push_back(std::move(l));
  }
  return lines;
}

std::vector<std::string> raw_lines(std::string_view text) {
  std::vector<std::string> lines;
  for (std::string_view l : text::split_lines(text)) {
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines.emplace_back(l);
  }
  return lines;
}

const PtxFunction* find_definition(const PtxModule& m, std::string_view name) {
  for (const PtxFunction& f : m.functions) {
    if (f.is_definition && f.name == name) return &f;
  }
  return nullptr;
}

DiffResult diff_modules(std::string_view a_ptx, std::string_view b_ptx, const std::vector<ResourceUsage>& usage_a,
                        const std::vector<ResourceUsage>& usage_b, const DiffOptions& options) {
  DiffResult result;
  result.a_label = options.a_label;
  result.b_label = options.b_label;
  PtxModule a = parse_ptx(a_ptx);
  PtxModule b = parse_ptx(b_ptx);
  if (options.raw) {
    result.module_unified = unified_diff(raw_lines(a_ptx), raw_lines(b_ptx), options.a_label, options.b_label, options.context);
  } else {
    a = normalized(a);
    b = normalized(b);
    result.module_unified = unified_diff(module_lines(a), module_lines(b), fmt::format("{} (module)", options.a_label),
                                         fmt::format("{} (module)", options.b_label), options.context);
  }
  auto summary = [](const PtxFunction& f, const std::vector<ResourceUsage>& usage) {
    KernelSummary s = summarize(f);
    s.resources = find_usage(usage, f.name);
    return s;
  };
  auto add = [&](const PtxFunction* fa, const PtxFunction* fb) {
    FunctionDiff fd;
    fd.name = fa ? fa->name : fb->name;
    fd.is_entry = fa ? fa->is_entry : fb->is_entry;
    fd.in_a = fa != nullptr;
    fd.in_b = fb != nullptr;
    if (fa) fd.a = summary(*fa, usage_a);
    if (fb) fd.b = summary(*fb, usage_b);
    fd.summary = compare(fd.a, fd.b, options.grouping);
    if (!options.raw) {
      fd.unified = unified_diff(fa ? function_lines(*fa) : std::vector<std::string>{},
                                fb ? function_lines(*fb) : std::vector<std::string>{},
                                fmt::format("{} ({})", driver::demangle(fd.name), options.a_label),
                                fmt::format("{} ({})", driver::demangle(fd.name), options.b_label), options.context);
    }
    result.functions.push_back(std::move(fd));
  };
  for (const PtxFunction& f : a.functions) {
    if (f.is_definition && find_definition(a, f.name) == &f) add(&f, find_definition(b, f.name));
  }
  for (const PtxFunction& f : b.functions) {
    if (f.is_definition && find_definition(b, f.name) == &f && !find_definition(a, f.name)) add(nullptr, &f);
  }
  return result;
}

struct Style {
  bool on;
  std::string paint(std::string_view code, std::string_view s) const {
    return on ? fmt::format("\x1b[{}m{}\x1b[0m", code, s) : std::string(s);
  }
};

std::string signed_number(long long v) { return v > 0 ? fmt::format("+{}", v) : fmt::format("{}", v); }

void render_deltas(std::string& out, const Style& style, std::string_view title, const std::vector<CountDelta>& rows) {
  if (rows.empty()) return;
  std::size_t width = title.size();
  for (const CountDelta& d : rows) width = std::max(width, d.key.size());
  out += fmt::format("  {:<{}}  {:>7}  {:>7}  {:>7}\n", title, width, "a", "b", "delta");
  for (const CountDelta& d : rows) {
    const std::string delta = signed_number(d.delta());
    out += fmt::format("  {:<{}}  {:>7}  {:>7}  {}\n", d.key, width, d.a, d.b,
                       style.paint(d.delta() > 0 ? "32" : "31", fmt::format("{:>7}", delta)));
  }
}

void render_unified(std::string& out, const Style& style, const std::string& unified) {
  for (std::string_view line : text::split_lines(unified)) {
    if (line.substr(0, 3) == "---" || line.substr(0, 3) == "+++") out += style.paint("1", line);
    else if (line.substr(0, 2) == "@@") out += style.paint("36", line);
    else if (!line.empty() && line.front() == '+') out += style.paint("32", line);
    else if (!line.empty() && line.front() == '-') out += style.paint("31", line);
    else out += line;
    out += '\n';
  }
}

nlohmann::json deltas_json(const std::vector<CountDelta>& rows) {
  nlohmann::json j = nlohmann::json::array();
  for (const CountDelta& d : rows) j.push_back({{"key", d.key}, {"a", d.a}, {"b", d.b}, {"delta", d.delta()}});
  return j;
}

}  // namespace

bool DiffResult::equal() const noexcept {
  if (functions.empty()) return false;  // nothing was compared
  if (!module_unified.empty()) return false;
  for (const FunctionDiff& f : functions) {
    if (!f.equal()) return false;
  }
  return true;
}

std::string DiffResult::to_text(Color color) const {
  const Style style{color == Color::always};
  std::string out;
  out += fmt::format("a: {}\nb: {}\n", a_label, b_label);
  std::size_t different = 0;
  std::vector<std::string> symbols;
  for (const FunctionDiff& f : functions) symbols.push_back(f.name);
  const std::vector<std::string> names = display_names(symbols);
  if (!module_unified.empty()) {
    out += style.paint("1", "== module: different") + "\n";
    render_unified(out, style, module_unified);
  }
  for (std::size_t i = 0; i < functions.size(); ++i) {
    const FunctionDiff& f = functions[i];
    const std::string kind = f.is_entry ? "kernel" : "device function";
    if (f.equal()) {
      out += fmt::format("== {} ({}): equal, {} instructions\n", names[i], kind, f.a.instruction_count());
      continue;
    }
    ++different;
    const std::string status = !f.in_a ? fmt::format("only in b") : !f.in_b ? fmt::format("only in a") : "different";
    out += style.paint("1", fmt::format("== {} ({}): {}", names[i], kind, status)) + "\n";
    out += fmt::format("  instructions  {} -> {} ({})\n", f.summary.instructions_a, f.summary.instructions_b,
                       signed_number(f.summary.instructions_b - f.summary.instructions_a));
    render_deltas(out, style, "opcode", f.summary.opcodes);
    render_deltas(out, style, "registers declared", f.summary.registers);
    render_deltas(out, style, "resources (ptxas)", f.summary.resources);
    render_unified(out, style, f.unified);
  }
  if (functions.empty()) {
    out += "nothing compared: neither build has a function (a template kernel is compiled only when a name "
           "expression instantiates it)\n";
  } else if (equal()) {
    out += fmt::format("equal: {} function(s), no difference after {}\n", functions.size(),
                       "normalization");
  } else {
    out += fmt::format("different: {} of {} function(s){}\n", different, functions.size(),
                       module_unified.empty() ? "" : ", module-level statements");
  }
  return out;
}

std::string DiffResult::to_json() const {
  nlohmann::json j;
  j["equal"] = equal();
  j["a"] = a_label;
  j["b"] = b_label;
  j["module_diff"] = module_unified;
  nlohmann::json fs = nlohmann::json::array();
  std::vector<std::string> symbols;
  for (const FunctionDiff& f : functions) symbols.push_back(f.name);
  const std::vector<std::string> names = display_names(symbols);
  for (std::size_t i = 0; i < functions.size(); ++i) {
    const FunctionDiff& f = functions[i];
    nlohmann::json o;
    o["name"] = names[i];
    o["symbol"] = f.name;
    o["entry"] = f.is_entry;
    o["status"] = f.equal() ? "equal" : !f.in_a ? "only_b" : !f.in_b ? "only_a" : "different";
    o["instructions"] = {{"a", f.summary.instructions_a}, {"b", f.summary.instructions_b}};
    o["opcodes"] = deltas_json(f.summary.opcodes);
    o["registers"] = deltas_json(f.summary.registers);
    o["resources"] = deltas_json(f.summary.resources);
    if (f.a.resources) o["resources_a"] = usage_json(*f.a.resources);
    if (f.b.resources) o["resources_b"] = usage_json(*f.b.resources);
    o["diff"] = f.unified;
    fs.push_back(std::move(o));
  }
  j["functions"] = std::move(fs);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

DiffResult diff(std::string_view a_ptx, std::string_view b_ptx, const DiffOptions& options) {
  return diff_modules(a_ptx, b_ptx, {}, {}, options);
}

DiffResult diff(const CompileResult& a, const CompileResult& b, const DiffOptions& options) {
  return diff_modules(a.ptx, b.ptx, usage_from_result(a), usage_from_result(b), options);
}

}  // namespace kjit::inspect
