// The HTTP backend of RemoteStore (cache/remote/http_store.cpp) against a real nginx with WebDAV
// PUT, and against scripted socket servers for what nginx will not do on demand (a server slower
// than the timeout, one that closes mid-body, one announcing a huge value): only a 200 is a
// value, only a 404 an absent one, everything else a Failure, and no call outlasts its timeouts.
#include "core/cache/remote/remote_backend.hpp"
#include "core/cache/remote/remote_store.hpp"
#include "support/http_server.hpp"
#include "support/http_unavailable.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sodium.h>

#include <chrono>
#include <future>
#include <random>
#include <set>
#include <thread>

using namespace kjit;
using namespace kjit::cache;
using namespace kjit::system;
using namespace std::chrono_literals;

namespace {

std::string random_bytes(std::size_t size) {
  static std::mt19937_64 rng{std::random_device{}()};
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

std::unique_ptr<RemoteStore> store(const std::string& url, RemoteTimeouts timeouts = {1s, 2s},
                                   const HttpCredentials& credentials = {}) {
  auto s = open_remote_store(url, {timeouts, credentials});
  REQUIRE_MESSAGE(s, (s ? "" : s.error().message));
  return std::move(*s);
}

// The file nginx holds for `name`: <root>/ac/<sha256 of the name>.
std::filesystem::path stored_file(const std::filesystem::path& root, std::string_view name) {
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(name.data()), name.size());
  std::string hex;
  for (unsigned char b : digest) hex += fmt::format("{:02x}", b);
  return root / "ac" / hex;
}

// Runs `call`; one still running after 5 s fails the test (the bound only catches a hang).
template <class Call>
auto bounded(Call call) {
  const auto start = std::chrono::steady_clock::now();
  auto running = std::async(std::launch::async, call);
  REQUIRE_MESSAGE(running.wait_for(5s) == std::future_status::ready, "still waiting after 5 s");
  return std::pair{running.get(), std::chrono::steady_clock::now() - start};
}

}  // namespace

