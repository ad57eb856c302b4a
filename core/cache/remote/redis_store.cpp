// The Redis backend of RemoteStore, through hiredis (synchronous API). One connection, opened on
// first use and dropped after any error (the next call reconnects; a call that failed on a
// connection the server had closed is tried once more on a new one). Every call is bounded by the
// connect timeout (opening) and the reply timeout: each socket write, and the whole reply from
// the moment the command was sent (a server that trickles a reply a byte at a time is cut off at
// that deadline, not at each read). A value longer than the caller takes is refused from the
// length its reply announces, before its body is read (the connection is then dropped). A server
// that went away must not kill the process with SIGPIPE: each call blocks SIGPIPE in the calling
// thread and swallows one it raised.
#include "core/cache/remote/remote_store.hpp"

#include "core/cache/remote/remote_list.hpp"
#include "core/system/blocked_signal.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <ctime>
#include <limits>
#include <poll.h>
#include <pthread.h>
#include <vector>

namespace kjit::cache {
namespace {

struct RedisAddress {
  std::string host;  // empty for a unix socket
  int port = 6379;
  std::string socket_path;
  std::string user, password;
  int db = 0;
};

system::Failure bad_redis_url(const std::string& url, std::string_view why) {
  return system::Failure{fmt::format("remote cache address \"{}\": {} (expected redis://[[user]:password@]host[:port][/db] "
                             "or unix:///path/to/redis.sock[?db=N])",
                             redact_url(url), why)};
}

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

system::Result<RedisAddress> parse_url(const std::string& url) {
  RedisAddress a;
  std::string_view s = url;
  if (s.substr(0, 7) == "unix://") {
    s.remove_prefix(7);
    if (auto q = s.find("?db="); q != std::string_view::npos) {
      auto db = parse_int(s.substr(q + 4));
      if (!db) return bad_redis_url(url, "the database after ?db= is not a number");
      a.db = *db;
      s = s.substr(0, q);
    }
    if (s.empty() || s[0] != '/') return bad_redis_url(url, "the socket path must be absolute");
    a.socket_path = s;
    return a;
  }
  if (s.substr(0, 8) != "redis://") return bad_redis_url(url, "unknown scheme");
  s.remove_prefix(8);
  if (auto at = s.rfind('@'); at != std::string_view::npos) {
    std::string_view cred = s.substr(0, at);
    s.remove_prefix(at + 1);
    if (auto colon = cred.find(':'); colon != std::string_view::npos) {
      a.user = cred.substr(0, colon);
      a.password = cred.substr(colon + 1);
    } else {
      a.password = cred;
    }
  }
  if (auto slash = s.find('/'); slash != std::string_view::npos) {
    std::string_view db = s.substr(slash + 1);
    if (!db.empty()) {
      auto n = parse_int(db);
      if (!n) return bad_redis_url(url, "the database after / is not a number");
      a.db = *n;
    }
    s = s.substr(0, slash);
  }
  if (auto colon = s.rfind(':'); colon != std::string_view::npos && s.find(']') == std::string_view::npos) {
    auto port = parse_int(s.substr(colon + 1));
    if (!port || *port == 0 || *port > 65535) return bad_redis_url(url, "the port is not a number from 1 to 65535");
    a.port = *port;
    s = s.substr(0, colon);
  }
  if (s.empty()) return bad_redis_url(url, "no host");
  a.host = s;
  return a;
}

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// The length a bulk-string reply announces at the reader's cursor ("$<n>\r\n"): nullopt when the
// reader holds no such header (another reply, a nil "$-1", nothing yet); `incomplete` while only
// part of the header has arrived.
struct BulkHeader {
  bool incomplete = false;
  std::optional<std::uint64_t> length;
};

BulkHeader bulk_header(const redisReader* reader) {
  if (reader == nullptr || reader->buf == nullptr || reader->pos >= reader->len || reader->buf[reader->pos] != '$') {
    return {};
  }
  const char* begin = reader->buf + reader->pos + 1;
  const char* end = reader->buf + reader->len;
  const char* cr = std::find(begin, end, '\r');
  if (cr == end) return {.incomplete = true};
  std::uint64_t n = 0;
  auto [p, ec] = std::from_chars(begin, cr, n);
  if (ec != std::errc{} || p != cr) return {};  // "$-1" (nil) or damage: the reader decides
  return {.length = n};
}

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

class RedisStore final : public RemoteStore {
public:
  RedisStore(std::string url, RedisAddress address, RemoteTimeouts timeouts)
      : m_url(redact_url(url)), m_address(std::move(address)), m_timeouts(timeouts) {}
  ~RedisStore() override { disconnect(); }

