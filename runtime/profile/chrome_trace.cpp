#include "runtime/profile/chrome_trace.hpp"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <set>
#include <unordered_map>
#include <unordered_set>

namespace kjit::profile {
namespace {

using Json = nlohmann::ordered_json;

// GPUs as processes of their own, numbered past any real pid.
constexpr std::int64_t k_gpu_pid_base = 1'000'000'000;

}  // namespace

std::string chrome_trace(const Recording& rec) {
  const std::uint64_t origin = rec.start;
  auto us = [&](std::uint64_t ns) { return ns >= origin ? static_cast<double>(ns - origin) / 1e3 : 0.0; };
  auto dur = [](std::uint64_t a, std::uint64_t b) { return b > a ? static_cast<double>(b - a) / 1e3 : 0.0; };
  const std::int64_t host_pid = rec.pid;

  std::unordered_map<std::string, const KnownKernel*> known;
  for (const auto& k : rec.known) known.emplace(k.mangled, &k);

  Json events = Json::array();
  std::set<std::uint32_t> host_threads;
  std::set<std::pair<std::uint32_t, std::uint32_t>> streams;  // device, stream
  std::unordered_set<std::uint32_t> launched;  // correlations with a kernel (for the flow's start)
  for (const auto& k : rec.kernels) launched.insert(k.correlation);

  for (const auto& l : rec.launches) {
    host_threads.insert(l.thread);
    events.push_back({{"name", rec.names[l.api]}, {"cat", "launch"}, {"ph", "X"}, {"ts", us(l.start)},
                      {"dur", dur(l.start, l.end)}, {"pid", host_pid}, {"tid", l.thread},
                      {"args", {{"correlation", l.correlation}}}});
    if (launched.count(l.correlation) != 0) {
      events.push_back({{"name", "launch"}, {"cat", "launch"}, {"ph", "s"}, {"id", l.correlation},
                        {"ts", us(l.start)}, {"pid", host_pid}, {"tid", l.thread}});
    }
  }
  for (const auto& r : rec.ranges) {
    host_threads.insert(r.thread);
    Json args = Json::object();
    if (r.phase == Phase::user) {
      args["range"] = r.name;
    } else {
      args["program"] = r.name;
      if (!r.key.empty()) args["key"] = r.key;
      if (!r.outcome.empty()) args["outcome"] = r.outcome;
    }
    const std::string name = r.phase == Phase::user ? r.name : fmt::format("kjit {}", to_string(r.phase));
    events.push_back({{"name", name}, {"cat", r.phase == Phase::user ? "user" : "kjit"}, {"ph", "X"},
                      {"ts", us(r.start)}, {"dur", dur(r.start, r.end)}, {"pid", host_pid}, {"tid", r.thread},
                      {"args", std::move(args)}});
  }
  std::unordered_set<std::uint32_t> flowed;
  for (const auto& k : rec.kernels) {
    streams.insert({k.device, k.stream});
    const std::string& mangled = rec.names[k.name];
    Json args = {{"grid", {k.grid[0], k.grid[1], k.grid[2]}},
                 {"block", {k.block[0], k.block[1], k.block[2]}},
                 {"registers per thread", k.registers},
                 {"static shared memory", k.static_shared},
                 {"dynamic shared memory", k.dynamic_shared},
                 {"device", k.device},
                 {"stream", k.stream},
                 {"correlation", k.correlation},
                 {"mangled name", mangled}};
    std::string name = short_kernel_name(mangled);
    if (auto it = known.find(mangled); it != known.end()) {
      if (!it->second->expression.empty()) name = it->second->expression;
      args["program"] = it->second->program;
      args["cache key"] = it->second->key;
    }
    const std::int64_t pid = k_gpu_pid_base + k.device;
    events.push_back({{"name", name}, {"cat", "kernel"}, {"ph", "X"}, {"ts", us(k.start)},
                      {"dur", dur(k.start, k.end)}, {"pid", pid}, {"tid", k.stream}, {"args", std::move(args)}});
    if (flowed.insert(k.correlation).second) {
      events.push_back({{"name", "launch"}, {"cat", "launch"}, {"ph", "f"}, {"bp", "e"}, {"id", k.correlation},
                        {"ts", us(k.start)}, {"pid", pid}, {"tid", k.stream}});
    }
  }
  for (const auto& t : rec.transfers) {
    streams.insert({t.device, t.stream});
    events.push_back({{"name", to_string(static_cast<TransferKind>(t.kind))}, {"cat", "memory"}, {"ph", "X"},
                      {"ts", us(t.start)}, {"dur", dur(t.start, t.end)}, {"pid", k_gpu_pid_base + t.device},
                      {"tid", t.stream},
                      {"args", {{"bytes", t.bytes}, {"device", t.device}, {"stream", t.stream},
                                {"correlation", t.correlation}}}});
  }

  // Names for the tracks.
  Json meta = Json::array();
  meta.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", host_pid}, {"tid", 0},
                  {"args", {{"name", fmt::format("host (pid {})", rec.pid)}}}});
  meta.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", host_pid}, {"tid", 0},
                  {"args", {{"sort_index", 0}}}});
  for (auto t : host_threads) {
    meta.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", host_pid}, {"tid", t},
                    {"args", {{"name", fmt::format("thread {}", t)}}}});
  }
  std::set<std::uint32_t> devices;
  for (const auto& [device, stream] : streams) {
    if (devices.insert(device).second) {
      meta.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", k_gpu_pid_base + device}, {"tid", 0},
                      {"args", {{"name", fmt::format("GPU {}", device)}}}});
      meta.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", k_gpu_pid_base + device}, {"tid", 0},
                      {"args", {{"sort_index", 1 + device}}}});
    }
    meta.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", k_gpu_pid_base + device}, {"tid", stream},
                    {"args", {{"name", fmt::format("stream {}", stream)}}}});
  }
  for (auto& e : events) meta.push_back(std::move(e));

  Json trace;
  trace["traceEvents"] = std::move(meta);
  trace["displayTimeUnit"] = "ms";
  trace["otherData"] = {{"producer", "kjit profiler"}, {"dropped records", rec.dropped}};
  return trace.dump();
}

}  // namespace kjit::profile
