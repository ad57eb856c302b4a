// kjit::cache::S3Credentials: who an s3:// store signs as, found where every AWS client looks:
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN for temporary ones), else
// the profile AWS_PROFILE names ("default" when unset) in the shared credentials file
// (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials). Never from the URL, which kjit prints.
// `source` says where they came from for messages ("AWS_ACCESS_KEY_ID", "profile ci of
// /home/u/.aws/credentials"); the secrets never go into a message. A Failure says what was looked
// for where, and what was missing. Nothing here throws past allocation failures.
#pragma once

#include "core/system/result.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace kjit::cache {

struct S3Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty: none
  std::string source;         // where they were found, for messages
  // The secrets wiped (sodium_memzero).
  ~S3Credentials();
  S3Credentials() = default;
  S3Credentials(const S3Credentials&) = default;
  S3Credentials& operator=(const S3Credentials&) = default;
  S3Credentials(S3Credentials&&) = default;
  S3Credentials& operator=(S3Credentials&&) = default;
};

// An environment variable's value, nullopt when unset (the process's own by default).
using EnvironmentLookup = std::function<std::optional<std::string>(std::string_view name)>;
std::optional<std::string> process_environment(std::string_view name);

system::Result<S3Credentials> read_s3_credentials(const EnvironmentLookup& environment = process_environment);

}  // namespace kjit::cache