  system::Result<std::optional<std::string>> get(std::string_view name, std::uint64_t max_size) override {
    auto r = command({"GET", name}, max_size);
    if (!r) return r.error();
    redisReply* reply = r->get();
    if (reply->type == REDIS_REPLY_NIL) return std::optional<std::string>{};
    if (reply->type != REDIS_REPLY_STRING) return unexpected("GET", reply);
    return std::optional<std::string>{std::string(reply->str, reply->len)};
  }

  system::Result<void> put(std::string_view name, std::string_view value, std::chrono::milliseconds ttl) override {
    const std::string px = std::to_string(ttl.count());
    auto r = ttl.count() > 0 ? command({"SET", name, value, "PX", px}) : command({"SET", name, value});
    if (!r) return r.error();
    if (r->get()->type != REDIS_REPLY_STATUS) return unexpected("SET", r->get());
    return {};
  }

  system::Result<bool> put_unless_prefixed(std::string_view name, std::string_view value, std::chrono::milliseconds ttl,
                                           const std::vector<std::string_view>& keep) override {
    // ARGV: the value, its expiry in ms (0: none), then the prefixes that keep what is there.
    static constexpr std::string_view script =
        "local head = redis.call('getrange', KEYS[1], 0, 63) "
        "for i = 3, #ARGV do if string.sub(head, 1, #ARGV[i]) == ARGV[i] then return 0 end end "
        "if ARGV[2] == '0' then redis.call('set', KEYS[1], ARGV[1]) "
        "else redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) end "
        "return 1";
    const std::string px = std::to_string(std::max<long long>(0, ttl.count()));
    std::vector<std::string_view> args{"EVAL", script, "1", name, value, px};
    for (std::string_view k : keep) {
      if (!k.empty()) args.push_back(k);
    }
    auto r = command(args);
    if (!r) return r.error();
    if (r->get()->type != REDIS_REPLY_INTEGER) return unexpected("EVAL (conditional SET)", r->get());
    return r->get()->integer == 1;
  }

  // SET NX PX, in one script with the rule that a lock with no expiry is stale at once (kjit's
  // own locks always carry one: such a key was set by hand or by something else, and would hold
  // every node for the whole lock timeout): it is taken over, with an expiry.
  system::Result<bool> try_lock(std::string_view name, std::string_view token, std::chrono::milliseconds ttl) override {
    static constexpr std::string_view script =
        "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end "
        "if redis.call('pttl', KEYS[1]) == -1 then redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end "
        "return 0";
    const std::string px = std::to_string(std::max<long long>(1, ttl.count()));
    auto r = command({"EVAL", script, "1", name, token, px});
    if (!r) return r.error();
    if (r->get()->type != REDIS_REPLY_INTEGER) return unexpected("EVAL (lock)", r->get());
    return r->get()->integer == 1;
  }

  system::Result<bool> refresh_lock(std::string_view name, std::string_view token, std::chrono::milliseconds ttl) override {
    static constexpr std::string_view script =
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) "
        "else return 0 end";
    const std::string px = std::to_string(std::max<long long>(1, ttl.count()));
    auto r = command({"EVAL", script, "1", name, token, px});
    if (!r) return r.error();
    if (r->get()->type != REDIS_REPLY_INTEGER) return unexpected("EVAL (refresh lock)", r->get());
    return r->get()->integer == 1;
  }

  system::Result<void> unlock(std::string_view name, std::string_view token) override {
    static constexpr std::string_view script =
        "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
    auto r = command({"EVAL", script, "1", name, token});
    if (!r) return r.error();
    if (r->get()->type != REDIS_REPLY_INTEGER) return unexpected("EVAL (unlock)", r->get());
    return {};
  }

  system::Result<std::string> ping() override {
    auto r = command({"PING"});
    if (!r) return r.error();
    if (r->get()->type != REDIS_REPLY_STATUS) return unexpected("PING", r->get());
    auto info = command({"INFO", "server"});
    if (!info) return info.error();
    std::string version = "?";
    if (info->get()->type == REDIS_REPLY_STRING) {
      std::string_view text(info->get()->str, info->get()->len);
      if (auto p = text.find("redis_version:"); p != std::string_view::npos) {
        text.remove_prefix(p + 14);
        version = text.substr(0, text.find_first_of("\r\n"));
      }
    }
    return "redis " + version;
  }

