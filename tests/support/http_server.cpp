#include "support/http_server.hpp"

#include "support/loopback_port.hpp"
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
#include <sys/time.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace kjit::test {
namespace {

using namespace std::chrono_literals;

bool answers(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

std::string on_path(const std::string& name) {
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
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

}  // namespace

std::string NginxServer::binary() {
  if (const char* v = std::getenv("KJIT_NGINX"); v && *v) return v;
  if (::access("/usr/sbin/nginx", X_OK) == 0) return "/usr/sbin/nginx";
  return on_path("nginx");
}

NginxServer::NginxServer(const std::filesystem::path& dir) : m_dir(dir) {
  std::filesystem::create_directories(dir / "tmp");
  for (const char* location : {"kjit", "auth", "bearer", "full"}) std::filesystem::create_directories(dir / "www" / location);
  // nginx reads "{PLAIN}" passwords: no htpasswd tool needed.
  write_file(dir / "htpasswd", fmt::format("{}:{{PLAIN}}{}\n", k_user, k_password));
  start();
}

NginxServer::~NginxServer() { kill(); }

std::string NginxServer::url(const std::string& location) const {
  return fmt::format("http://127.0.0.1:{}/{}", m_port, location);
}

void NginxServer::start() {
  if (m_pid > 0) return;
  const std::string nginx = binary();
  if (nginx.empty()) throw std::runtime_error("nginx not found (install Debian's nginx-light, or set KJIT_NGINX)");
  const std::string d = m_dir.string();
  std::string last_error;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (m_port == 0 || attempt > 0) m_port = free_loopback_port();  // a restart keeps its port first
    // WebDAV PUT writes a temp file and renames it into place: a GET sees an old or a whole value.
    const std::string dav = "dav_methods PUT; create_full_put_path on; dav_access user:rw;";
    write_file(m_dir / "nginx.conf", fmt::format(R"(
daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 64; }}
http {{
  log_format kjit '$connection $request_method $uri $status';
  access_log {d}/access.log kjit;
  client_body_temp_path {d}/tmp/body;
  proxy_temp_path {d}/tmp/proxy;
  fastcgi_temp_path {d}/tmp/fastcgi;
  uwsgi_temp_path {d}/tmp/uwsgi;
  scgi_temp_path {d}/tmp/scgi;
  client_max_body_size 0;
  server {{
    listen 127.0.0.1:{port};
    root {d}/www;
    location /kjit/ {{ {dav} }}
    location /auth/ {{ auth_basic "kjit"; auth_basic_user_file {d}/htpasswd; {dav} }}
    location /bearer/ {{
      if ($http_authorization != "Bearer {token}") {{ return 401; }}
      {dav}
    }}
    location /broken/ {{ return 500; }}
    location /full/ {{ client_max_body_size 1k; {dav} }}
  }}
}}
)",
                                                 fmt::arg("d", d), fmt::arg("port", m_port), fmt::arg("dav", dav),
                                                 fmt::arg("token", k_token)));
    m_pid = ::fork();
    if (m_pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (m_pid == 0) {
      ::execl(nginx.c_str(), nginx.c_str(), "-p", (d + "/").c_str(), "-c", (d + "/nginx.conf").c_str(), "-e",
              (d + "/error.log").c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 500; ++i) {
      if (answers(m_port)) return;
      int status = 0;
      if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
        m_pid = -1;
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    kill();
    std::error_code ec;
    last_error = std::filesystem::exists(m_dir / "error.log", ec) ? read_file(m_dir / "error.log") : "no error.log";
  }
  throw std::runtime_error("nginx did not start: " + last_error.substr(last_error.size() > 2000 ? last_error.size() - 2000 : 0));
}

std::vector<std::string> NginxServer::requests() const {
  std::vector<std::string> out;
  std::error_code ec;
  if (!std::filesystem::exists(m_dir / "access.log", ec)) return out;
  const std::string log = read_file(m_dir / "access.log");
  for (std::size_t start = 0; start < log.size();) {
    std::size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    if (end > start) out.push_back(log.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

void NginxServer::kill() {
  if (m_pid <= 0) return;
  ::kill(m_pid, SIGKILL);
  int status = 0;
  while (::waitpid(m_pid, &status, 0) == -1 && errno == EINTR) {
  }
  m_pid = -1;
}

ScriptedHttpServer::ScriptedHttpServer(std::string reply, After after) : m_reply(std::move(reply)), m_after(after) {
  m_listen = ::socket(AF_INET, SOCK_STREAM, 0);
  if (m_listen < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(m_listen, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(m_listen, 16) != 0 ||
      ::getsockname(m_listen, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(m_listen);
    throw std::runtime_error(std::string("listening on loopback: ") + std::strerror(errno));
  }
  m_port = ntohs(addr.sin_port);
  m_accept = std::thread([this] {
    for (;;) {
      const int fd = ::accept(m_listen, nullptr, nullptr);
      if (fd < 0) return;  // stopped
      ++m_connections;
      std::lock_guard lock(m_mutex);
      m_clients.emplace_back([this, fd] {
        timeval tv{0, 100 * 1000};  // a client that sends nothing never holds stop() up
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        std::string head;
        char buffer[4096];
        while (!m_stop && head.find("\r\n\r\n") == std::string::npos) {
          const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
          if (n <= 0) break;
          head.append(buffer, static_cast<std::size_t>(n));
        }
        (void)::send(fd, m_reply.data(), m_reply.size(), MSG_NOSIGNAL);
        if (m_after == After::trickle) {
          while (!m_stop && ::send(fd, "x", 1, MSG_NOSIGNAL) == 1) std::this_thread::sleep_for(20ms);
        } else if (m_after == After::hold) {
          while (!m_stop) std::this_thread::sleep_for(20ms);
        }
        ::close(fd);
      });
    }
  });
}

ScriptedHttpServer::~ScriptedHttpServer() { stop(); }

std::string ScriptedHttpServer::url() const { return fmt::format("http://127.0.0.1:{}/kjit", m_port); }

void ScriptedHttpServer::stop() {
  if (m_stop.exchange(true)) return;
  ::shutdown(m_listen, SHUT_RDWR);
  m_accept.join();
  ::close(m_listen);
  std::lock_guard lock(m_mutex);
  for (auto& t : m_clients) t.join();
}

}  // namespace kjit::test
