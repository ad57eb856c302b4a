// Servers for the HTTP store's tests, started and stopped by the test on 127.0.0.1:
//   - NginxServer: a real nginx (Debian's nginx-light, or $KJIT_NGINX) in the foreground, single
//     process (master_process off: as the user running the test), with its own prefix, config,
//     logs and temp folders in a test folder, on a free loopback port. Locations: /kjit/ (WebDAV
//     PUT, open), /auth/ (basic auth: user "kjit", password "s3cret-pw"), /bearer/ (only
//     "Authorization: Bearer tok-9f3a"), /broken/ (every request: 500), /full/ (reads as /kjit/,
//     but a PUT of more than 1 KiB is answered 413, as a store with a body limit). Stopped (SIGKILL) with
//     the object. NginxServer::binary() is empty when there is none: the test skips, saying so.
//   - ScriptedHttpServer: a socket server of the test's own that answers every request with the
//     bytes it is given, then closes the connection (a body cut short: announce more than you
//     send), or holds it open sending one more byte every 20 ms (a server slower than any
//     timeout), or holds it open sending nothing, until stopped. It reads the request head only.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kjit::test {

class NginxServer {
public:
  static constexpr const char* k_user = "kjit";
  static constexpr const char* k_password = "s3cret-pw";
  static constexpr const char* k_token = "tok-9f3a";

  explicit NginxServer(const std::filesystem::path& dir);  // throws std::runtime_error when it cannot start
  ~NginxServer();
  NginxServer(const NginxServer&) = delete;
  NginxServer& operator=(const NginxServer&) = delete;

  // $KJIT_NGINX, else /usr/sbin/nginx, else the first on PATH; empty when there is none.
  static std::string binary();

  // http://127.0.0.1:<port>/<location> ("kjit", "auth", "bearer", "broken", "full").
  std::string url(const std::string& location = "kjit") const;
  // Where nginx keeps what was PUT under `location` (the files of <url>/ac/<sha256>).
  std::filesystem::path root(const std::string& location = "kjit") const { return m_dir / "www" / location; }
  int port() const { return m_port; }
  // The access log: a line a request, "<connection number> <method> <uri> <status>".
  std::vector<std::string> requests() const;
  void kill();   // SIGKILL, and wait for it
  void start();  // again after kill(): the same port if it is still free, what was stored kept

private:

  std::filesystem::path m_dir;
  int m_port = 0;
  pid_t m_pid = -1;
};

class ScriptedHttpServer {
public:
  enum class After { close, trickle, hold };  // hold: nothing more, open until stopped
  ScriptedHttpServer(std::string reply, After after);
  ~ScriptedHttpServer();
  ScriptedHttpServer(const ScriptedHttpServer&) = delete;
  ScriptedHttpServer& operator=(const ScriptedHttpServer&) = delete;

  std::string url() const;  // http://127.0.0.1:<port>/kjit
  int connections() const { return m_connections.load(); }
  void stop();

private:
  std::string m_reply;
  After m_after;
  int m_listen = -1;
  int m_port = 0;
  std::atomic<bool> m_stop{false};
  std::atomic<int> m_connections{0};
  std::mutex m_mutex;
  std::thread m_accept;
  std::vector<std::thread> m_clients;
};

}  // namespace kjit::test
