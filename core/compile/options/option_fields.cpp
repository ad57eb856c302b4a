// The public face of compile::k_option_fields: the rows, and a field's value read or set by name.
#include "core/compile/options/option_fields.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>

#include <optional>
#include <span>
#include <type_traits>
#include <variant>

namespace kjit {
namespace {

constexpr auto k_rows = std::apply([](const auto&... f) { return std::array<CompileOptionField, sizeof...(f)>{f.row...}; },
                                   compile::k_option_fields);

std::string_view value_kind(const CompileOptionValue& v) {
  switch (v.index()) {
  case 0: return "a bool";
  case 1: return "an int";
  case 2: return "a string";
  default: return "a list of strings";
  }
}

[[noreturn]] void wrong_kind(const CompileOptionField& row, const CompileOptionValue& v) {
  throw UsageError(fmt::format("setting CompileOptions::{}: it takes {} ({}), not {}", row.name, to_string(row.kind),
                               row.doc, value_kind(v)));
}

}  // namespace

std::string_view to_string(CompileOptionKind kind) {
  switch (kind) {
  case CompileOptionKind::arch: return "arch";
  case CompileOptionKind::text: return "text";
  case CompileOptionKind::text_list: return "text_list";
  case CompileOptionKind::path_list: return "path_list";
  case CompileOptionKind::flag: return "flag";
  case CompileOptionKind::count: return "count";
  case CompileOptionKind::raw_flags: return "raw_flags";
  }
  return "?";
}

std::span<const CompileOptionField> compile_option_fields() { return k_rows; }

const CompileOptionField* find_compile_option(std::string_view name) {
  for (const auto& row : k_rows) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

CompileOptionValue compile_option(const CompileOptions& options, std::string_view name) {
  std::optional<CompileOptionValue> out;
  compile::for_each_option_field([&](const auto& f) {
    if (f.row.name != name) return;
    const auto& v = options.*f.member;
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, Arch>) {
      out = v.str();
    } else if constexpr (std::is_same_v<T, std::vector<std::filesystem::path>>) {
      std::vector<std::string> texts;
      for (const auto& p : v) texts.push_back(p.string());
      out = std::move(texts);
    } else {
      out = v;
    }
  });
  if (!out) throw UsageError(fmt::format("reading CompileOptions::{}: no such field", name));
  return std::move(*out);
}

void set_compile_option(CompileOptions& options, std::string_view name, const CompileOptionValue& value) {
  bool found = false;
  compile::for_each_option_field([&](const auto& f) {
    if (f.row.name != name) return;
    found = true;
    auto& member = options.*f.member;
    using T = std::decay_t<decltype(member)>;
    if constexpr (std::is_same_v<T, Arch>) {
      if (!std::holds_alternative<std::string>(value)) wrong_kind(f.row, value);
      member = Arch::parse(std::get<std::string>(value));
    } else if constexpr (std::is_same_v<T, std::vector<std::filesystem::path>>) {
      if (!std::holds_alternative<std::vector<std::string>>(value)) wrong_kind(f.row, value);
      const auto& texts = std::get<std::vector<std::string>>(value);
      member.assign(texts.begin(), texts.end());
    } else if constexpr (std::is_same_v<T, int>) {
      if (!std::holds_alternative<int>(value)) wrong_kind(f.row, value);
      const int n = std::get<int>(value);
      if (n < f.row.min || n > f.row.max) {
        throw UsageError(fmt::format("setting CompileOptions::{} to {}: it takes {} to {} ({})", f.row.name, n,
                                     f.row.min, f.row.max, f.row.doc));
      }
      member = n;
    } else {
      if (!std::holds_alternative<T>(value)) wrong_kind(f.row, value);
      member = std::get<T>(value);
    }
  });
  if (!found) {
    std::string names;
    for (const auto& row : k_rows) names += (names.empty() ? "" : ", ") + std::string(row.name);
    throw UsageError(fmt::format("setting CompileOptions::{}: no such field (fields: {})", name, names));
  }
}

}  // namespace kjit
