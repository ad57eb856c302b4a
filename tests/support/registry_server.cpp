#include "support/registry_server.hpp"

#include "support/temp_dir.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <netinet/in.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace kjit::test {
namespace {

int unused_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error(std::string("binding a loopback port: ") + std::strerror(errno));
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

bool port_answers(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

std::string RegistryServer::binary() {
  if (const char* v = std::getenv("KJIT_DOCKER_REGISTRY"); v != nullptr && *v != '\0') return v;
  if (::access("/usr/bin/docker-registry", X_OK) == 0) return "/usr/bin/docker-registry";
  return {};
}

std::string registry_unavailable() {
  if (RegistryServer::binary().empty()) {
    return "docker-registry is not installed (Debian's docker-registry; scripts/install-deps.sh)";
  }
  return {};
}

RegistryServer::RegistryServer(const std::filesystem::path& dir, Auth auth) : m_dir(dir) {
  std::filesystem::create_directories(m_dir / "data");
  m_port = unused_loopback_port();
  std::string auth_config;
  if (auth == Auth::basic) {
    // bcrypt of k_password (cost 4): docker-registry reads bcrypt htpasswd lines only.
    write_file(m_dir / "htpasswd", fmt::format("{}:$2b$04$XFClpeJ9m4kXM/8COTi6Ze7MwnYvdf1xY9Vrp6t0DDGIUEsj9E.Iy\n", k_user));
    auth_config = fmt::format("auth:\n  htpasswd:\n    realm: kjit\n    path: {}\n", (m_dir / "htpasswd").string());
  }
  write_file(m_dir / "config.yml", fmt::format("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n"
                                               "    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n"
                                               "  addr: 127.0.0.1:{}\n{}",
                                               (m_dir / "data").string(), m_port, auth_config));
  start();
}

RegistryServer::~RegistryServer() { kill(); }

std::string RegistryServer::host() const { return fmt::format("127.0.0.1:{}", m_port); }

std::filesystem::path RegistryServer::blob_file(const std::string& digest) const {
  const std::string hex = digest.substr(digest.find(':') + 1);
  return m_dir / "data/docker/registry/v2/blobs/sha256" / hex.substr(0, 2) / hex / "data";
}

void RegistryServer::start() {
  if (m_pid > 0) return;
  const std::string registry = binary();
  if (registry.empty()) throw std::runtime_error("docker-registry not found");
  const std::string config = (m_dir / "config.yml").string(), log = (m_dir / "registry.log").string();
  m_pid = ::fork();
  if (m_pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (m_pid == 0) {
    if (FILE* f = std::fopen(log.c_str(), "a")) {
      ::dup2(::fileno(f), STDOUT_FILENO);
      ::dup2(::fileno(f), STDERR_FILENO);
    }
    ::execl(registry.c_str(), registry.c_str(), "serve", config.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 3000; ++i) {  // up to 30 s on a loaded machine
    if (port_answers(m_port)) return;
    int status = 0;
    if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
      m_pid = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill();
  std::error_code ec;
  const std::string why = std::filesystem::exists(log, ec) ? read_file(log) : "no log";
  throw std::runtime_error("docker-registry did not start: " + why.substr(why.size() > 2000 ? why.size() - 2000 : 0));
}

void RegistryServer::kill() {
  if (m_pid <= 0) return;
  ::kill(m_pid, SIGKILL);
  int status = 0;
  while (::waitpid(m_pid, &status, 0) == -1 && errno == EINTR) {
  }
  m_pid = -1;
}

}  // namespace kjit::test