  const std::string& url() const override { return m_url; }

  // INFO's memory and replication sections: a noeviction server at maxmemory (every write
  // answered OOM) or a read-only replica.
  std::optional<std::string> refuses_writes() override {
    auto info = command({"INFO"});
    if (!info || info->get()->type != REDIS_REPLY_STRING) return std::nullopt;
    const std::string_view text(info->get()->str, info->get()->len);
    auto field = [&](std::string_view name) -> std::string_view {
      const std::string prefix = "\n" + std::string(name) + ":";
      const auto p = text.find(prefix);
      if (p == std::string_view::npos) return {};
      std::string_view v = text.substr(p + prefix.size());
      return v.substr(0, v.find_first_of("\r\n"));
    };
    auto number = [](std::string_view v) {
      std::uint64_t n = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      return ec == std::errc{} && p == v.data() + v.size() ? n : 0;
    };
    if (field("role") == "slave" && field("slave_read_only") == "1") return "a read-only replica";
    const std::uint64_t used = number(field("used_memory")), max = number(field("maxmemory"));
    const std::string_view policy = field("maxmemory_policy");
    if (max > 0 && used >= max && (policy == "noeviction" || policy.starts_with("volatile-"))) {
      return fmt::format("full: used_memory {} of maxmemory {} bytes, policy {}", used, max, policy);
    }
    return std::nullopt;
  }

private:
  // A server answering that it takes no writes now (OOM at maxmemory, a read-only replica, a
  // failed save): alive, and still serving reads.
  static bool is_refusal(std::string_view error) {
    for (std::string_view code : {"OOM ", "READONLY ", "MISCONF ", "NOREPLICAS "}) {
      if (error.starts_with(code)) return true;
    }
    return error.find("OOM command not allowed") != std::string_view::npos;  // from inside a script
  }

  system::Failure unexpected(std::string_view what, const redisReply* reply) {
    std::string detail = reply->type == REDIS_REPLY_ERROR ? std::string(reply->str, reply->len)
                                                          : fmt::format("a reply of type {}", reply->type);
    system::Failure f{fmt::format("{} on remote cache {}: {}", what, m_url, detail)};
    if (reply->type == REDIS_REPLY_ERROR && is_refusal(detail)) f.reason = system::Failure::Reason::refused;
    return f;
  }

  void disconnect() {
    if (m_context != nullptr) {
      redisFree(m_context);
      m_context = nullptr;
    }
  }

  // The connection's error as a Failure (timed_out for a timeout), and the connection dropped.
  system::Failure connection_failure(std::string_view attempt, int saved_errno) {
    std::string why = m_context != nullptr && m_context->errstr[0] != '\0' ? m_context->errstr
                                                                           : std::strerror(saved_errno);
    const bool timeout = saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == ETIMEDOUT ||
                         saved_errno == EINPROGRESS || why.find("timed out") != std::string::npos ||
                         why.find("temporarily unavailable") != std::string::npos;
    disconnect();
    system::Failure f{fmt::format("{} on remote cache {}: {}", attempt, m_url, why)};
    if (timeout) {
      f.reason = system::Failure::Reason::timed_out;
      f.message += fmt::format(" (timed out: connect {} ms, reply {} ms)", m_timeouts.connect.count(),
                               m_timeouts.reply.count());
    }
    return f;
  }

  system::Result<void> connect() {
    if (m_context != nullptr) return {};
    errno = 0;
    const timeval tv = to_timeval(m_timeouts.connect);
    m_context = m_address.socket_path.empty() ? redisConnectWithTimeout(m_address.host.c_str(), m_address.port, tv)
                                              : redisConnectUnixWithTimeout(m_address.socket_path.c_str(), tv);
    if (m_context == nullptr) return system::Failure{fmt::format("connecting to remote cache {}: out of memory", m_url)};
    if (m_context->err != 0) return connection_failure("connecting", errno);
    if (redisSetTimeout(m_context, to_timeval(m_timeouts.reply)) != REDIS_OK) {
      return connection_failure("setting the reply timeout", errno);
    }
    if (!m_address.password.empty()) {
      auto r = m_address.user.empty() ? raw_command({"AUTH", m_address.password})
                                      : raw_command({"AUTH", m_address.user, m_address.password});
      if (!r) return r.error();
      if (r->get()->type == REDIS_REPLY_ERROR) {
        system::Failure f = unexpected("AUTH", r->get());
        disconnect();
        return f;
      }
    }
    if (m_address.db != 0) {
      auto r = raw_command({"SELECT", std::to_string(m_address.db)});
      if (!r) return r.error();
      if (r->get()->type == REDIS_REPLY_ERROR) {
        system::Failure f = unexpected("SELECT", r->get());
        disconnect();
        return f;
      }
    }
    return {};
  }

