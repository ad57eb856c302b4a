// The remote tier's HTTP level end to end, through real kjit processes, a real redis-server and a
// real nginx with WebDAV PUT: a machine whose Redis lost the values hits HTTP and writes them back
// to Redis; HTTP trouble (401, 500, a slow server, one that closes mid-body, damaged values) fails
// no request, loads nothing wrong and leaves the disk cache clean, and the credentials never show;
// `kjit cache remote ping` asks every level.
#include "support/helpers.hpp"
#include "support/http_server.hpp"
#include "support/redis_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>

namespace {

using Run = kjit::test::CommandResult;

const std::string k_kjit = std::string(KJIT_BINARY_DIR) + "/cli/kjit";

// Why these cases cannot run here, or empty.
std::string http_unavailable() {
  if (kjit::test::NginxServer::binary().empty()) {
    return "nginx is not installed (Debian's nginx-light; or set KJIT_NGINX)";
  }
  Run probe = kjit::test::run_command(k_kjit + " cache remote ping --remote http://127.0.0.1:1/x 2>&1");
  if (probe.out.find("built without the HTTP store") != std::string::npos) return "kjit was built without the HTTP store";
  return {};
}

std::string write_kernels(const kjit::test::TempDir& dir, int n) {
  std::string files;
  for (int i = 0; i < n; ++i) {
    auto f = dir / fmt::format("h{}.cu", i);
    kjit::test::write_file(f, "extern \"C\" __global__ void h" + std::to_string(i) + "(float* x) { x[threadIdx.x] *= " +
                                  std::to_string(i + 5) + ".0f; }\n");
    files += " " + f.string();
  }
  return files;
}

// `kjit ARGS` with KJIT_REMOTE_CACHE and extra environment; stderr into `err`.
Run kjit_remote(const std::string& url, const std::string& env, const std::string& args, const std::string& err) {
  return kjit::test::run_command(fmt::format("KJIT_REMOTE_CACHE='{}' KJIT_REMOTE_TIMEOUT=100ms {} {} {} 2>{}", url, env,
                                             k_kjit, args, err));
}

nlohmann::json parse(const Run& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), r.out);
  return j;
}

std::map<std::string, int> outcome_counts(const nlohmann::json& results) {
  std::map<std::string, int> counts;
  for (const auto& j : results) counts[j.value("outcome", std::string("error"))]++;
  return counts;
}

std::size_t files_in(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return 0;
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir), {}));
}

}  // namespace

