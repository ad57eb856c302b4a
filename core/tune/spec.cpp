#include "core/tune/spec.hpp"

#include <kjit/error.hpp>
#include <kjit/float16.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace kjit::tune {
namespace {

struct TypeName {
  const char* name;
  ArgumentType::Scalar scalar;
  std::size_t size;
};
constexpr TypeName k_types[] = {
    {"float", ArgumentType::Scalar::f32, 4},          {"double", ArgumentType::Scalar::f64, 8},
    {"__half", ArgumentType::Scalar::f16, 2},         {"half", ArgumentType::Scalar::f16, 2},
    {"__nv_bfloat16", ArgumentType::Scalar::bf16, 2}, {"bfloat16", ArgumentType::Scalar::bf16, 2},
    {"char", ArgumentType::Scalar::i8, 1},            {"signed char", ArgumentType::Scalar::i8, 1},
    {"int8_t", ArgumentType::Scalar::i8, 1},          {"unsigned char", ArgumentType::Scalar::u8, 1},
    {"uint8_t", ArgumentType::Scalar::u8, 1},         {"bool", ArgumentType::Scalar::u8, 1},
    {"short", ArgumentType::Scalar::i16, 2},          {"int16_t", ArgumentType::Scalar::i16, 2},
    {"unsigned short", ArgumentType::Scalar::u16, 2}, {"uint16_t", ArgumentType::Scalar::u16, 2},
    {"int", ArgumentType::Scalar::i32, 4},            {"int32_t", ArgumentType::Scalar::i32, 4},
    {"unsigned", ArgumentType::Scalar::u32, 4},       {"unsigned int", ArgumentType::Scalar::u32, 4},
    {"uint32_t", ArgumentType::Scalar::u32, 4},       {"long long", ArgumentType::Scalar::i64, 8},
    {"int64_t", ArgumentType::Scalar::i64, 8},        {"unsigned long long", ArgumentType::Scalar::u64, 8},
    {"uint64_t", ArgumentType::Scalar::u64, 8},       {"size_t", ArgumentType::Scalar::u64, 8},
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::optional<double> number(std::string_view s) {
  s = trim(s);
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

template <class T>
void put(unsigned char* at, T v) {
  std::memcpy(at, &v, sizeof(T));
}

}  // namespace

void store_element(const ArgumentType& type, unsigned char* at, double v, long long i) {
  using S = ArgumentType::Scalar;
  switch (type.scalar) {
  case S::f32: put(at, static_cast<float>(v)); break;
  case S::f64: put(at, v); break;
  case S::f16: put(at, half(static_cast<float>(v)).bits); break;
  case S::bf16: put(at, bfloat16(static_cast<float>(v)).bits); break;
  case S::i8: put(at, static_cast<std::int8_t>(i)); break;
  case S::u8: put(at, static_cast<std::uint8_t>(i)); break;
  case S::i16: put(at, static_cast<std::int16_t>(i)); break;
  case S::u16: put(at, static_cast<std::uint16_t>(i)); break;
  case S::i32: put(at, static_cast<std::int32_t>(i)); break;
  case S::u32: put(at, static_cast<std::uint32_t>(i)); break;
  case S::i64: put(at, static_cast<std::int64_t>(i)); break;
  case S::u64: put(at, static_cast<std::uint64_t>(i)); break;
  }
}

ArgumentType parse_argument_type(std::string_view text) {
  std::string_view t = trim(text);
  ArgumentType a;
  if (t.starts_with("const ")) t = trim(t.substr(6));
  if (t.ends_with("const") && t.size() > 5 && (t[t.size() - 6] == ' ' || t[t.size() - 6] == '*')) {
    t = trim(t.substr(0, t.size() - 5));  // "float* const": the pointer itself is const
  }
  if (t.ends_with("*")) {
    a.pointer = true;
    t = trim(t.substr(0, t.size() - 1));
    if (t.ends_with(" const")) t = trim(t.substr(0, t.size() - 6));  // "float const*"
  }
  if (t.starts_with("std::")) t = t.substr(5);
  for (const auto& k : k_types) {
    if (t == k.name) {
      a.scalar = k.scalar;
      a.element_size = k.size;
      return a;
    }
  }
  std::vector<std::string_view> known;
  for (const auto& k : k_types) known.push_back(k.name);
  throw UsageError(fmt::format("argument type \"{}\": not one kjit can make up; known: {} (and a pointer to one, "
                               "\"const float*\")",
                               text, fmt::join(known, ", ")));
}

CompiledSpec::CompiledSpec(TuneSpec spec) : m_spec(std::move(spec)) {
  const std::string& name = m_spec.name;
  auto fail = [&](const std::string& what) { throw UsageError(fmt::format("tuning \"{}\": {}", name, what)); };
  if (m_spec.candidates.empty()) fail("no candidates");
  for (std::size_t i = 0; i < m_spec.candidates.size(); ++i) {
    if (m_spec.candidates[i].kernel.empty()) fail(fmt::format("candidates[{}]: no kernel", i));
  }
  // Every variable an expression uses must be a shape variable, a candidate's field (grid only)
  // or sm_count; shape variables are those of the key and of the listed shapes.
  std::vector<std::string> shape_vars;
  for (const auto& k : m_spec.key) {
    const Expression e = Expression::parse(k);
    const auto& v = e.variables();
    const std::string plain = std::string(trim(k));
    if (v.size() == 1 && plain == v[0]) {
      m_key.push_back({v[0], false});
    } else if (v.size() == 1 && plain == fmt::format("pow2({})", v[0])) {
      m_key.push_back({v[0], true});
    } else {
      fail(fmt::format("key \"{}\": expected a shape variable (\"n\") or its bucket (\"pow2(n)\")", k));
    }
    shape_vars.push_back(v[0]);
  }
  for (std::size_t s = 0; s < m_spec.shapes.size(); ++s) {
    for (const auto& [var, value] : m_spec.shapes[s]) {
      if (std::find(shape_vars.begin(), shape_vars.end(), var) == shape_vars.end()) shape_vars.push_back(var);
    }
  }
  auto check_variables = [&](const Expression& e, bool candidate_fields, const std::string& where) {
    for (const auto& v : e.variables()) {
      const bool field = std::find_if(std::begin(k_candidate_variables), std::end(k_candidate_variables),
                                      [&](const char* f) { return v == f; }) != std::end(k_candidate_variables);
      if (v == k_device_variable) {
        m_uses_sm_count = true;
      } else if (field && !candidate_fields) {
        fail(fmt::format("{} \"{}\": \"{}\" is a candidate's field, known only in the grid", where, e.text(), v));
      } else if (!field && std::find(shape_vars.begin(), shape_vars.end(), v) == shape_vars.end()) {
        fail(fmt::format("{} \"{}\": \"{}\" is not a variable of the key or of a listed shape", where, e.text(), v));
      }
    }
  };
  if (m_spec.grid.empty() || m_spec.grid.size() > 3) {
    fail(fmt::format("grid: expected 1 to 3 expressions (x, y, z), found {}", m_spec.grid.size()));
  }
  for (const auto& g : m_spec.grid) {
    m_grid.push_back(Expression::parse(g));
    check_variables(m_grid.back(), true, "grid");
  }
  for (std::size_t i = 0; i < m_spec.arguments.size(); ++i) {
    const TuneArgument& a = m_spec.arguments[i];
    const std::string where = fmt::format("arguments[{}] ({})", i, a.name.empty() ? "unnamed" : a.name);
    try {
      m_types.push_back(parse_argument_type(a.type));
    } catch (const UsageError& e) {
      fail(fmt::format("{}: {}", where, e.what()));
    }
    const ArgumentType& t = m_types.back();
    m_literals.emplace_back();
    m_amounts.emplace_back();
    if (t.pointer) {
      if (a.count.empty()) fail(fmt::format("{}: a pointer needs \"count\", its number of elements", where));
      if (!a.value.empty()) fail(fmt::format("{}: a pointer takes \"count\", not \"value\"", where));
      m_amounts.back() = Expression::parse(a.count);
      check_variables(*m_amounts.back(), false, where + " count");
      if (a.fill != "random" && a.fill != "zero" && !number(a.fill)) {
        fail(fmt::format("{}: fill \"{}\": expected random, zero or a number", where, a.fill));
      }
    } else {
      if (a.value.empty()) fail(fmt::format("{}: a scalar needs \"value\", a number or an expression", where));
      if (!a.count.empty()) fail(fmt::format("{}: a scalar takes \"value\", not \"count\"", where));
      if (a.output != TuneArgument::Output::none) fail(fmt::format("{}: only a pointer can be an output", where));
      if (auto v = number(a.value)) {
        m_literals.back() = v;
      } else {
        m_amounts.back() = Expression::parse(a.value);
        check_variables(*m_amounts.back(), false, where + " value");
      }
    }
  }
}

long long CompiledSpec::evaluate(const Expression& e, std::span<const TuneValue> shape, const TuneCandidate* c,
                                 long long sm_count) const {
  // One pointer captured: the std::function holds it in place (a launch's grid allocates nothing).
  struct Context {
    const Expression& e;
    std::span<const TuneValue> shape;
    const TuneCandidate* c;
    long long sm_count;
  } context{e, shape, c, sm_count};
  return e.evaluate([x = &context](std::size_t i) -> std::optional<long long> {
    const std::string& v = x->e.variables()[i];
    for (const auto& s : x->shape) {
      if (s.name == v) return s.value;
    }
    if (v == k_device_variable) return x->sm_count;
    if (const TuneCandidate* cand = x->c) {
      if (v == "block" || v == "block_x") return cand->block.x;
      if (v == "block_y") return cand->block.y;
      if (v == "block_z") return cand->block.z;
      if (v == "param") return cand->param;
      if (v == "shared_mem") return static_cast<long long>(cand->shared_mem);
    }
    return std::nullopt;
  });
}

TuneKey CompiledSpec::key(std::span<const TuneValue> shape) const {
  TuneKey k;
  for (const auto& part : m_key) {
    auto it = std::find_if(shape.begin(), shape.end(), [&](const TuneValue& v) { return v.name == part.name; });
    if (it == shape.end()) {
      throw UsageError(fmt::format("tuning \"{}\" for {}: no value for \"{}\", a variable of its key", m_spec.name,
                                   shape_text(shape), part.name));
    }
    if (part.bucketed) k.add_bucketed(part.name, it->value);
    else k.add(part.name, it->value);
  }
  return k;
}

Dim3 CompiledSpec::grid(const TuneCandidate& candidate, std::span<const TuneValue> shape, long long sm_count) const {
  unsigned dims[3] = {1, 1, 1};
  for (std::size_t i = 0; i < m_grid.size(); ++i) {
    const long long v = evaluate(m_grid[i], shape, &candidate, sm_count);
    if (v < 1 || v > 0x7fffffffLL) {
      throw UsageError(fmt::format("tuning \"{}\" for {}: grid \"{}\" is {} for {}; a grid dimension is 1 to 2^31-1",
                                   m_spec.name, shape_text(shape), m_grid[i].text(), v, candidate.text()));
    }
    dims[i] = static_cast<unsigned>(v);
  }
  return Dim3(dims[0], dims[1], dims[2]);
}

long long CompiledSpec::count(std::size_t argument, std::span<const TuneValue> shape, long long sm_count) const {
  const auto& e = m_amounts.at(argument);
  if (!e) return static_cast<long long>(*m_literals.at(argument));
  return evaluate(*e, shape, nullptr, sm_count);
}

std::vector<unsigned char> CompiledSpec::scalar_bytes(std::size_t argument, std::span<const TuneValue> shape,
                                                      long long sm_count) const {
  const ArgumentType& t = m_types.at(argument);
  const long long i = m_literals.at(argument) ? static_cast<long long>(*m_literals[argument])
                                              : count(argument, shape, sm_count);
  const double v = m_literals[argument] ? *m_literals[argument] : static_cast<double>(i);
  std::vector<unsigned char> out(t.element_size);
  store_element(t, out.data(), v, i);
  return out;
}

TuneBuffers CompiledSpec::buffers(std::span<const TuneValue> shape, void* const* args, long long sm_count) const {
  TuneBuffers b;
  for (std::size_t i = 0; i < m_spec.arguments.size(); ++i) {
    const auto output = m_spec.arguments[i].output;
    if (output == TuneArgument::Output::none) continue;
    void* ptr = nullptr;
    std::memcpy(&ptr, args[i], sizeof(void*));
    const long long n = count(i, shape, sm_count);
    const std::size_t bytes = n > 0 ? static_cast<std::size_t>(n) * m_types[i].element_size : 0;
    (output == TuneArgument::Output::restore ? b.restore : b.reset_to_zero).push_back({ptr, bytes});
  }
  return b;
}

std::string CompiledSpec::launch_text() const {
  std::string t = fmt::format("grid {}", fmt::join(m_spec.grid, ", "));
  for (std::size_t i = 0; i < m_spec.arguments.size(); ++i) {
    const TuneArgument& a = m_spec.arguments[i];
    t += fmt::format("{} {} {}", i == 0 ? ";" : ",", a.type, a.name);
    if (m_types[i].pointer) t += fmt::format(" [{}]", a.count);
    else t += fmt::format(" = {}", a.value);
    if (a.output == TuneArgument::Output::restore) t += " restore";
    if (a.output == TuneArgument::Output::reset_to_zero) t += " reset";
  }
  return t;
}

std::vector<std::vector<TuneValue>> CompiledSpec::shapes() const {
  std::vector<std::vector<TuneValue>> out;
  for (const auto& s : m_spec.shapes) {
    auto& values = out.emplace_back();
    for (const auto& [name, value] : s) values.push_back({name, value});
  }
  return out;
}

std::string CompiledSpec::shape_text(std::span<const TuneValue> shape) {
  std::string t;
  for (const auto& v : shape) t += fmt::format("{}{}={}", t.empty() ? "" : " ", v.name, v.value);
  return t.empty() ? "-" : t;
}

}  // namespace kjit::tune
