// kjit::element_types(), the one table of element types: every C++ spelling resolves to its row
// (element_type_of), no two rows share a name in any column, and docs/python.md's table is this
// table written out (a difference fails and prints the table to paste).
#include <kjit/parameters.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace {

std::string dlpack_name(std::uint8_t code) {
  switch (code) {
    case 0: return "int";
    case 1: return "uint";
    case 2: return "float";
    case 4: return "bfloat";
    case 5: return "complex";
    case 6: return "bool";
    case 10: return "float8_e4m3fn";
    case 12: return "float8_e5m2";
    default: return fmt::format("code {}", code);
  }
}

std::vector<std::string> split(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const std::size_t comma = list.find(", ");
    out.emplace_back(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 2);
  }
  return out;
}

// docs/python.md's table, as element_types() says it.
std::string markdown_table() {
  std::string out = "| the kernel's pointee (`const`, `volatile`, `__restrict__` ignored) | torch dtype | CuPy / numpy "
                    "| `typestr` | DLPack |\n|---|---|---|---|---|\n";
  for (const kjit::ElementTypeRow& row : kjit::element_types()) {
    std::string cpp;
    for (const auto& s : split(row.cpp)) cpp += (cpp.empty() ? "" : ", ") + fmt::format("`{}`", s);
    const bool pair = row.lane != row.type;
    const std::string lanes = fmt::format("`{}` whose last dimension is 2", kjit::to_string(row.lane));
    auto column = [&](std::string_view name) {
      if (name.empty()) return pair ? lanes : std::string("(none)");
      return pair ? fmt::format("`{}`, or {}", name, lanes) : fmt::format("`{}`", name);
    };
    const std::string typestr =
        row.typestr.empty() ? "(none)"
                            : fmt::format("`{}{}`", row.typestr.substr(1) == "1" ? "\\|" : "<", row.typestr);
    const std::string dlpack =
        row.dlpack_bits == 0 ? "(none)" : fmt::format("{} {}", dlpack_name(row.dlpack_code), row.dlpack_bits);
    out += fmt::format("| {} | {} | {} | {} | {} |\n", cpp, column(row.torch), column(row.numpy), typestr, dlpack);
  }
  out += "| `void` | anything | anything | anything | anything |\n";
  return out;
}

}  // namespace

TEST_SUITE("element_types") {
  TEST_CASE("every C++ spelling of a row is that row's type, and no name is in two rows") {
    std::set<std::string> cpp, torch, numpy, typestr, dlpack, names;
    for (const kjit::ElementTypeRow& row : kjit::element_types()) {
      CHECK(names.insert(std::string(row.name)).second);
      CHECK(kjit::to_string(row.type) == row.name);
      CHECK(kjit::lane_type(row.type) == row.lane);
      for (const auto& s : split(row.cpp)) {
        CAPTURE(s);
        CHECK(cpp.insert(s).second);
        CHECK(kjit::element_type_of(s) == row.type);
        CHECK(kjit::element_type_of("const " + s) == row.type);
        CHECK(kjit::element_type_of(s + " volatile") == row.type);
      }
      if (!row.torch.empty()) CHECK(torch.insert(std::string(row.torch)).second);
      if (!row.numpy.empty()) CHECK(numpy.insert(std::string(row.numpy)).second);
      if (!row.typestr.empty()) CHECK(typestr.insert(std::string(row.typestr)).second);
      if (row.dlpack_bits != 0) CHECK(dlpack.insert(fmt::format("{}/{}", row.dlpack_code, row.dlpack_bits)).second);
    }
    CHECK(kjit::element_type_of("void") == kjit::ElementType::any);
    CHECK(kjit::element_type_of("long int") == kjit::ElementType::int64);
    CHECK(kjit::element_type_of("unsigned") == kjit::ElementType::uint32);
    CHECK(kjit::element_type_of("float4") == std::nullopt);
    CHECK(kjit::element_type_of("float*") == std::nullopt);
    // fp8 and torch's unsigned dtypes are rows of their own.
    CHECK(kjit::element_type_of("__nv_fp8_e4m3") == kjit::ElementType::float8_e4m3);
    CHECK(kjit::element_type_of("__nv_fp8_e5m2") == kjit::ElementType::float8_e5m2);
    CHECK(torch.count("float8_e4m3fn") == 1);
    CHECK(torch.count("uint32") == 1);
    CHECK(torch.count("bool") == 1);
  }

  TEST_CASE("docs/python.md's element-type table is element_types() written out") {
    std::ifstream in(std::string(KJIT_SOURCE_DIR) + "/docs/python.md");
    std::stringstream text;
    text << in.rdbuf();
    const std::string doc = text.str();
    const std::string open = "<!-- element types: element_types() -->\n", close = "<!-- /element types -->";
    const std::size_t a = doc.find(open), b = doc.find(close);
    REQUIRE(a != std::string::npos);
    REQUIRE(b != std::string::npos);
    const std::string written = doc.substr(a + open.size(), b - a - open.size());
    const std::string expected = markdown_table();
    if (written != expected) MESSAGE("docs/python.md's table should read:\n" << expected);
    CHECK(written == expected);
  }
}
