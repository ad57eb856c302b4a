// kjit::cache::parse_remote_list: KJIT_REMOTE_CACHE's spelling (shards with weights, HTTP levels
// apart), and redact_remote_list over every entry of a list.
#include "core/cache/remote/remote_list.hpp"

#include <doctest/doctest.h>

using namespace kjit::cache;

TEST_SUITE("RemoteList") {
  TEST_CASE("one address, shards with weights and HTTP levels in the order given") {
    auto one = parse_remote_list("redis://cachehost:6379/2");
    REQUIRE(one);
    REQUIRE(one->shards.size() == 1);
    CHECK(one->shards[0].url == "redis://cachehost:6379/2");
    CHECK(one->shards[0].weight == 1);
    CHECK(one->levels.empty());

    auto list = parse_remote_list(" redis://a , redis://b(2),unix:///run/r.sock( 0.5 ),https://store/kjit,http://x ");
    REQUIRE_MESSAGE(list, (list ? "" : list.error().message));
    REQUIRE(list->shards.size() == 3);
    CHECK(list->shards[0].url == "redis://a");
    CHECK(list->shards[1].url == "redis://b");
    CHECK(list->shards[1].weight == 2);
    CHECK(list->shards[2].url == "unix:///run/r.sock");
    CHECK(list->shards[2].weight == 0.5);
    REQUIRE(list->levels.size() == 2);
    CHECK(list->levels[0].url == "https://store/kjit");
    CHECK(list->levels[1].url == "http://x");

    auto empty = parse_remote_list("  ");
    REQUIRE(empty);
    CHECK(empty->shards.empty());
  }

  TEST_CASE("a shard's name is its address with the password redacted and a comma may be in a password") {
    auto list = parse_remote_list("redis://:pa,ss@a:7000(3),redis://user:s3cret@b");
    REQUIRE_MESSAGE(list, (list ? "" : list.error().message));
    REQUIRE(list->shards.size() == 2);
    CHECK(list->shards[0].url == "redis://:pa,ss@a:7000");
    CHECK(list->shards[0].name == "redis://:***@a:7000");
    CHECK(list->shards[0].weight == 3);
    CHECK(list->shards[1].name == "redis://user:***@b");
    CHECK(redact_remote_list("redis://:pa,ss@a:7000(3),redis://user:s3cret@b") ==
          "redis://:***@a:7000(3),redis://user:***@b");
  }

  TEST_CASE("bad entries are refused naming the entry and never its password") {
    const char* bad[][2] = {
        {"redis://a,,redis://b", "redis://a,"},  // an empty entry
        {"redis://a,", "redis://a,"},            // a trailing comma
        {",redis://a", "it is empty"},           // a leading one
        {"redis://a, b", "redis://a, b"},        // no scheme
        {"redis://a(0)", "not a positive number"},
        {"redis://a(-1)", "not a positive number"},
        {"redis://a(x)", "not a positive number"},
        {"redis://a(inf)", "not a positive number"},
        {"redis://a()", "not a positive number"},
        {"redis://a)", "without its"},
        {"redis://a(2", "parenthesis"},
        {"ftp://a", "unknown scheme \"ftp\""},
        {"cachehost:6379", "not an address"},
        {"https://a(2)", "a weight is for"},
        {"redis://a,redis://a", "named twice"},
        {"redis://:one@a,redis://:two@a", "named twice"},  // one server, whatever its password
    };
    for (const auto& [text, what] : bad) {
      auto r = parse_remote_list(text);
      REQUIRE_MESSAGE(!r, text);
      CHECK_MESSAGE(r.error().message.find(what) != std::string::npos, text, " -> ", r.error().message);
      CHECK_MESSAGE(r.error().message.find("expected redis://") != std::string::npos, r.error().message);
    }
    auto secret = parse_remote_list("redis://:s3cret@a(zero)");
    REQUIRE_FALSE(secret);
    CHECK(secret.error().message.find("s3cret") == std::string::npos);
    CHECK(secret.error().message.find("redis://:***@a") != std::string::npos);
  }
}
