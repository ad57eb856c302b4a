// examples/slurm_warm on a real one-node Slurm cluster (slurmctld, slurmd and munged started by the
// test on loopback: support/slurm_cluster): submit.sh submits warm_array.sbatch as a job array of
// three tasks and merge.sbatch after it; each task warms the shard --shard auto read from its
// SLURM_ARRAY_TASK_ID and says so in its log, and the merged bundle, imported on a node, holds
// the one-host warm's entries byte for byte. As root only (slurmd runs jobs as their users); under
// CI a Slurm that is not installed fails the case instead of skipping it.
#include "support/helpers.hpp"
#include "support/skip.hpp"
#include "support/slurm_cluster.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>

namespace fs = std::filesystem;

namespace {

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";
const std::string k_example = std::string(KJIT_SOURCE_DIR) + "/examples/slurm_warm";
const std::string k_clean_env = "env -u SLURM_ARRAY_TASK_ID -u SLURM_ARRAY_TASK_COUNT -u JOB_COMPLETION_INDEX -u RANK "
                                "-u WORLD_SIZE -u KJIT_REMOTE_CACHE -u KJIT_REMOTE_SIGNING_KEY_FILE "
                                "-u KJIT_REMOTE_PUBLIC_KEY_FILE -u KJIT_REMOTE_SECRET_FILE -u KJIT_CACHE_DIR";

std::map<std::string, std::string> entries_of(const fs::path& cache) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(cache)) {
    if (e.is_regular_file() && e.path().extension() == ".kjit") {
      out[fs::relative(e.path(), cache).string()] = kjit::test::read_file(e.path());
    }
  }
  return out;
}

}  // namespace

TEST_SUITE("cli slurm") {
  TEST_CASE("a Slurm job array warms a shard a task and its merged bundle holds the one-host warm's entries") {
    // Not root: no Slurm can run jobs here, a skip. Not installed: a skip, but under CI (the test
    // command, after scripts/install-deps.sh installed it) a failure.
    if (::geteuid() != 0) KJIT_SKIP(kjit::test::SlurmCluster::unavailable());
    KJIT_REQUIRE_SERVER(kjit::test::SlurmCluster::unavailable);
    kjit::test::TempDir dir;
    kjit::test::SlurmCluster slurm(dir / "slurm");

    const fs::path kernels = dir / "kernels";
    kjit::test::write_file(kernels / "axpb.cu", "template <class T>\n__global__ void axpb(T* x, T a, int n) {\n"
                                                "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                                "  if (i < n) x[i] = a * x[i] + T(B);\n}\n");
    std::string variants;
    for (int i = 0; i < 6; ++i) variants += fmt::format("{}{{\"name\": \"b{}\", \"defines\": [\"B={}\"]}}", i ? ", " : "", i, i + 1);
    kjit::test::write_file(kernels / "kjit.json",
                           fmt::format(R"({{"kjit_manifest": 1, "kernels": [{{"file": "axpb.cu",
                              "instantiate": ["axpb<float>"], "variants": [{}]}}]}})",
                                       variants));
    const std::size_t items = 6 * 2;

    // The one-host warm to compare with.
    auto one = kjit::test::run_command(fmt::format("{} {} --cache-dir {} --json warm {} --arch sm_80,sm_90 2>&1",
                                                   k_clean_env, k_kjit, (dir / "one").string(), kernels.string()));
    REQUIRE_MESSAGE(one.code == 0, one.out);

    // As a user submits it: from the job's folder, the example's submit.sh, an array of 3.
    const fs::path out = dir / "bundles";
    auto submitted = kjit::test::run_command(fmt::format(
        "cd {} && {} {} TMPDIR={} KJIT={} KERNELS={} ARCHS=sm_80,sm_90 OUT={} {}/submit.sh 3 2>&1", dir.path().string(),
        k_clean_env, slurm.env(), dir.path().string(), k_kjit, kernels.string(), out.string(), k_example));
    REQUIRE_MESSAGE(submitted.code == 0, submitted.out);
    CHECK(submitted.out.find("(3 tasks)") != std::string::npos);
    REQUIRE_MESSAGE(slurm.wait_until_idle(std::chrono::minutes(8)), slurm.logs());

    // Each task's log: the shard it read from Slurm's variables, and its table.
    std::size_t logs = 0;
    for (const auto& e : fs::directory_iterator(dir.path())) {
      // kjit-warm-<array job>_<task>.log (the %A_%a of #SBATCH --output); the folder also holds the
      // tasks' caches, kjit-warm-<array job>-<task>/ (KJIT_CACHE_DIR under the TMPDIR given here).
      const std::string name = e.path().filename().string();
      if (!e.is_regular_file() || name.rfind("kjit-warm-", 0) != 0 || e.path().extension() != ".log") continue;
      const std::string log = kjit::test::read_file(e.path());
      const std::string task = name.substr(name.find('_') + 1, name.find('.') - name.find('_') - 1);
      INFO(name << ":\n" << log);
      CHECK(log.find(fmt::format("kjit: warm: shard {}/3 (SLURM_ARRAY_TASK_ID={}, SLURM_ARRAY_TASK_COUNT=3)", task,
                                 task)) != std::string::npos);
      CHECK(log.find("0 failed") != std::string::npos);
      ++logs;
    }
    CHECK(logs == 3);
    for (int i = 0; i < 3; ++i) CHECK(fs::exists(out / fmt::format("shard-{}.kjb", i)));
    REQUIRE_MESSAGE(fs::exists(out / "warm.kjb"), slurm.logs());

    // The merged bundle on a node: the one-host warm's entries, byte for byte.
    auto imported = kjit::test::run_command(fmt::format("{} {} --cache-dir {} --json cache import {} 2>&1", k_clean_env,
                                                        k_kjit, (dir / "node").string(), (out / "warm.kjb").string()));
    REQUIRE_MESSAGE(imported.code == 0, imported.out);
    CHECK(nlohmann::json::parse(imported.out)["written"] == items);
    const auto one_entries = entries_of(dir / "one");
    CHECK(one_entries.size() == items);
    CHECK(entries_of(dir / "node") == one_entries);
  }
}