TEST_SUITE("HttpStore") {
  TEST_CASE("a value PUT to nginx comes back whole over one kept connection and an absent name is a 404 miss") {
    if (auto why = test::http_unavailable(); !why.empty()) KJIT_SKIP(why);
    test::TempDir tmp;
    test::NginxServer nginx(tmp / "nginx");
    auto s = store(nginx.url() + "/");  // a trailing slash is the same base
    CHECK(s->url() == nginx.url());
    CHECK_FALSE(remote_backend_of(s->url())->can.locks);
    CHECK_FALSE(s->try_lock("kjit:lock:x", "t", 1s));

    std::vector<std::pair<std::string, std::string>> values;
    for (std::size_t i = 0; i < 6; ++i) values.emplace_back(fmt::format("kjit:{:032x}", i * 7919 + 1), random_bytes(1 + i * 40000));
    for (const auto& [name, value] : values) REQUIRE_MESSAGE(s->put(name, value, 0ms), name);
    for (const auto& [name, value] : values) {
      CHECK(test::read_file(stored_file(nginx.root(), name)) == value);  // the layout: <base>/ac/<sha256>
      auto got = s->get(name, 1 << 20);
      REQUIRE(got);
      REQUIRE(got->has_value());
      CHECK(**got == value);
    }
    values[2].second = random_bytes(777);  // replaced
    REQUIRE(s->put(values[2].first, values[2].second, 0ms));
    CHECK(**s->get(values[2].first, 1 << 20) == values[2].second);

    auto absent = s->get("kjit:absent", 1 << 20);
    REQUIRE(absent);
    CHECK_FALSE(absent->has_value());
    auto pong = s->ping();
    REQUIRE(pong);
    CHECK(pong->starts_with("http 404 nginx"));

    // Keep-alive: every request of this store went over one connection. (nginx logs a request
    // just after its reply: the last line may come a moment after the call returned.)
    std::set<std::string> connections;
    auto requests = nginx.requests();
    for (int i = 0; i < 500 && requests.size() < 16; ++i) {
      std::this_thread::sleep_for(10ms);
      requests = nginx.requests();
    }
    CHECK(requests.size() == 6 + 6 + 1 + 1 + 1 + 1);
    for (const auto& line : requests) connections.insert(line.substr(0, line.find(' ')));
    CHECK(connections.size() == 1);

    // Another store (another process, a fresh connection) reads what this one wrote.
    auto other = store(nginx.url());
    CHECK(**other->get(values[5].first, 1 << 20) == values[5].second);
  }

  TEST_CASE("credentials: none or wrong ones get 401 and a Failure that names the file, right ones read and write") {
    if (auto why = test::http_unavailable(); !why.empty()) KJIT_SKIP(why);
    test::TempDir tmp;
    test::NginxServer nginx(tmp / "nginx");
    const std::string value = random_bytes(3000);
    const HttpCredentials right{HttpCredentials::Kind::basic, std::string(test::NginxServer::k_user) + ":" +
                                                                  test::NginxServer::k_password};
    const HttpCredentials wrong{HttpCredentials::Kind::basic, "kjit:not-the-password"};
    const HttpCredentials bearer{HttpCredentials::Kind::bearer, test::NginxServer::k_token};
    const HttpCredentials wrong_bearer{HttpCredentials::Kind::bearer, "tok-0000"};

    for (const auto& [location, good, bad] : {std::tuple{"auth", right, wrong}, std::tuple{"bearer", bearer, wrong_bearer}}) {
      CAPTURE(location);
      for (const HttpCredentials& refused : {HttpCredentials{}, bad}) {
        auto s = store(nginx.url(location), {1s, 2s}, refused);
        auto put = s->put("kjit:a", value, 0ms);
        REQUIRE_FALSE(put);
        CHECK(put.error().message.find("HTTP 401") != std::string::npos);
        CHECK(put.error().message.find("KJIT_REMOTE_HTTP_AUTH_FILE") != std::string::npos);
        CHECK(put.error().message.find(refused.secret.empty() ? "\x01" : refused.secret) == std::string::npos);
        auto get = s->get("kjit:a", 1 << 20);
        REQUIRE_FALSE(get);
        CHECK(get.error().message.find("HTTP 401") != std::string::npos);
        CHECK_FALSE(s->ping());
      }
      CHECK(std::filesystem::is_empty(nginx.root(location)));  // nothing written without them
      auto s = store(nginx.url(location), {1s, 2s}, good);
      REQUIRE(s->put("kjit:a", value, 0ms));
      CHECK(**s->get("kjit:a", 1 << 20) == value);
      CHECK(s->ping());
    }
  }

  TEST_CASE("the credentials file holds user:password or a bearer token and a bad one is refused without quoting it") {
    test::TempDir tmp;
    test::write_file(tmp / "basic", "fleet:pa ss:word\n");
    auto basic = read_http_credentials((tmp / "basic").string());
    REQUIRE(basic);
    CHECK(basic->kind == HttpCredentials::Kind::basic);
    CHECK(basic->secret == "fleet:pa ss:word");
    test::write_file(tmp / "bearer", "Bearer  eyJ0eXAi.x-y_z \r\nsecond line ignored\n");
    auto bearer = read_http_credentials((tmp / "bearer").string());
    REQUIRE(bearer);
    CHECK(bearer->kind == HttpCredentials::Kind::bearer);
    CHECK(bearer->secret == "eyJ0eXAi.x-y_z");
    for (const char* bad : {"just-a-token-7f2e", "", ":no-user", "Bearer "}) {
      test::write_file(tmp / "bad", bad);
      auto r = read_http_credentials((tmp / "bad").string());
      REQUIRE_FALSE(r);
      CHECK(r.error().message.find("user:password") != std::string::npos);
      if (std::string_view(bad).size() > 8) CHECK(r.error().message.find(bad) == std::string::npos);
    }
    auto missing = read_http_credentials((tmp / "nope").string());
    REQUIRE_FALSE(missing);
    CHECK(missing.error().message.find((tmp / "nope").string()) != std::string::npos);
  }

  TEST_CASE("a 500 is a Failure and never a value") {
    if (auto why = test::http_unavailable(); !why.empty()) KJIT_SKIP(why);
    test::TempDir tmp;
    test::NginxServer nginx(tmp / "nginx");
    auto s = store(nginx.url("broken"));
    auto get = s->get("kjit:a", 1 << 20);
    REQUIRE_FALSE(get);
    CHECK(get.error().message.find("HTTP 500") != std::string::npos);
    CHECK_FALSE(get.error().timed_out());
    CHECK_FALSE(s->put("kjit:a", random_bytes(100), 0ms));
    CHECK_FALSE(s->ping());
  }

  TEST_CASE("a server slower than the timeout and one that closes mid-body are Failures within the timeouts") {
    if (auto why = test::http_unavailable(); !why.empty()) KJIT_SKIP(why);
    const RemoteTimeouts timeouts{50ms, 50ms};
    {  // headers, then a byte every 20 ms of 100000
      test::ScriptedHttpServer slow("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n",
                                    test::ScriptedHttpServer::After::trickle);
      auto s = store(slow.url(), timeouts);
      auto [got, took] = bounded([&] { return s->get("kjit:a", 1 << 20); });
      REQUIRE_FALSE(got);
      CHECK(got.error().timed_out());
      CHECK(got.error().message.find("timed out") != std::string::npos);
      CHECK(took < 1s);
    }
    {  // accepts, reads the request, never answers
      test::ScriptedHttpServer silent("", test::ScriptedHttpServer::After::hold);
      auto s = store(silent.url(), timeouts);
      auto [got, took] = bounded([&] { return s->get("kjit:a", 1 << 20); });
      REQUIRE_FALSE(got);
      CHECK(got.error().timed_out());
      CHECK(took < 1s);
      auto [pong, ping_took] = bounded([&] { return s->ping(); });
      REQUIRE_FALSE(pong);
      CHECK(pong.error().timed_out());
      CHECK(ping_took < 1s);
    }
    {  // announces 100000 bytes, sends 1000, closes
      test::ScriptedHttpServer cut("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + random_bytes(1000),
                                   test::ScriptedHttpServer::After::close);
      auto s = store(cut.url(), timeouts);
      for (int i = 0; i < 3; ++i) {  // and again on a new connection: the cut one is not reused
        auto [got, took] = bounded([&] { return s->get("kjit:a", 1 << 20); });
        REQUIRE_FALSE(got);
        CHECK_FALSE(got.error().timed_out());
        CHECK(took < 1s);
      }
      CHECK(cut.connections() == 3);
    }
    {  // chunked, cut before the last chunk
      test::ScriptedHttpServer cut("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n" + random_bytes(1000) +
                                       "\r\n3e8\r\n" + random_bytes(10),
                                   test::ScriptedHttpServer::After::close);
      auto got = bounded([&] { return store(cut.url(), timeouts)->get("kjit:a", 1 << 20); }).first;
      CHECK_FALSE(got);
    }
    {  // nobody listens
      auto got = bounded([&] { return store("http://127.0.0.1:1/kjit", timeouts)->get("kjit:a", 1 << 20); }).first;
      CHECK_FALSE(got);
    }
  }

  TEST_CASE("a value over the bound is refused from its length before it is read or as soon as it runs past") {
    if (auto why = test::http_unavailable(); !why.empty()) KJIT_SKIP(why);
    {  // announces 400 MB and sends a byte every 20 ms: refused at once
      test::ScriptedHttpServer huge("HTTP/1.1 200 OK\r\nContent-Length: 400000000\r\n\r\n",
                                    test::ScriptedHttpServer::After::trickle);
      auto s = store(huge.url(), {1s, 2s});
      auto [got, took] = bounded([&] { return s->get("kjit:a", 64 << 10); });
      REQUIRE_FALSE(got);
      CHECK(got.error().reason == Failure::Reason::too_large);
      CHECK(got.error().message.find("400000000 bytes") != std::string::npos);
      CHECK(took < 1s);
    }
    {  // no length: chunks past the bound
      std::string chunks = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
      for (int i = 0; i < 40; ++i) chunks += "1000\r\n" + random_bytes(4096) + "\r\n";
      test::ScriptedHttpServer endless(chunks, test::ScriptedHttpServer::After::trickle);
      auto [got, took] = bounded([&] { return store(endless.url(), {1s, 2s})->get("kjit:a", 64 << 10); });
      REQUIRE_FALSE(got);
      CHECK(got.error().reason == Failure::Reason::too_large);
      CHECK(took < 1s);
    }
    test::TempDir tmp;
    test::NginxServer nginx(tmp / "nginx");
    auto s = store(nginx.url());
    const std::string big = random_bytes(1 << 20), small = random_bytes(1000);
    REQUIRE(s->put("kjit:big", big, 0ms));
    REQUIRE(s->put("kjit:small", small, 0ms));
    auto got = s->get("kjit:big", (1 << 20) - 1);
    REQUIRE_FALSE(got);
    CHECK(got.error().reason == Failure::Reason::too_large);
    CHECK(**s->get("kjit:small", 1 << 20) == small);  // the next call is whole
    CHECK(**s->get("kjit:big", 1 << 20) == big);      // exactly the bound: taken
  }

  TEST_CASE("addresses: http and https parse and credentials in the URL are refused without being printed") {
    for (const char* good : {"http://cache.internal/kjit", "https://cache.internal:8443/fleet/kjit/", "http://[::1]:8080"}) {
      CAPTURE(good);
      CHECK(open_remote_store(good, {}));
    }
    auto creds = open_remote_store("https://fleet:hunter2@cache.internal/kjit", {});
    REQUIRE_FALSE(creds);
    CHECK(creds.error().message.find("hunter2") == std::string::npos);
    CHECK(creds.error().message.find("KJIT_REMOTE_HTTP_AUTH_FILE") != std::string::npos);
    for (const char* bad : {"http://", "http:///path", "http://host/x?y=1", "ftp://host/x", "gopher://h"}) {
      CAPTURE(bad);
      CHECK_FALSE(open_remote_store(bad, {}));
    }
    CHECK(redact_url("https://fleet:hunter2@cache.internal/kjit") == "https://fleet:***@cache.internal/kjit");
  }
}
