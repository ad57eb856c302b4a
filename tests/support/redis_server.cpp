#include "support/redis_server.hpp"

#include <hiredis/hiredis.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace kjit::test {
namespace {

std::string server_binary() {
  if (const char* v = std::getenv("KJIT_REDIS_SERVER"); v && *v) return v;
  if (::access("/usr/bin/redis-server", X_OK) == 0) return "/usr/bin/redis-server";
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    std::size_t pos = 0;
    while (pos <= p.size()) {
      std::size_t colon = p.find(':', pos);
      if (colon == std::string::npos) colon = p.size();
      std::string candidate = p.substr(pos, colon - pos) + "/redis-server";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      pos = colon + 1;
    }
  }
  throw std::runtime_error("redis-server not found (install Debian's redis-server, or set KJIT_REDIS_SERVER)");
}

struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};

std::unique_ptr<redisContext, ContextFree> connect(const std::filesystem::path& socket) {
  timeval tv{1, 0};
  std::unique_ptr<redisContext, ContextFree> c(redisConnectUnixWithTimeout(socket.c_str(), tv));
  if (!c || c->err) throw std::runtime_error("connecting to the test redis: " + std::string(c ? c->errstr : "oom"));
  redisSetTimeout(c.get(), tv);
  return c;
}

std::unique_ptr<redisReply, ReplyFree> command(const std::filesystem::path& socket, std::vector<std::string> args) {
  auto c = connect(socket);
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* r = static_cast<redisReply*>(redisCommandArgv(c.get(), static_cast<int>(argv.size()), argv.data(), lens.data()));
  if (r == nullptr) throw std::runtime_error("test redis command " + args[0] + ": " + c->errstr);
  return std::unique_ptr<redisReply, ReplyFree>(r);
}

}  // namespace

RedisServer::RedisServer(const std::filesystem::path& dir, std::vector<std::string> extra)
    : m_dir(dir), m_socket(dir / "redis.sock"), m_extra(std::move(extra)) {
  std::filesystem::create_directories(dir);
  start();
}

RedisServer::~RedisServer() { kill(); }

void RedisServer::start() {
  const std::string binary = server_binary();
  std::error_code ec;
  std::filesystem::remove(m_socket, ec);
  const std::string log = (m_dir / "redis.log").string();
  // Made before fork(): the child of a threaded test only calls exec.
  std::vector<std::string> args = {binary, "--port", "0", "--unixsocket", m_socket.string(), "--unixsocketperm",
                                   "777", "--save", "", "--appendonly", "no", "--dir", m_dir.string(),
                                   "--logfile", log};
  args.insert(args.end(), m_extra.begin(), m_extra.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  m_pid = ::fork();
  if (m_pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (m_pid == 0) {
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  for (int i = 0; i < 500; ++i) {
    try {
      auto r = command(m_socket, {"PING"});
      if (r->type == REDIS_REPLY_STATUS) return;
    } catch (const std::runtime_error&) {
    }
    int status = 0;
    if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
      m_pid = -1;
      throw std::runtime_error("redis-server exited at start; see " + log);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("redis-server did not answer within 5 s; see " + log);
}

void RedisServer::kill() {
  if (m_pid <= 0) return;
  ::kill(m_pid, SIGKILL);
  int status = 0;
  while (::waitpid(m_pid, &status, 0) == -1 && errno == EINTR) {
  }
  m_pid = -1;
}

void RedisServer::pause() { ::kill(m_pid, SIGSTOP); }
void RedisServer::resume() { ::kill(m_pid, SIGCONT); }

void RedisServer::restart() {
  kill();
  start();
}

long long RedisServer::dbsize() const {
  auto r = command(m_socket, {"DBSIZE"});
  return r->integer;
}

std::vector<std::string> RedisServer::keys(const std::string& pattern) const {
  auto r = command(m_socket, {"KEYS", pattern});
  std::vector<std::string> out;
  for (std::size_t i = 0; i < r->elements; ++i) out.emplace_back(r->element[i]->str, r->element[i]->len);
  return out;
}

std::optional<std::string> RedisServer::get(const std::string& name) const {
  auto r = command(m_socket, {"GET", name});
  if (r->type != REDIS_REPLY_STRING) return std::nullopt;
  return std::string(r->str, r->len);
}

void RedisServer::set(const std::string& name, const std::string& value) const {
  auto r = command(m_socket, {"SET", name, value});
  if (r->type != REDIS_REPLY_STATUS) throw std::runtime_error("test redis SET failed");
}

std::string RedisServer::try_set(const std::string& name, const std::string& value) const {
  auto r = command(m_socket, {"SET", name, value});
  if (r->type == REDIS_REPLY_ERROR) return std::string(r->str, r->len);
  if (r->type != REDIS_REPLY_STATUS) throw std::runtime_error("test redis SET: unexpected reply");
  return {};
}

void RedisServer::config_set(const std::string& parameter, const std::string& value) const {
  auto r = command(m_socket, {"CONFIG", "SET", parameter, value});
  if (r->type != REDIS_REPLY_STATUS) throw std::runtime_error("test redis CONFIG SET " + parameter + " failed");
}

std::string RedisServer::info(const std::string& section) const {
  auto r = command(m_socket, {"INFO", section});
  if (r->type != REDIS_REPLY_STRING) throw std::runtime_error("test redis INFO failed");
  return std::string(r->str, r->len);
}

}  // namespace kjit::test
