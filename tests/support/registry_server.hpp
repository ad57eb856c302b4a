// kjit::test::RegistryServer: a real OCI registry for the oci:// tests: Debian's docker-registry
// (the CNCF distribution registry 2.8; $KJIT_DOCKER_REGISTRY, else /usr/bin/docker-registry) on a
// free 127.0.0.1 port, its filesystem storage in a test folder, stopped (SIGKILL) with the object.
// The tests kill it mid-push, restart it on its storage, and change a blob in that storage. The
// constructor throws when it cannot start; registry_unavailable() says why a case cannot run here.
// With Auth::basic it asks for basic credentials (k_user, k_password; an htpasswd with its bcrypt
// hash), as a registry behind a login does.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

namespace kjit::test {

class RegistryServer {
public:
  static constexpr const char* k_user = "kjit";
  static constexpr const char* k_password = "oci-pw-5";
  enum class Auth { none, basic };
  explicit RegistryServer(const std::filesystem::path& dir, Auth auth = Auth::none);
  ~RegistryServer();
  RegistryServer(const RegistryServer&) = delete;
  RegistryServer& operator=(const RegistryServer&) = delete;

  static std::string binary();
  std::string host() const;  // 127.0.0.1:<port>
  // The file the registry keeps a blob in ("sha256:<hex>").
  std::filesystem::path blob_file(const std::string& digest) const;
  void kill();
  void start();  // again after kill(): the same storage and port

private:
  std::filesystem::path m_dir;
  int m_port = 0;
  pid_t m_pid = -1;
};

std::string registry_unavailable();

}  // namespace kjit::test