TEST_SUITE("cli remote http") {
  TEST_CASE("a machine whose Redis lost the values hits the HTTP level and writes them back to Redis") {
    if (auto why = http_unavailable(); !why.empty()) KJIT_SKIP(why);
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    kjit::test::NginxServer nginx(dir / "nginx");
    const std::string files = write_kernels(dir, 3);
    const std::string url = redis.url() + "," + nginx.url();
    const std::string err = (dir / "err").string();
    auto cache = [&](const char* name) { return "--cache-dir " + (dir / name).string(); };

    auto first = parse(kjit_remote(url, "", cache("a") + " compile --json --arch sm_90" + files, err));
    CHECK(outcome_counts(first)["compiled"] == 3);
    CHECK(redis.keys("kjit:*").size() == 3);
    CHECK(files_in(nginx.root() / "ac") == 3);

    redis.restart();  // empty
    auto second = parse(kjit_remote(url, "", cache("b") + " compile --json --arch sm_90" + files, err));
    CHECK(outcome_counts(second)["remote_hit"] == 3);
    for (int i = 0; i < 3; ++i) CHECK(second[i]["key"] == first[i]["key"]);
    auto stats = parse(kjit_remote(url, "", cache("b") + " --json cache stats", err));
    CHECK(stats["remote"]["http_hits"] == 3);
    CHECK(stats["remote"]["backfills"] == 3);
    CHECK(stats["compiles"] == 0);
    CHECK(redis.keys("kjit:*").size() == 3);  // written back before the process ended

    nginx.kill();  // Redis answers alone now
    auto third = parse(kjit_remote(url, "", cache("c") + " compile --json --arch sm_90" + files, err));
    CHECK(outcome_counts(third)["remote_hit"] == 3);
    auto stats3 = parse(kjit_remote(url, "", cache("c") + " --json cache stats", err));
    CHECK(stats3["remote"]["http_hits"] == 0);
    CHECK(stats3["remote"]["http_errors"] == 0);  // never asked
    for (const char* node : {"b", "c"}) {
      Run verify = kjit::test::run_command(fmt::format("{} {} --json cache verify 2>/dev/null", k_kjit, cache(node)));
      CHECK(verify.code == 0);
      CHECK(parse(verify)["ok"] == 3);
    }
  }

  TEST_CASE("HTTP trouble fails no request loads nothing wrong leaves the disk clean and never shows the credentials") {
    if (auto why = http_unavailable(); !why.empty()) KJIT_SKIP(why);
    kjit::test::TempDir dir;
    kjit::test::NginxServer nginx(dir / "nginx");
    const std::string files = write_kernels(dir, 2);
    const std::string err = (dir / "err").string();
    auto cache = [&](const std::string& name) { return "--cache-dir " + (dir / name).string(); };
    auto good = parse(kjit_remote(nginx.url(), "", cache("writer") + " compile --json --arch sm_90" + files, err));
    REQUIRE(outcome_counts(good)["compiled"] == 2);
    REQUIRE(files_in(nginx.root() / "ac") == 2);
    for (const auto& f : std::filesystem::directory_iterator(nginx.root() / "ac")) {  // damage both values
      std::string v = kjit::test::read_file(f.path());
      v[v.size() / 2] = static_cast<char>(v[v.size() / 2] ^ 0x04);
      kjit::test::write_file(f.path(), v);
    }
    kjit::test::ScriptedHttpServer slow("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n",
                                        kjit::test::ScriptedHttpServer::After::trickle);
    kjit::test::ScriptedHttpServer cut("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nKJSG-partial",
                                       kjit::test::ScriptedHttpServer::After::close);
    kjit::test::write_file(dir / "wrong", "kjit:wrongpass-77\n");
    const std::string wrong = "KJIT_REMOTE_HTTP_AUTH_FILE=" + (dir / "wrong").string();
    const std::vector<std::tuple<std::string, std::string, std::string>> cases{
        {"no-credentials", nginx.url("auth"), ""}, {"wrong-credentials", nginx.url("auth"), wrong},
        {"500", nginx.url("broken"), ""},          {"slow", slow.url(), ""},
        {"cut", cut.url(), ""},                    {"damaged", nginx.url(), ""}};
    for (const auto& [name, url, env] : cases) {
      CAPTURE(name);
      auto r = parse(kjit_remote(url, env, cache(name) + " compile --json --arch sm_90 -o " + (dir / name).string() +
                                               "-out" + files,
                                 err));
      REQUIRE(r.is_array());
      CHECK(outcome_counts(r)["compiled"] == 2);
      for (int i = 0; i < 2; ++i) CHECK(r[i]["key"] == good[i]["key"]);
      CHECK(kjit::test::read_file(dir / (name + "-out") / "h1.ptx").find("0f40C00000") != std::string::npos);  // 6.0f
      const std::string log = kjit::test::read_file(err);
      CHECK(log.find("wrongpass") == std::string::npos);
      Run verify = kjit::test::run_command(fmt::format("{} {} --json cache verify 2>/dev/null", k_kjit, cache(name)));
      CHECK(verify.code == 0);
      CHECK(parse(verify)["ok"] == 2);
      CHECK(parse(verify)["damaged"].empty());
    }
    // The right credentials: what one node sends behind auth, the next one loads.
    kjit::test::write_file(dir / "right", fmt::format("{}:{}\n", kjit::test::NginxServer::k_user,
                                                      kjit::test::NginxServer::k_password));
    const std::string right = "KJIT_REMOTE_HTTP_AUTH_FILE=" + (dir / "right").string();
    auto sent = parse(kjit_remote(nginx.url("auth"), right, cache("auth1") + " compile --json --arch sm_90" + files, err));
    CHECK(outcome_counts(sent)["compiled"] == 2);
    auto loaded = parse(kjit_remote(nginx.url("auth"), right, cache("auth2") + " compile --json --arch sm_90" + files, err));
    CHECK(outcome_counts(loaded)["remote_hit"] == 2);
  }

  TEST_CASE("kjit cache remote ping asks every level and exits 1 when one does not answer") {
    if (auto why = http_unavailable(); !why.empty()) KJIT_SKIP(why);
    kjit::test::TempDir dir;
    kjit::test::RedisServer redis(dir / "redis");
    kjit::test::NginxServer nginx(dir / "nginx");
    auto ping = [&](const std::string& url, const std::string& env = "") {
      return kjit::test::run_command(fmt::format("{} {} --cache-dir {} --json cache remote ping --remote '{}' 2>&1", env,
                                                 k_kjit, (dir / "c").string(), url));
    };
    Run both = ping(redis.url() + "," + nginx.url());
    CHECK(both.code == 0);
    auto j = parse(both);
    CHECK(j["ok"] == true);
    CHECK(j["server"].get<std::string>().starts_with("redis "));
    CHECK(j["server"].get<std::string>().find("; http 404 nginx") != std::string::npos);

    Run auth = ping(nginx.url("auth"));
    CHECK(auth.code == 1);
    CHECK(parse(auth)["error"]["message"].get<std::string>().find("HTTP 401") != std::string::npos);
    kjit::test::write_file(dir / "token", fmt::format("Bearer {}\n", kjit::test::NginxServer::k_token));
    Run bearer = ping(nginx.url("bearer"), "KJIT_REMOTE_HTTP_AUTH_FILE=" + (dir / "token").string());
    CHECK(bearer.code == 0);
    CHECK(bearer.out.find(kjit::test::NginxServer::k_token) == std::string::npos);

    Run broken = ping(redis.url() + "," + nginx.url("broken"));
    CHECK(broken.code == 1);
    CHECK(parse(broken)["error"]["message"].get<std::string>().find("HTTP 500") != std::string::npos);
    Run with_creds = ping("https://fleet:hunter2@cache.internal/kjit");
    CHECK(with_creds.code == 2);
    CHECK(with_creds.out.find("hunter2") == std::string::npos);
  }
}
