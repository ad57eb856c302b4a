// kjit::test::SlurmCluster: a one-node Slurm cluster for the tests, Debian's slurmctld, slurmd
// and munged, each started in the foreground by the object on loopback (two free ports, a munge
// socket and key of its own) with every file in a test folder, and stopped (SIGKILL) with it.
// The node claims `cpus` CPUs whatever the machine has (SlurmdParameters=config_overrides), so
// that jobs asking for several CPUs each run side by side on a 2-core CI machine. The client
// commands (sbatch, squeue, sinfo) find it through SLURM_CONF: env(). unavailable() says why no
// cluster can start here (not root: slurmd runs jobs as their users; not installed); the
// constructor throws std::runtime_error when a daemon does not start, naming its log.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace kjit::test {

class SlurmCluster {
public:
  explicit SlurmCluster(const std::filesystem::path& dir, int cpus = 16);
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // Why a cluster cannot be started here ("" when it can).
  static std::string unavailable();

  // "SLURM_CONF=<its slurm.conf>": the environment of a client command.
  std::string env() const { return "SLURM_CONF=" + m_conf.string(); }
  // Waits until the queue is empty (every job done); false after `limit`.
  bool wait_until_idle(std::chrono::seconds limit) const;
  // The controller's and the node's logs, for a failure's message.
  std::string logs() const;

private:
  void spawn(const std::vector<std::string>& args, const std::filesystem::path& log);

  std::filesystem::path m_dir, m_conf;
  std::vector<pid_t> m_pids;
};

}  // namespace kjit::test
