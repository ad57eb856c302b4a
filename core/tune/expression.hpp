// kjit::tune::Expression: the integer expressions of a manifest's tuning entry ("ceil_div(n,
// block)", "rows * cols", "param * sm_count"): grids, buffer sizes and scalar arguments, over the
// shape's variables and the candidate's fields. Integers (64-bit), + - * / % with C's rules,
// unary minus, parentheses, and ceil_div(a, b), min(a, b), max(a, b), pow2(a) (the next power of
// two). Pure (no CUDA). Parsed once; evaluation allocates nothing.
//
// No well-kept library does exactly this and links statically: muparser (Debian's
// libmuparser-dev) computes in doubles and ships only a shared library, and kjit's binaries
// need nothing but the driver and NVRTC.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit::tune {

class Expression {
public:
  // Throws UsageError naming the text and the position of what is wrong.
  static Expression parse(std::string_view text);

  const std::string& text() const { return m_text; }
  // The variables it names, each once, in order of first use.
  const std::vector<std::string>& variables() const { return m_variables; }

  // `lookup(i)`: the value of variables()[i]. Throws UsageError for a division by zero or a
  // variable without a value (lookup returns nullopt), naming the expression.
  long long evaluate(const std::function<std::optional<long long>(std::size_t)>& lookup) const;

private:
  enum class Op : std::uint8_t { number, variable, neg, add, sub, mul, div, mod, ceil_div, min, max, pow2 };
  struct Node {
    Op op;
    long long value = 0;  // number: the value; variable: its index in m_variables
    int a = -1, b = -1;   // operands (node indices)
  };
  friend class ExpressionParser;
  long long eval(int node, const std::function<std::optional<long long>(std::size_t)>& lookup) const;

  std::string m_text;
  std::vector<Node> m_nodes;
  int m_root = -1;
  std::vector<std::string> m_variables;
};

}  // namespace kjit::tune
