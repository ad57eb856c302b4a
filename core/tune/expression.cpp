// A recursive-descent parser into a flat node list, and its evaluation.
#include "core/tune/expression.hpp"
#include "core/tune/decision.hpp"

#include <kjit/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

namespace kjit::tune {

class ExpressionParser {
public:
  explicit ExpressionParser(Expression& e) : m_e(e), m_s(e.m_text) {}

  void run() {
    m_e.m_root = sum();
    skip_space();
    if (m_pos != m_s.size()) fail(fmt::format("unexpected \"{}\"", m_s.substr(m_pos, 1)));
  }

private:
  using Op = Expression::Op;

  [[noreturn]] void fail(const std::string& why) const {
    throw UsageError(fmt::format("expression \"{}\": {} at position {}", m_s, why, m_pos + 1));
  }
  void skip_space() {
    while (m_pos < m_s.size() && std::isspace(static_cast<unsigned char>(m_s[m_pos]))) ++m_pos;
  }
  bool accept(char c) {
    skip_space();
    if (m_pos < m_s.size() && m_s[m_pos] == c) {
      ++m_pos;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!accept(c)) fail(m_pos < m_s.size() ? fmt::format("expected '{}', found \"{}\"", c, m_s.substr(m_pos, 1))
                                            : fmt::format("expected '{}' before the end", c));
  }
  int add(Op op, long long value = 0, int a = -1, int b = -1) {
    m_e.m_nodes.push_back({op, value, a, b});
    return static_cast<int>(m_e.m_nodes.size()) - 1;
  }

  int sum() {
    int left = product();
    for (;;) {
      if (accept('+')) left = add(Op::add, 0, left, product());
      else if (accept('-')) left = add(Op::sub, 0, left, product());
      else return left;
    }
  }
  int product() {
    int left = unary();
    for (;;) {
      if (accept('*')) left = add(Op::mul, 0, left, unary());
      else if (accept('/')) left = add(Op::div, 0, left, unary());
      else if (accept('%')) left = add(Op::mod, 0, left, unary());
      else return left;
    }
  }
  int unary() {
    if (accept('-')) return add(Op::neg, 0, unary());
    if (accept('+')) return unary();
    return primary();
  }
  int primary() {
    skip_space();
    if (m_pos == m_s.size()) fail("expected a number, a name or '(' before the end");
    const char c = m_s[m_pos];
    if (c == '(') {
      ++m_pos;
      int inner = sum();
      expect(')');
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      long long v = 0;
      while (m_pos < m_s.size() && std::isdigit(static_cast<unsigned char>(m_s[m_pos]))) {
        const int digit = m_s[m_pos] - '0';
        if (v > (std::numeric_limits<long long>::max() - digit) / 10) fail("number too large");
        v = v * 10 + digit;
        ++m_pos;
      }
      return add(Op::number, v);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = m_pos;
      while (m_pos < m_s.size() && (std::isalnum(static_cast<unsigned char>(m_s[m_pos])) || m_s[m_pos] == '_')) ++m_pos;
      const std::string name = m_s.substr(start, m_pos - start);
      if (accept('(')) return call(name, start);
      auto& vars = m_e.m_variables;
      auto it = std::find(vars.begin(), vars.end(), name);
      if (it == vars.end()) it = vars.insert(vars.end(), name);
      return add(Op::variable, it - vars.begin());
    }
    fail(fmt::format("unexpected \"{}\"", m_s.substr(m_pos, 1)));
  }
  int call(const std::string& name, std::size_t at) {
    struct Function {
      const char* name;
      Op op;
      int arity;
    };
    static constexpr Function functions[] = {
        {"ceil_div", Op::ceil_div, 2}, {"min", Op::min, 2}, {"max", Op::max, 2}, {"pow2", Op::pow2, 1}};
    for (const auto& f : functions) {
      if (name != f.name) continue;
      int a = sum(), b = -1;
      if (f.arity == 2) {
        expect(',');
        b = sum();
      }
      expect(')');
      return add(f.op, 0, a, b);
    }
    m_pos = at;
    fail(fmt::format("unknown function \"{}\" (known: ceil_div(a, b), min(a, b), max(a, b), pow2(a))", name));
  }

  Expression& m_e;
  const std::string& m_s;
  std::size_t m_pos = 0;
};

Expression Expression::parse(std::string_view text) {
  Expression e;
  e.m_text = std::string(text);
  ExpressionParser(e).run();
  return e;
}

long long Expression::evaluate(const std::function<std::optional<long long>(std::size_t)>& lookup) const {
  return eval(m_root, lookup);
}

long long Expression::eval(int node, const std::function<std::optional<long long>(std::size_t)>& lookup) const {
  const Node& n = m_nodes[static_cast<std::size_t>(node)];
  auto operand = [&](int i) { return eval(i, lookup); };
  auto divisor = [&](int i) {
    const long long d = operand(i);
    if (d == 0) throw UsageError(fmt::format("expression \"{}\": division by zero", m_text));
    return d;
  };
  switch (n.op) {
  case Op::number: return n.value;
  case Op::variable: {
    const auto v = lookup(static_cast<std::size_t>(n.value));
    if (!v) {
      throw UsageError(fmt::format("expression \"{}\": no value for \"{}\"", m_text,
                                   m_variables[static_cast<std::size_t>(n.value)]));
    }
    return *v;
  }
  case Op::neg: return -operand(n.a);
  case Op::add: return operand(n.a) + operand(n.b);
  case Op::sub: return operand(n.a) - operand(n.b);
  case Op::mul: return operand(n.a) * operand(n.b);
  case Op::div: {
    const long long a = operand(n.a);
    return a / divisor(n.b);
  }
  case Op::mod: {
    const long long a = operand(n.a);
    return a % divisor(n.b);
  }
  case Op::ceil_div: {
    const long long a = operand(n.a), b = divisor(n.b);
    const long long q = a / b;
    return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
  }
  case Op::min: return std::min(operand(n.a), operand(n.b));
  case Op::max: return std::max(operand(n.a), operand(n.b));
  case Op::pow2: return next_power_of_two(operand(n.a));
  }
  return 0;
}

}  // namespace kjit::tune