  // Sends `args`, then reads one reply by the deadline (now + the reply timeout, once sent). A
  // bulk reply announcing more than `max_bulk` bytes is refused before its body is read.
  system::Result<Reply> raw_command(const std::vector<std::string_view>& args,
                            std::uint64_t max_bulk = std::numeric_limits<std::uint64_t>::max()) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (std::string_view a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    const std::string what(*args.begin());
    errno = 0;
    if (redisAppendCommandArgv(m_context, static_cast<int>(argv.size()), argv.data(), lens.data()) != REDIS_OK) {
      return connection_failure(what, errno);
    }
    for (int done = 0; done == 0;) {  // each write bounded by SO_SNDTIMEO (the reply timeout)
      errno = 0;
      if (redisBufferWrite(m_context, &done) != REDIS_OK) return connection_failure(what, errno);
    }
    const auto deadline = std::chrono::steady_clock::now() + m_timeouts.reply;
    for (;;) {
      const BulkHeader header = bulk_header(m_context->reader);
      if (header.length && *header.length > max_bulk) {
        disconnect();  // the body is still on its way: this connection cannot be reused
        return system::Failure{fmt::format("{} on remote cache {}: the value is {} bytes, over the {} bytes this process "
                                   "takes (KJIT_REMOTE_MAX_VALUE); not read",
                                   what, m_url, *header.length, max_bulk),
                       system::Failure::Reason::too_large};
      }
      if (!header.incomplete) {
        void* reply = nullptr;
        errno = 0;
        if (redisGetReplyFromReader(m_context, &reply) != REDIS_OK) return connection_failure(what, errno);
        if (reply != nullptr) return Reply(static_cast<redisReply*>(reply));
      }
      if (auto ready = wait_readable(deadline); !ready) return reply_timeout(what);
      errno = 0;
      if (redisBufferRead(m_context) != REDIS_OK) return connection_failure(what, errno);
    }
  }

  // Whether the connection has something to read before `deadline` (EINTR: poll again).
  bool wait_readable(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{m_context->fd, POLLIN, 0};
      const int n = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1 << 30)));
      if (n > 0) return true;  // readable, or an error/hang-up that the read reports
      if (n == 0) return false;
      if (errno != EINTR) return true;  // the read reports it
    }
  }

  system::Failure reply_timeout(std::string_view attempt) {
    disconnect();
    return system::Failure{fmt::format("{} on remote cache {}: no whole reply within {} ms (timed out)", attempt, m_url,
                               m_timeouts.reply.count()),
                   system::Failure::Reason::timed_out};
  }

  // A connection the server closed while idle (it restarted, or timed the client out) fails on
  // its next use with an error that is no timeout: that call is tried once more, on a new one.
  system::Result<Reply> command(const std::vector<std::string_view>& args,
                        std::uint64_t max_bulk = std::numeric_limits<std::uint64_t>::max()) {
    system::BlockedSignal no_sigpipe(SIGPIPE);
    const bool reused = m_context != nullptr;
    if (auto c = connect(); !c) return c.error();
    auto r = raw_command(args, max_bulk);
    if (r || !reused || r.error().reason != system::Failure::Reason::error) return r;
    if (auto c = connect(); !c) return c.error();
    return raw_command(args, max_bulk);
  }

  std::string m_url;
  RedisAddress m_address;
  RemoteTimeouts m_timeouts;
  redisContext* m_context = nullptr;
};

}  // namespace

std::string redact_url(std::string_view url) { return redact_remote_list(url); }

system::Result<std::unique_ptr<RemoteStore>> open_redis_store(const std::string& url, const RemoteOpenOptions& options) {
  const RemoteTimeouts timeouts = options.timeouts;
  auto address = parse_url(url);
  if (!address) return address.error();
  if (timeouts.connect.count() <= 0 || timeouts.reply.count() <= 0) {
    return system::Failure{fmt::format("remote cache {}: timeouts must be positive", redact_url(url))};
  }
  return std::unique_ptr<RemoteStore>(std::make_unique<RedisStore>(url, std::move(*address), timeouts));
}

}  // namespace kjit::cache
