#include "support/slurm_cluster.hpp"

#include "support/loopback_port.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace kjit::test {
namespace {

constexpr const char* k_munged = "/usr/sbin/munged";
constexpr const char* k_slurmctld = "/usr/sbin/slurmctld";
constexpr const char* k_slurmd = "/usr/sbin/slurmd";

std::string short_hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::string out = name;
  return out.substr(0, out.find('.'));
}

// Runs `command` through /bin/sh; its stdout.
std::string output_of(const std::string& command) {
  std::string out;
  if (FILE* p = ::popen(command.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string SlurmCluster::unavailable() {
  if (::geteuid() != 0) return "not root: slurmd runs each job as its user, which needs root";
  for (const char* tool : {k_munged, k_slurmctld, k_slurmd, "/usr/bin/sbatch", "/usr/bin/squeue", "/usr/bin/sinfo"}) {
    if (::access(tool, X_OK) != 0) {
      return std::string(tool) + " is not installed (slurmctld, slurmd, slurm-client and munge: scripts/install-deps.sh)";
    }
  }
  return {};
}

SlurmCluster::SlurmCluster(const std::filesystem::path& dir, int cpus) : m_dir(dir), m_conf(dir / "slurm.conf") {
  namespace fs = std::filesystem;
  for (const char* sub : {"munge", "state", "spool", "log"}) fs::create_directories(dir / sub);
  ::chmod((dir / "munge").c_str(), 0700);

  // munge's key: 1 KiB of random bytes, readable by its owner alone.
  const fs::path key = dir / "munge" / "munge.key";
  {
    std::random_device rd;
    std::ofstream out(key, std::ios::binary);
    for (int i = 0; i < 256; ++i) {
      const unsigned v = rd();
      out.write(reinterpret_cast<const char*>(&v), sizeof v);
    }
  }
  ::chmod(key.c_str(), 0400);
  const fs::path socket = dir / "munge" / "munge.sock";
  spawn({k_munged, "-F", "-f", "--socket=" + socket.string(), "--key-file=" + key.string(),
         "--log-file=" + (dir / "log" / "munged.log").string(), "--pid-file=" + (dir / "munge" / "munged.pid").string(),
         "--seed-file=" + (dir / "munge" / "munged.seed").string()},
        dir / "log" / "munged.out");
  for (int i = 0; i < 500 && !fs::exists(socket); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!fs::exists(socket)) throw std::runtime_error("munged did not start; see " + (dir / "log" / "munged.log").string());

  const std::string host = short_hostname();
  const int ctld_port = free_loopback_port();
  int slurmd_port = free_loopback_port();
  while (slurmd_port == ctld_port) slurmd_port = free_loopback_port();
  std::ofstream conf(m_conf);
  conf << "ClusterName=kjittest\n"
       << "SlurmctldHost=" << host << "(127.0.0.1)\n"
       << "SlurmctldPort=" << ctld_port << "\nSlurmdPort=" << slurmd_port << "\n"
       << "SlurmUser=root\nSlurmdUser=root\n"
       << "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=" << socket.string() << "\n"
       << "StateSaveLocation=" << (dir / "state").string() << "\n"
       << "SlurmdSpoolDir=" << (dir / "spool").string() << "\n"
       << "SlurmctldPidFile=" << (dir / "slurmctld.pid").string() << "\n"
       << "SlurmdPidFile=" << (dir / "slurmd.pid").string() << "\n"
       << "SlurmctldLogFile=" << (dir / "log" / "slurmctld.log").string() << "\n"
       << "SlurmdLogFile=" << (dir / "log" / "slurmd.log").string() << "\n"
       << "SlurmdParameters=config_overrides\n"
       << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
       << "AccountingStorageType=accounting_storage/none\nSelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
       << "SchedulerType=sched/builtin\nMpiDefault=none\nReturnToService=2\nInactiveLimit=0\nKillWait=5\n"
       << "MinJobAge=300\nMaxArraySize=1001\n"
       << "NodeName=" << host << " NodeAddr=127.0.0.1 CPUs=" << cpus << " State=UNKNOWN\n"
       << "PartitionName=test Nodes=" << host << " Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n";
  conf.close();
  spawn({k_slurmctld, "-D", "-i", "-f", m_conf.string()}, dir / "log" / "slurmctld.out");
  spawn({k_slurmd, "-D", "-f", m_conf.string()}, dir / "log" / "slurmd.out");

  // Up when the node is idle.
  for (int i = 0; i < 300; ++i) {
    const std::string state = output_of(env() + " /usr/bin/sinfo -h -o %T 2>/dev/null");
    if (state.rfind("idle", 0) == 0) return;
    for (pid_t pid : m_pids) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) throw std::runtime_error("a Slurm daemon exited at start:\n" + logs());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("the Slurm node did not become idle within 30 s:\n" + logs());
}

SlurmCluster::~SlurmCluster() {
  for (auto it = m_pids.rbegin(); it != m_pids.rend(); ++it) {
    ::kill(*it, SIGKILL);
    int status = 0;
    ::waitpid(*it, &status, 0);
  }
}

void SlurmCluster::spawn(const std::vector<std::string>& args, const std::filesystem::path& log) {
  // Made before fork(): the child of a threaded test only calls exec.
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out = log.string();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork for " + args[0] + " failed");
  if (pid == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
    }
    ::setsid();  // its own session: the test's terminal signals do not reach it
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  m_pids.push_back(pid);
}

bool SlurmCluster::wait_until_idle(std::chrono::seconds limit) const {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    // No job left, and squeue answered (it prints nothing on stdout when the controller does not).
    if (output_of(env() + " /usr/bin/squeue -h -o %i 2>/dev/null; echo \"squeue exit $?\"") == "squeue exit 0\n") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return false;
}

std::string SlurmCluster::logs() const {
  std::string out;
  for (const char* name : {"slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out", "munged.log"}) {
    const std::string text = read_all(m_dir / "log" / name);
    out += std::string("--- ") + name + " (last 2000 bytes)\n" + text.substr(text.size() > 2000 ? text.size() - 2000 : 0);
  }
  return out;
}

}  // namespace kjit::test
