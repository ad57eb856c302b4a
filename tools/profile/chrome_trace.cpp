#include "tools/profile/chrome_trace.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace kjit::profile {
namespace {

// GPUs as processes of their own, numbered past any real pid.
constexpr std::int64_t k_gpu_pid_base = 1'000'000'000;

// Written with fmt straight into one buffer (a trace holds several events per launch, and a
// JSON object per event costs ten times more); strings go through escaped().
using Out = fmt::memory_buffer;

struct Escaped {
  std::string_view text;
};

}  // namespace
}  // namespace kjit::profile

template <>
struct fmt::formatter<kjit::profile::Escaped> : fmt::formatter<std::string_view> {
  template <class Context>
  auto format(const kjit::profile::Escaped& e, Context& ctx) const {
    auto out = ctx.out();
    *out++ = '"';
    for (char c : e.text) {
      switch (c) {
      case '"': out = fmt::format_to(out, "\\\""); break;
      case '\\': out = fmt::format_to(out, "\\\\"); break;
      case '\n': out = fmt::format_to(out, "\\n"); break;
      case '\t': out = fmt::format_to(out, "\\t"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out = fmt::format_to(out, "\\u{:04x}", static_cast<unsigned>(c));
        else *out++ = c;
      }
    }
    *out++ = '"';
    return out;
  }
};

namespace kjit::profile {
namespace {

Escaped esc(std::string_view s) { return Escaped{s}; }

class Writer {
public:
  explicit Writer(Out& out) : m_out(out) {}
  // Starts the next event: "{" after a comma when needed.
  Out& next() {
    if (!m_first) m_out.push_back(',');
    m_first = false;
    m_out.push_back('\n');
    return m_out;
  }

private:
  Out& m_out;
  bool m_first = true;
};

}  // namespace

std::string chrome_trace(const Recording& rec) {
  const std::uint64_t origin = rec.start;
  auto us = [&](std::uint64_t ns) { return ns >= origin ? static_cast<double>(ns - origin) / 1e3 : 0.0; };
  auto dur = [](std::uint64_t a, std::uint64_t b) { return b > a ? static_cast<double>(b - a) / 1e3 : 0.0; };
  const std::int64_t host_pid = rec.pid;

  std::unordered_map<std::string, const KnownKernel*> known;
  for (const auto& k : rec.known) known.emplace(k.mangled, &k);
  // Each kernel name's display name and arguments, once.
  std::vector<std::string> display(rec.names.size()), name_args(rec.names.size());
  std::vector<bool> made(rec.names.size(), false);
  auto names_of = [&](std::uint32_t index) {
    if (!made[index]) {
      made[index] = true;
      const std::string& mangled = rec.names[index];
      display[index] = short_kernel_name(mangled);
      name_args[index] = fmt::format("\"mangled name\":{}", esc(mangled));
      if (auto it = known.find(mangled); it != known.end()) {
        if (!it->second->expression.empty()) display[index] = it->second->expression;
        name_args[index] += fmt::format(",\"program\":{},\"cache key\":{},\"cache outcome\":{}",
                                        esc(it->second->program), esc(it->second->key), esc(it->second->outcome));
      }
    }
  };

  Out out;
  out.reserve(256 * (rec.kernels.size() * 2 + rec.launches.size() * 2 + rec.ranges.size()) + 4096);
  fmt::format_to(std::back_inserter(out), "{{\"displayTimeUnit\":\"ms\",\"otherData\":{{\"producer\":\"kjit profiler\","
                                          "\"dropped records\":{}}},\"traceEvents\":[",
                 rec.dropped);
  Writer w(out);
  auto to = [](Out& o) { return std::back_inserter(o); };

  std::set<std::uint32_t> host_threads;
  std::set<std::pair<std::uint32_t, std::uint32_t>> streams;  // device, stream
  std::unordered_set<std::uint32_t> launched;  // correlations with a kernel (for the flow's start)
  launched.reserve(rec.kernels.size());
  for (const auto& k : rec.kernels) launched.insert(k.correlation);

  for (const auto& l : rec.launches) {
    host_threads.insert(l.thread);
    fmt::format_to(to(w.next()),
                   "{{\"name\":{},\"cat\":\"launch\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},\"pid\":{},\"tid\":{},"
                   "\"args\":{{\"correlation\":{}}}}}",
                   esc(rec.names[l.api]), us(l.start), dur(l.start, l.end), host_pid, l.thread, l.correlation);
    if (launched.count(l.correlation) != 0) {
      fmt::format_to(to(w.next()),
                     "{{\"name\":\"launch\",\"cat\":\"launch\",\"ph\":\"s\",\"id\":{},\"ts\":{:.3f},\"pid\":{},\"tid\":{}}}",
                     l.correlation, us(l.start), host_pid, l.thread);
    }
  }
  for (const auto& r : rec.ranges) {
    host_threads.insert(r.thread);
    const bool user = r.phase == Phase::user;
    std::string args;
    if (user) {
      args = fmt::format("\"range\":{}", esc(r.name));
    } else {
      args = fmt::format("\"program\":{}", esc(r.name));
      if (!r.key.empty()) args += fmt::format(",\"key\":{}", esc(r.key));
      if (!r.outcome.empty()) args += fmt::format(",\"outcome\":{}", esc(r.outcome));
    }
    const std::string name = user ? r.name : fmt::format("kjit {}", to_string(r.phase));
    fmt::format_to(to(w.next()),
                   "{{\"name\":{},\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},\"pid\":{},\"tid\":{},"
                   "\"args\":{{{}}}}}",
                   esc(name), user ? "user" : "kjit", us(r.start), dur(r.start, r.end), host_pid, r.thread, args);
  }
  // Measured launches: their counters as the kernel event's arguments.
  std::unordered_map<std::uint32_t, std::string> measured;
  measured.reserve(rec.metrics.samples.size());
  for (const auto& sample : rec.metrics.samples) {
    std::string args = ",\"hardware counters\":{";
    for (std::size_t i = 0; i < sample.values.size() && i < rec.metrics.counters.size(); ++i) {
      const double v = sample.values[i];
      args += fmt::format("{}{}:{}", i == 0 ? "" : ",", esc(rec.metrics.counters[i]),
                          std::isfinite(v) ? fmt::format("{}", v) : std::string("null"));
    }
    args += fmt::format("}},\"serialized and replayed\":{}", rec.metrics.passes);
    measured.emplace(sample.correlation, std::move(args));
  }
  auto metrics_of = [&](std::uint32_t correlation) -> std::string_view {
    auto it = measured.find(correlation);
    return it == measured.end() ? std::string_view() : std::string_view(it->second);
  };
  std::unordered_set<std::uint32_t> flowed;
  flowed.reserve(rec.kernels.size());
  for (const auto& k : rec.kernels) {
    streams.insert({k.device, k.stream});
    names_of(k.name);
    const std::int64_t pid = k_gpu_pid_base + k.device;
    fmt::format_to(to(w.next()),
                   "{{\"name\":{},\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},\"pid\":{},\"tid\":{},"
                   "\"args\":{{\"grid\":[{},{},{}],\"block\":[{},{},{}],\"registers per thread\":{},"
                   "\"static shared memory\":{},\"dynamic shared memory\":{},\"device\":{},\"stream\":{},"
                   "\"correlation\":{},{}{}}}}}",
                   esc(display[k.name]), us(k.start), dur(k.start, k.end), pid, k.stream, k.grid[0], k.grid[1],
                   k.grid[2], k.block[0], k.block[1], k.block[2], k.registers, k.static_shared, k.dynamic_shared,
                   k.device, k.stream, k.correlation, name_args[k.name], metrics_of(k.correlation));
    if (flowed.insert(k.correlation).second) {
      fmt::format_to(to(w.next()),
                     "{{\"name\":\"launch\",\"cat\":\"launch\",\"ph\":\"f\",\"bp\":\"e\",\"id\":{},\"ts\":{:.3f},"
                     "\"pid\":{},\"tid\":{}}}",
                     k.correlation, us(k.start), pid, k.stream);
    }
  }
  for (const auto& t : rec.transfers) {
    streams.insert({t.device, t.stream});
    fmt::format_to(to(w.next()),
                   "{{\"name\":\"{}\",\"cat\":\"memory\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},\"pid\":{},\"tid\":{},"
                   "\"args\":{{\"bytes\":{},\"device\":{},\"stream\":{},\"correlation\":{}}}}}",
                   to_string(static_cast<TransferKind>(t.kind)), us(t.start), dur(t.start, t.end),
                   k_gpu_pid_base + t.device, t.stream, t.bytes, t.device, t.stream, t.correlation);
  }

  // Names for the tracks: the host first, then each GPU and its streams.
  auto meta = [&](const char* name, std::int64_t pid, std::int64_t tid, const std::string& args) {
    fmt::format_to(to(w.next()), "{{\"name\":\"{}\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{{}}}}}", name, pid,
                   tid, args);
  };
  meta("process_name", host_pid, 0, fmt::format("\"name\":\"host (pid {})\"", rec.pid));
  meta("process_sort_index", host_pid, 0, "\"sort_index\":0");
  for (auto t : host_threads) meta("thread_name", host_pid, t, fmt::format("\"name\":\"thread {}\"", t));
  std::set<std::uint32_t> devices;
  for (const auto& [device, stream] : streams) {
    const std::int64_t pid = k_gpu_pid_base + device;
    if (devices.insert(device).second) {
      meta("process_name", pid, 0, fmt::format("\"name\":\"GPU {}\"", device));
      meta("process_sort_index", pid, 0, fmt::format("\"sort_index\":{}", 1 + device));
    }
    meta("thread_name", pid, stream, fmt::format("\"name\":\"stream {}\"", stream));
  }
  out.append(std::string_view("\n]}\n"));
  return fmt::to_string(out);
}

}  // namespace kjit::profile
