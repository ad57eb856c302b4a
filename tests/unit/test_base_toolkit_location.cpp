// KJIT_CUDA_HOME names the toolkit first (base::toolkit_roots); one that names no toolkit used to
// be passed over without a word (#40 item 10). Each Runtime now warns through its log callback,
// naming the variable and where the toolkit is looked for instead; the library prints nothing.
#include <kjit/kjit.hpp>

#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace {

std::vector<std::pair<kjit::LogLevel, std::string>> logged_by_a_runtime(const std::filesystem::path& cache) {
  std::vector<std::pair<kjit::LogLevel, std::string>> said;
  kjit::RuntimeConfig c;
  c.cache_dir = cache;
  c.log = [&said](kjit::LogLevel level, std::string_view m) { said.emplace_back(level, std::string(m)); };
  kjit::Runtime rt(c);
  return said;
}

std::string warnings_about(const std::vector<std::pair<kjit::LogLevel, std::string>>& said, const std::string& what) {
  std::string out;
  for (const auto& [level, m] : said) {
    if (level == kjit::LogLevel::warn && m.find(what) != std::string::npos) out += m + "\n";
  }
  return out;
}

}  // namespace

TEST_SUITE("Runtime toolkit") {
  TEST_CASE("a KJIT_CUDA_HOME that names no toolkit is a warning naming it through the log callback") {
    kjit::test::TempDir tmp;
    {
      kjit::test::ScopedEnv home("KJIT_CUDA_HOME", "/nonexistent/cuda");
      const std::string w = warnings_about(logged_by_a_runtime(tmp / "cache"), "KJIT_CUDA_HOME");
      CHECK_MESSAGE(w.find("KJIT_CUDA_HOME=/nonexistent/cuda does not exist") != std::string::npos, w);
      CHECK(w.find("looked for in") != std::string::npos);
    }
    {
      std::filesystem::create_directories(tmp / "not-a-toolkit" / "bin");
      kjit::test::ScopedEnv home("KJIT_CUDA_HOME", (tmp / "not-a-toolkit").string());
      const std::string w = warnings_about(logged_by_a_runtime(tmp / "cache"), "KJIT_CUDA_HOME");
      CHECK_MESSAGE(w.find("has no include folder") != std::string::npos, w);
    }
    {
      // A toolkit (its include folder is there): nothing to say.
      std::filesystem::create_directories(tmp / "toolkit" / "include");
      kjit::test::ScopedEnv home("KJIT_CUDA_HOME", (tmp / "toolkit").string());
      CHECK(warnings_about(logged_by_a_runtime(tmp / "cache"), "KJIT_CUDA_HOME").empty());
    }
    kjit::test::ScopedEnv unset("KJIT_CUDA_HOME", nullptr);
    CHECK(warnings_about(logged_by_a_runtime(tmp / "cache"), "KJIT_CUDA_HOME").empty());
  }
}
