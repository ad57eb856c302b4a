// kjit::test::S3Server: a real S3 server for the s3:// tests, a process of its own speaking the
// protocol over loopback: s3rver (@20minutes/s3rver, the fork that checks SigV4 signatures:
// SignatureDoesNotMatch for a wrong secret, InvalidAccessKeyId for an unknown key id,
// NoSuchBucket, Range reads), run by node from tests/servers/s3rver/launch.js with the modules
// scripts/install-deps.sh put in /opt/kjit-test-servers/s3rver (or $KJIT_S3RVER_DIR). It keeps
// its objects in a test folder (<dir>/data/<bucket>/<key>._S3rver_object), knows one key pair
// (k_access_key, k_secret) and the buckets it was given, listens on a free 127.0.0.1 port, and
// is stopped (SIGKILL) with the object; the constructor throws when it cannot start.
//   - s3_unavailable(): why an S3 case cannot run here, or empty. With CI set (the test command on
//     a fresh machine), a missing server is a failure of the case, never a skip (KJIT_REQUIRE_SERVER).
//   - S3Cmd: Debian's s3cmd, an AWS client of its own, configured for the server (path-style,
//     SigV4, no TLS): what kjit wrote it reads, and what it writes kjit reads.
#pragma once

#include <sys/types.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace kjit::test {

class S3Server {
public:
  static constexpr const char* k_access_key = "AKIAKJITTESTKEY00001";
  static constexpr const char* k_secret = "kjit+test/secret-7Qm2vX9pL4sT8wZ";
  static constexpr const char* k_region = "us-east-1";

  explicit S3Server(const std::filesystem::path& dir, std::vector<std::string> buckets = {"kjit"});
  ~S3Server();
  S3Server(const S3Server&) = delete;
  S3Server& operator=(const S3Server&) = delete;

  // Where s3rver's modules lie ($KJIT_S3RVER_DIR, else /opt/kjit-test-servers/s3rver).
  static std::filesystem::path modules();

  std::string endpoint() const;  // http://127.0.0.1:<port>
  // s3://<bucket>[/<prefix>]?region=us-east-1&endpoint=http://127.0.0.1:<port>
  std::string url(const std::string& prefix = "", const std::string& bucket = "kjit") const;
  // The file s3rver keeps an object in.
  std::filesystem::path object_file(const std::string& key, const std::string& bucket = "kjit") const;
  // Sets AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in this process to the server's pair (and
  // clears AWS_SESSION_TOKEN, AWS_PROFILE and the region variables).
  static void use_credentials();
  void kill();
  void start();  // again after kill(): the same folder, a new port

private:
  std::filesystem::path m_dir;
  std::vector<std::string> m_buckets;
  int m_port = 0;
  pid_t m_pid = -1;
};

// Why an S3 case cannot run here (no node, no s3rver modules, a kjit without libcurl), or empty.
std::string s3_unavailable();
// Why an s3cmd case cannot run here, or empty.
std::string s3cmd_unavailable();

// s3cmd against `server`, with a configuration file in `dir`.
class S3Cmd {
public:
  S3Cmd(const S3Server& server, const std::filesystem::path& dir);
  // `s3cmd ARGS`: its exit status, with stdout and stderr in `output`.
  int run(const std::string& args, std::string& output) const;

private:
  std::filesystem::path m_config;
};

}  // namespace kjit::test
