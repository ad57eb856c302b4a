// kjit::test::http_unavailable: why a case of the HTTP store cannot run here (no nginx, or a kjit
// built without the HTTP store), or empty; the case skips with it (KJIT_SKIP).
#pragma once

#include "core/cache/remote/remote_store.hpp"
#include "support/http_server.hpp"

#include <string>

namespace kjit::test {

inline std::string http_unavailable() {
  if (NginxServer::binary().empty()) return "nginx is not installed (Debian's nginx-light; or set KJIT_NGINX)";
  auto probe = cache::open_remote_store("http://127.0.0.1:1/x", {});
  if (!probe) return "this kjit was built without the HTTP store: " + probe.error().message;
  return {};
}

}  // namespace kjit::test
