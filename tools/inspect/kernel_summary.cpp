// KernelSummary: instruction counts by opcode, register declarations and resources of one
// function, and compare() for the deltas between two of them.
#include "tools/inspect/ptx_parser.hpp"
#include "tools/inspect/ptx_text.hpp"

#include <kjit/tools/inspect.hpp>

#include <algorithm>
#include <set>

namespace kjit::inspect {

namespace {

// Removes leading labels ("$L__BB0_2:"), braces of nested blocks and guard predicates.
std::string_view strip_statement(std::string_view s) {
  while (true) {
    s = text::trim(s);
    if (s.empty()) return s;
    if (s.front() == '{' || s.front() == '}') {
      s.remove_prefix(1);
      continue;
    }
    const std::string_view ident = text::ident_at(s, 0);
    if (!ident.empty()) {
      std::size_t p = ident.size();
      while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n')) ++p;
      if (p < s.size() && s[p] == ':') {
        s.remove_prefix(p + 1);
        continue;
      }
    }
    if (s.front() == '@') {
      std::size_t p = 1;
      while (p < s.size() && s[p] != ' ' && s[p] != '\t' && s[p] != '\n') ++p;
      s.remove_prefix(p);
      continue;
    }
    return s;
  }
}

}  // namespace

std::string base_opcode(std::string_view opcode) {
  const std::size_t dot = opcode.find('.');
  return std::string(opcode.substr(0, dot));
}

int KernelSummary::instruction_count() const {
  int total = 0;
  for (const auto& [op, n] : opcodes) total += n;
  return total;
}

std::map<std::string, int> KernelSummary::base_opcodes() const {
  std::map<std::string, int> grouped;
  for (const auto& [op, n] : opcodes) grouped[base_opcode(op)] += n;
  return grouped;
}

int KernelSummary::count(std::string_view opcode) const {
  const auto it = opcodes.find(std::string(opcode));
  return it == opcodes.end() ? 0 : it->second;
}

int KernelSummary::count_prefix(std::string_view prefix) const {
  int total = 0;
  for (const auto& [op, n] : opcodes) {
    if (std::string_view(op).substr(0, prefix.size()) == prefix) total += n;
  }
  return total;
}

KernelSummary summarize(const PtxFunction& function) {
  KernelSummary s;
  s.name = function.name;
  s.is_entry = function.is_entry;
  s.registers = function.registers;
  std::string body;
  for (const std::string& line : function.body) {
    body += line;
    body += '\n';
  }
  std::size_t start = 0;
  while (start < body.size()) {
    std::size_t end = body.find(';', start);
    if (end == std::string::npos) end = body.size();
    const std::string_view statement = strip_statement(std::string_view(body).substr(start, end - start));
    start = end + 1;
    if (statement.empty() || statement.front() == '.') continue;  // directive or declaration
    std::size_t op_end = 0;
    while (op_end < statement.size() && statement[op_end] != ' ' && statement[op_end] != '\t' &&
           statement[op_end] != '\n' && statement[op_end] != '(' && statement[op_end] != ',') {
      ++op_end;
    }
    if (op_end == 0) continue;
    ++s.opcodes[std::string(statement.substr(0, op_end))];
  }
  return s;
}

std::vector<KernelSummary> summarize(std::string_view ptx, std::string_view ptxas_log) {
  const PtxModule module = parse_ptx(ptx);
  const std::vector<ResourceUsage> usage = parse_ptxas_log(ptxas_log);
  std::vector<KernelSummary> summaries;
  for (const PtxFunction& f : module.functions) {
    if (!f.is_definition) continue;
    KernelSummary s = summarize(f);
    s.resources = find_usage(usage, f.name);
    summaries.push_back(std::move(s));
  }
  return summaries;
}

const CountDelta* SummaryDelta::find_opcode(std::string_view key) const {
  for (const CountDelta& d : opcodes) {
    if (d.key == key) return &d;
  }
  return nullptr;
}

namespace {

template <class Map>
std::vector<CountDelta> deltas(const Map& a, const Map& b) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);
  std::vector<CountDelta> out;
  for (const std::string& k : keys) {
    const auto ia = a.find(k);
    const auto ib = b.find(k);
    const long long va = ia == a.end() ? 0 : static_cast<long long>(ia->second);
    const long long vb = ib == b.end() ? 0 : static_cast<long long>(ib->second);
    if (va != vb) out.push_back(CountDelta{k, va, vb});
  }
  return out;
}

std::map<std::string, long long> register_counts(const std::vector<RegisterDecl>& regs) {
  std::map<std::string, long long> counts;
  for (const RegisterDecl& r : regs) {
    const std::string key = r.type.empty() ? r.name : r.name + " " + r.type;
    counts[key] += r.parameterized ? r.count : 1;
  }
  return counts;
}

std::map<std::string, long long> resource_counts(const ResourceUsage& u) {
  auto clamp = [](std::uint64_t v) { return static_cast<long long>(std::min<std::uint64_t>(v, INT64_MAX)); };
  std::map<std::string, long long> counts{{"registers", u.registers},
                                          {"barriers", u.barriers},
                                          {"stack_frame", clamp(u.stack_frame)},
                                          {"spill_stores", clamp(u.spill_stores)},
                                          {"spill_loads", clamp(u.spill_loads)},
                                          {"cumulative_stack", clamp(u.cumulative_stack)},
                                          {"shared", clamp(u.shared)}};
  // What is known (ptxas's report, the cubin) only.
  if (u.constant) counts["constant"] = clamp(*u.constant);
  if (u.local) counts["local"] = clamp(*u.local);
  if (u.max_threads_per_block) counts["max_threads_per_block"] = *u.max_threads_per_block;
  return counts;
}

}  // namespace

SummaryDelta compare(const KernelSummary& a, const KernelSummary& b, Grouping grouping) {
  SummaryDelta d;
  d.instructions_a = a.instruction_count();
  d.instructions_b = b.instruction_count();
  d.opcodes = grouping == Grouping::opcode ? deltas(a.opcodes, b.opcodes) : deltas(a.base_opcodes(), b.base_opcodes());
  d.registers = deltas(register_counts(a.registers), register_counts(b.registers));
  if (a.resources && b.resources) d.resources = deltas(resource_counts(*a.resources), resource_counts(*b.resources));
  // Biggest changes first, then by name.
  auto order = [](const CountDelta& x, const CountDelta& y) {
    const long long ax = x.delta() < 0 ? -x.delta() : x.delta();
    const long long ay = y.delta() < 0 ? -y.delta() : y.delta();
    return ax != ay ? ax > ay : x.key < y.key;
  };
  std::stable_sort(d.opcodes.begin(), d.opcodes.end(), order);
  return d;
}

}  // namespace kjit::inspect
