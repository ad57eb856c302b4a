// kjit::test::RedisServer: a real redis-server (Debian's) for the remote-tier tests, started on a
// unix socket in a test folder, with no persistence, and stopped (SIGKILL) with the object. The
// tests kill, pause and restart it; a raw hiredis client looks at what it holds. redis-server is
// $KJIT_REDIS_SERVER, else /usr/bin/redis-server, else the first on PATH; the constructor throws
// when there is none (scripts/install-deps.sh installs it).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kjit::test {

class RedisServer {
public:
  // `extra` goes on redis-server's command line ("--maxmemory-policy", "noeviction").
  explicit RedisServer(const std::filesystem::path& dir, std::vector<std::string> extra = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  std::string url() const { return "unix://" + m_socket.string(); }
  const std::filesystem::path& socket() const { return m_socket; }

  void kill();     // SIGKILL, and wait for it
  void pause();    // SIGSTOP: it looks hung (connections are accepted, nothing answers)
  void resume();   // SIGCONT
  void restart();  // kill() if running, then start again on the same socket (empty)

  // Raw commands on a connection of their own (throw std::runtime_error on trouble).
  long long dbsize() const;
  std::vector<std::string> keys(const std::string& pattern) const;
  std::optional<std::string> get(const std::string& name) const;
  void set(const std::string& name, const std::string& value) const;
  // SET that a full server may refuse: its error ("OOM command not allowed ..."), or "" when stored.
  std::string try_set(const std::string& name, const std::string& value) const;
  void config_set(const std::string& parameter, const std::string& value) const;
  std::string info(const std::string& section) const;

private:
  void start();

  std::filesystem::path m_dir, m_socket;
  std::vector<std::string> m_extra;
  pid_t m_pid = -1;
};

}  // namespace kjit::test
