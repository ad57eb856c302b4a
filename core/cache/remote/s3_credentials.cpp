#include "core/cache/remote/s3_credentials.hpp"

#include "core/system/file_io.hpp"

#include <fmt/format.h>
#include <sodium.h>

#include <cstdlib>

namespace kjit::cache {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

void wipe(std::string& s) { sodium_memzero(s.data(), s.size()); }

}  // namespace

S3Credentials::~S3Credentials() {
  wipe(secret_access_key);
  wipe(session_token);
}

std::optional<std::string> process_environment(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

system::Result<S3Credentials> read_s3_credentials(const EnvironmentLookup& environment) {
  const auto id = environment("AWS_ACCESS_KEY_ID");
  const auto secret = environment("AWS_SECRET_ACCESS_KEY");
  if (id || secret) {
    if (!id || !secret) {
      return system::Failure{fmt::format("AWS credentials: {} is set and {} is not (set both, or neither and use "
                                         "AWS_PROFILE with ~/.aws/credentials)",
                                         id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
                                         id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID")};
    }
    S3Credentials c;
    c.access_key_id = *id;
    c.secret_access_key = *secret;
    c.session_token = environment("AWS_SESSION_TOKEN").value_or("");
    c.source = "AWS_ACCESS_KEY_ID";
    return c;
  }
  const std::string profile = environment("AWS_PROFILE").value_or("default");
  std::string path;
  if (auto file = environment("AWS_SHARED_CREDENTIALS_FILE")) {
    path = *file;
  } else if (auto home = environment("HOME")) {
    path = *home + "/.aws/credentials";
  } else {
    return system::Failure{"no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are unset, and there is "
                           "no HOME for ~/.aws/credentials (or set AWS_SHARED_CREDENTIALS_FILE)"};
  }
  system::FileContent text = system::read_file(path);
  if (!text.ok()) {
    return system::Failure{fmt::format("no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are unset, and "
                                       "the credentials file for profile {}, {}, cannot be read: {}",
                                       profile, path, text.why())};
  }
  // The INI file: [profile] sections of "key = value" lines; '#' and ';' start comments.
  S3Credentials c;
  bool in_profile = false, found = false;
  std::string_view rest = text.bytes;
  while (!rest.empty()) {
    const auto end = rest.find('\n');
    std::string_view line = trim(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      in_profile = trim(line.substr(1, line.size() - 2)) == profile;
      found = found || in_profile;
      continue;
    }
    const auto eq = line.find('=');
    if (!in_profile || eq == std::string_view::npos) continue;
    const std::string_view key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (key == "aws_access_key_id") c.access_key_id = value;
    if (key == "aws_secret_access_key") c.secret_access_key = value;
    if (key == "aws_session_token") c.session_token = value;
  }
  wipe(text.bytes);
  if (!found) {
    return system::Failure{fmt::format("no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are unset, and "
                                       "{} has no profile [{}]{}",
                                       path, profile, environment("AWS_PROFILE") ? " (AWS_PROFILE)" : "")};
  }
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return system::Failure{fmt::format("AWS credentials: profile [{}] of {} lacks {}", profile, path,
                                       c.access_key_id.empty() ? "aws_access_key_id" : "aws_secret_access_key")};
  }
  c.source = fmt::format("profile {} of {}", profile, path);
  return c;
}

}  // namespace kjit::cache
