#include "support/s3_server.hpp"

#include "core/cache/remote/remote_store.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace kjit::test {
namespace {

std::string program_on_path(const std::string& name) {
  if (const char* path = std::getenv("PATH")) {
    const std::string p = path;
    for (std::size_t pos = 0; pos <= p.size();) {
      std::size_t colon = p.find(':', pos);
      if (colon == std::string::npos) colon = p.size();
      const std::string candidate = p.substr(pos, colon - pos) + "/" + name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      pos = colon + 1;
    }
  }
  return {};
}

std::filesystem::path launcher() { return std::filesystem::path(KJIT_SOURCE_DIR) / "tests/servers/s3rver/launch.js"; }

}  // namespace

std::filesystem::path S3Server::modules() {
  if (const char* v = std::getenv("KJIT_S3RVER_DIR"); v != nullptr && *v != '\0') return v;
  return "/opt/kjit-test-servers/s3rver";
}

std::string s3_unavailable() {
  if (program_on_path("node").empty()) return "node is not installed (scripts/install-deps.sh installs nodejs)";
  std::error_code ec;
  if (!std::filesystem::exists(S3Server::modules() / "node_modules/@20minutes/s3rver", ec)) {
    return fmt::format("s3rver is not installed in {} (scripts/install-deps.sh, or set KJIT_S3RVER_DIR)",
                       S3Server::modules().string());
  }
  auto probe = cache::open_remote_store("s3://kjit?endpoint=http://127.0.0.1:1", {});
  if (!probe && probe.error().message.find("libcurl") != std::string::npos) {
    return "this kjit was built without libcurl: " + probe.error().message;
  }
  return {};
}

std::string s3cmd_unavailable() {
  if (std::string why = s3_unavailable(); !why.empty()) return why;
  if (program_on_path("s3cmd").empty()) return "s3cmd is not installed (Debian's s3cmd; scripts/install-deps.sh)";
  return {};
}

S3Server::S3Server(const std::filesystem::path& dir, std::vector<std::string> buckets)
    : m_dir(dir), m_buckets(std::move(buckets)) {
  std::filesystem::create_directories(m_dir / "data");
  start();
}

S3Server::~S3Server() { kill(); }

void S3Server::start() {
  if (m_pid > 0) return;
  const std::string node = program_on_path("node");
  if (node.empty()) throw std::runtime_error("node not found");
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  const std::string node_path = (modules() / "node_modules").string();
  const std::string script = launcher().string();
  const std::string data = (m_dir / "data").string();
  const std::string log = (m_dir / "s3rver.log").string();
  m_pid = ::fork();
  if (m_pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (m_pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    if (FILE* err = std::fopen(log.c_str(), "a")) ::dup2(::fileno(err), STDERR_FILENO);
    ::close(out[0]);
    ::close(out[1]);
    ::setenv("NODE_PATH", node_path.c_str(), 1);
    std::vector<std::string> args{node, script, data, k_access_key, k_secret};
    for (const auto& b : m_buckets) args.push_back(b);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(node.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  // "port N" once it listens: node and s3rver start in about a second (more on a loaded machine).
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buffer[128];
    const ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n <= 0) break;
    line.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  if (std::sscanf(line.c_str(), "port %d", &m_port) != 1) {
    kill();
    std::error_code ec;
    const std::string why = std::filesystem::exists(log, ec) ? read_file(log) : "no log";
    throw std::runtime_error("s3rver did not start: " + why.substr(why.size() > 2000 ? why.size() - 2000 : 0));
  }
}

void S3Server::kill() {
  if (m_pid <= 0) return;
  ::kill(m_pid, SIGKILL);
  int status = 0;
  while (::waitpid(m_pid, &status, 0) == -1 && errno == EINTR) {
  }
  m_pid = -1;
}

std::string S3Server::endpoint() const { return fmt::format("http://127.0.0.1:{}", m_port); }

std::string S3Server::url(const std::string& prefix, const std::string& bucket) const {
  return fmt::format("s3://{}{}{}?region={}&endpoint={}", bucket, prefix.empty() ? "" : "/", prefix, k_region,
                     endpoint());
}

std::filesystem::path S3Server::object_file(const std::string& key, const std::string& bucket) const {
  return m_dir / "data" / bucket / (key + "._S3rver_object");
}

void S3Server::use_credentials() {
  ::setenv("AWS_ACCESS_KEY_ID", k_access_key, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", k_secret, 1);
  for (const char* v : {"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION"}) ::unsetenv(v);
}

S3Cmd::S3Cmd(const S3Server& server, const std::filesystem::path& dir) : m_config(dir / "s3cmd.cfg") {
  const std::string host = server.endpoint().substr(std::string("http://").size());
  write_file(m_config, fmt::format("[default]\naccess_key = {}\nsecret_key = {}\nhost_base = {}\nhost_bucket = {}\n"
                                   "use_https = False\nbucket_location = {}\nsignature_v2 = False\n",
                                   S3Server::k_access_key, S3Server::k_secret, host, host, S3Server::k_region));
}

int S3Cmd::run(const std::string& args, std::string& output) const {
  const std::string command = fmt::format("s3cmd -c '{}' {} 2>&1", m_config.string(), args);
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return -1;
  output.clear();
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, p)) > 0) output.append(buffer, n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace kjit::test
