// `kjit cache bundle push|pull`: warm bundles as OCI artifacts in a real registry (Debian's
// docker-registry on loopback), through real kjit processes: CI pushes a signed bundle and gets
// its digest, a node pulls it by digest (or by tag, resolved to the same digest) and then hits
// under --require-hit; a bundle signed by another key, or a tag nobody pushed, imports nothing.
#include "support/helpers.hpp"
#include "support/registry_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>

namespace {

using Run = kjit::test::CommandResult;

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

nlohmann::json parse(const Run& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), r.out);
  return j;
}

}  // namespace

TEST_SUITE("cli oci bundle") {
  TEST_CASE("CI pushes a signed bundle a node pulls it by digest or tag and hits while a wrong key imports nothing") {
    KJIT_REQUIRE_SERVER(kjit::test::registry_unavailable);
    kjit::test::TempDir dir;
    kjit::test::RegistryServer registry(dir / "registry");
    std::string files;
    for (int i = 0; i < 3; ++i) {
      const auto f = dir / fmt::format("b{}.cu", i);
      kjit::test::write_file(f, fmt::format("extern \"C\" __global__ void b{}(float* x) {{ x[threadIdx.x] -= {}.0f; }}\n",
                                            i, i + 1));
      files += " " + f.string();
    }
    auto kjit = [&](const std::string& env, const std::string& node, const std::string& args) {
      return kjit::test::run_command(fmt::format("{} {} --cache-dir {} {} 2>&1", env, k_kjit, (dir / node).string(), args));
    };
    REQUIRE(kjit("", "ci", "compile --arch sm_90" + files).code == 0);
    REQUIRE(kjit("", "ci", "cache keygen --out " + (dir / "ci").string()).code == 0);
    REQUIRE(kjit("", "ci", "cache keygen --out " + (dir / "other").string()).code == 0);
    const std::string sign = "KJIT_REMOTE_SIGNING_KEY_FILE=" + (dir / "ci.key").string();
    const std::string check = "KJIT_REMOTE_PUBLIC_KEY_FILE=" + (dir / "ci.pub").string();
    const std::string tag = fmt::format("oci://{}/fleet/warm:sm90", registry.host());

    const Run pushed = kjit(sign, "ci", "--json cache bundle push " + tag);
    REQUIRE_MESSAGE(pushed.code == 0, pushed.out);
    const std::string digest = parse(pushed)["digest"];
    CHECK(digest.starts_with("sha256:"));
    CHECK(parse(pushed)["bundle"]["entries"] == 3);

    const std::string by_digest = fmt::format("oci://{}/fleet/warm@{}", registry.host(), digest);
    const Run pulled = kjit(check, "node", "--json cache bundle pull " + by_digest);
    REQUIRE_MESSAGE(pulled.code == 0, pulled.out);
    CHECK(parse(pulled)["written"] == 3);
    CHECK(parse(pulled)["digest"] == digest);
    const Run hits = kjit("", "node", "--require-hit compile --json --arch sm_90" + files);
    CHECK(hits.code == 0);
    for (const auto& j : parse(hits)) CHECK(j["outcome"] == "hit");

    const Run text = kjit(check, "tagged", "cache bundle pull " + tag);
    CHECK(text.code == 0);
    CHECK_MESSAGE(text.out.find(digest) != std::string::npos, text.out);  // the tag printed as its digest

    const Run wrong_key = kjit("KJIT_REMOTE_PUBLIC_KEY_FILE=" + (dir / "other.pub").string(), "wrong",
                               "cache bundle pull " + by_digest);
    CHECK(wrong_key.code == 1);
    CHECK(parse(kjit("", "wrong", "--json cache stats"))["entries"] == 0);

    const Run absent = kjit(check, "absent", fmt::format("cache bundle pull oci://{}/fleet/warm:nope", registry.host()));
    CHECK(absent.code == 1);
    CHECK_MESSAGE(absent.out.find("MANIFEST_UNKNOWN") != std::string::npos, absent.out);
    const Run no_tag = kjit(sign, "ci", fmt::format("cache bundle push oci://{}/fleet/warm", registry.host()));
    CHECK(no_tag.code != 0);
    CHECK(no_tag.out.find("a push needs a tag") != std::string::npos);
  }
}
