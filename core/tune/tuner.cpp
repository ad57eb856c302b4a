// kjit::TunerEngine: the candidates' modules (compiled in parallel on a key's first tuning),
// decisions held in memory, then in kjit's cache (tune/decision: a `tuning` entry on the disk and
// the remote tier), else made by timing with kjit::bench under successive halving. Timing runs
// reset and restore the caller's named outputs, so that after it only the winner's launch (the
// caller's) shows.
#include <kjit/error.hpp>
#include <kjit/bench.hpp>
#include <kjit/tune.hpp>

#include "core/system/hash.hpp"
#include "core/driver/driver_api.hpp"
#include "core/base/environment.hpp"
#include "core/runtime_access.hpp"
#include "core/tune/decision.hpp"
#include "core/tune/report.hpp"
#include "core/tune/saved_buffers.hpp"
#include "core/tune/tuner_engine.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <cmath>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>

namespace kjit {

std::string TuneCandidate::text() const {
  std::string t = fmt::format("{} block ({},{},{}) smem {}", kernel, block.x, block.y, block.z, shared_mem);
  if (param != 0) t += fmt::format(" param {}", param);
  if (cluster.x > 0) t += fmt::format(" cluster ({},{},{})", cluster.x, cluster.y, cluster.z);
  for (const auto& d : defines) t += fmt::format(" -D{}", d);
  return t;
}

// Without fmt or a temporary string: a decided key's launch builds its key on every call.
void TuneKey::append(std::string_view name, std::string_view op, std::string_view value) {
  const std::size_t sep = text().empty() ? 0 : 1;
  const std::size_t more = sep + name.size() + op.size() + value.size();
  if (m_long.empty() && m_size + more <= k_inline) {
    char* at = m_inline + m_size;
    if (sep != 0) *at++ = ' ';
    for (std::string_view part : {name, op, value}) {
      std::memcpy(at, part.data(), part.size());
      at += part.size();
    }
    m_size += more;
    return;
  }
  if (m_long.empty()) m_long.assign(m_inline, m_size);
  if (sep != 0) m_long += ' ';
  m_long.append(name).append(op).append(value);
}

namespace {
// A number's text in `buffer` (large enough for any long long).
std::string_view number_text(char (&buffer)[24], long long value) {
  const auto r = std::to_chars(buffer, buffer + sizeof buffer, value);
  return {buffer, static_cast<std::size_t>(r.ptr - buffer)};
}
}  // namespace

TuneKey& TuneKey::add(std::string_view name, long long value) {
  char buffer[24];
  append(name, "=", number_text(buffer, value));
  return *this;
}
TuneKey& TuneKey::add(std::string_view name, std::string_view value) {
  append(name, "=", value);
  return *this;
}
TuneKey& TuneKey::add_bucketed(std::string_view name, long long value) {
  char buffer[24];
  append(name, "<=", number_text(buffer, tune::next_power_of_two(value)));
  return *this;
}

TuneMode tune_mode_from_environment() {
  // on and off as every flag spells them (system::parse_flag), or force.
  switch (base::env_flag_or_force(base::Env::tune)) {
  case base::FlagOrForce::off: return TuneMode::off;
  case base::FlagOrForce::force: return TuneMode::force;
  case base::FlagOrForce::on: break;
  }
  return TuneMode::on;
}

namespace {

// The explainer libkjit_tools installs (set_tune_explainer), and whether its absence was said.
std::mutex g_explainer_mutex;
std::shared_ptr<TuneExplainer> g_explainer;
std::atomic<bool> g_no_explainer_said{false};

std::shared_ptr<TuneExplainer> tune_explainer() {
  std::lock_guard lock(g_explainer_mutex);
  return g_explainer;
}

// Whether `stream` is capturing a CUDA graph (then nothing may be timed, allocated or synchronized).
bool capturing(CUstream_st* stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  const CUresult r = driver::get().cuStreamIsCapturing(stream, &status);
  if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) return true;  // the legacy stream while another one captures
  return r == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

std::string first_line(std::string_view text) {
  const auto end = text.find('\n');
  return std::string(text.substr(0, end == std::string_view::npos ? text.size() : end));
}

}  // namespace

TuneExplainer::~TuneExplainer() = default;

void set_tune_explainer(std::shared_ptr<TuneExplainer> explainer) {
  std::lock_guard lock(g_explainer_mutex);
  g_explainer = std::move(explainer);
}

TunerEngine::Impl::Impl(Program p, std::vector<TuneCandidate> c, TuneOptions o, Runtime& r)
    : program(std::move(p)), candidates(std::move(c)), options(std::move(o)),
      runtime(&r),
      mode(options.mode ? *options.mode : tune_mode_from_environment()),
      print(options.print ? *options.print : base::env_flag(base::Env::print_tuning)),
      loaded(candidates.size()), kernels(candidates.size()), load_errors(candidates.size()) {
  if (candidates.empty()) throw UsageError(fmt::format("tuning {}: no candidates", program.name()));
}

TunerEngine::Impl::Impl(std::string name, std::string key, std::vector<TuneCandidate> c, std::vector<KernelHandle> k,
                        TuneOptions o, Runtime& r)
    : Impl(Program(std::move(name), ""), std::move(c), std::move(o), r) {
  if (k.size() != candidates.size()) {
    throw UsageError(fmt::format("tuning {}: {} kernels for {} candidates", program.name(), k.size(),
                                 candidates.size()));
  }
  source_key = std::move(key);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    std::call_once(loaded[i], [&] { kernels[i] = std::move(k[i]); });
  }
}

TunerEngine::Impl::Impl(Program p, TuneSpec s, TuneOptions o, Runtime& r)
    : Impl(std::move(p), s.candidates, std::move(o), r) {
  spec.emplace(std::move(s));
}

const tune::CompiledSpec& TunerEngine::Impl::require_spec(std::string_view what) const {
  if (!spec) throw UsageError(fmt::format("tuning {}: {} needs a tuner made from a spec", program.name(), what));
  return *spec;
}

std::string TunerEngine::Impl::name() const {
  return spec ? fmt::format("{}: {}", program.name(), spec->spec().name) : program.name();
}

CompileOptions TunerEngine::Impl::options_for(std::size_t i) const {
  CompileOptions o = options.compile;
  for (const auto& d : candidates[i].defines) o.defines.push_back(d);
  return o;
}

bool TunerEngine::Impl::load(std::size_t i) {
  std::call_once(loaded[i], [&] {
    try {
      Program p = program;
      p.instantiate(candidates[i].kernel);  // a C++ name (template or not) by its expression
      Module m = runtime->load(p, options_for(i));
      KernelHandle k = m.kernel_handle(candidates[i].kernel);
      if (spec && !spec->spec().arguments.empty()) tune::check_against_spec(k, spec->spec());
      kernels[i] = std::move(k);
    } catch (const std::exception& e) {
      load_errors[i] = first_line(e.what());
    }
  });
  return static_cast<bool>(kernels[i]);
}

std::string TunerEngine::Impl::label(std::size_t i) const {
  return candidates[i].label.empty() ? candidates[i].text() : candidates[i].label;
}

cache::Key TunerEngine::Impl::decision_key(const TuneKey& key) {
  const Device device = Device::current();
  tune::DecisionKeyFields f;
  f.source_key = source_key.empty() ? runtime->explain(program, options.compile).key : source_key;
  for (const auto& c : candidates) f.candidates.push_back(c.text());
  f.device_name = device.name();
  f.compute_capability = device.compute_capability();
  f.driver_version = driver::get().driver_version;
  f.kjit_version = std::string(version());
  f.tuning_key = key.text();
  if (spec) f.launch = spec->launch_text();
  return tune::decision_key(f);
}

TuneDecision TunerEngine::Impl::from(const tune::Decision& d, TuneDecision::Source source,
                                     const cache::Key& key) const {
  TuneDecision out;
  out.source = source;
  out.chosen = d.chosen;
  out.labels = d.labels;
  out.label = d.labels[d.chosen];
  out.median_us = d.median_us;
  out.why_not = d.why_not;
  out.noise = d.noise;
  out.key = key.hex();
  return out;
}

void TunerEngine::Impl::report(const TuneDecision& d, const TuneKey& key) const {
  if (print) RuntimeAccess::report(*runtime, format_decision(name(), key.text(), Device::current().name(), d));
}

TuneDecision TunerEngine::Impl::tune(const TuneKey& key, const Run& run, const TuneBuffers& buffers, CUstream_st* stream,
                                   const cache::Key& dkey, const std::vector<bool>& allowed) {
  // Compile every candidate at once (NVRTC runs in parallel; the cache makes repeats free).
  std::vector<std::future<bool>> loads;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (allowed.empty() || allowed[i]) loads.push_back(std::async(std::launch::async, [this, i] { return load(i); }));
  }
  for (auto& f : loads) f.get();

  tune::SavedBuffers saved(buffers, stream);
  const auto time = [&](std::size_t i, int round, std::string* why) -> std::optional<double> {
    if (!allowed.empty() && !allowed[i]) {
      *why = "not for this call";
      return std::nullopt;
    }
    if (!kernels[i]) {
      *why = fmt::format("does not compile or load: {}", load_errors[i]);
      return std::nullopt;
    }
    BenchOptions b;
    b.warmup_ms = round == 0 ? options.round_ms / 2 : 1;
    b.repeat_ms = options.round_ms * std::ldexp(1.0, round);
    b.min_repetitions = 3;
    b.flush_l2 = options.flush_l2;
    b.quantiles = {};
    b.stream = stream;
    try {
      const BenchResult r = bench([&](CUstream_st* s) {
        saved.put_back();
        run(i, s);
      }, b);
      return r.median_ms * 1e3;
    } catch (const std::exception& e) {
      *why = fmt::format("does not launch: {}", first_line(e.what()));
      return std::nullopt;
    }
  };
  tune::HalvingOptions h;
  h.rounds = options.rounds;
  h.drop_above = options.drop_above;
  const tune::HalvingResult halving = tune::successive_halving(candidates.size(), time, h);
  saved.put_back();  // the caller's launch of the winner comes next, on the same stream

  std::vector<std::optional<double>> finalists(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (halving.finalists[i]) finalists[i] = halving.times[i];
  }
  const auto chosen = tune::choose(finalists, options.noise);
  if (!chosen) {
    std::vector<std::string> whys;
    for (std::size_t i = 0; i < candidates.size(); ++i) whys.push_back(fmt::format("{}: {}", label(i), halving.why_not[i]));
    throw Error(fmt::format("tuning {} for {}: every candidate failed ({})", name(), key.text(),
                            fmt::join(whys, "; ")));
  }
  tune::Decision d;
  d.chosen = *chosen;
  d.noise = options.noise;
  d.tuning_key = key.text();
  d.device = Device::current().name();
  d.name = name();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    d.labels.push_back(label(i));
    d.median_us.push_back(halving.times[i] ? *halving.times[i] : -1.0);
    d.why_not.push_back(halving.why_not[i]);
  }
  // KJIT_TUNE_METRICS: the winner's and the two fastest runners-up's figures (runners-up dropped
  // early too), each candidate's one launch measured by the explainer libkjit_tools installs
  // (hardware counters: the launch is replayed; its outputs are put back after). Empty when none
  // could be measured (another Profiler records, no counters allowed, no explainer): the decision
  // stands without them.
  const auto measure_figures = [&](TuneExplainer& explainer, const std::string& metrics,
                                   const std::vector<std::optional<double>>& times) {
    std::vector<std::size_t> order{d.chosen};
    std::vector<std::size_t> others;
    for (std::size_t i = 0; i < times.size(); ++i) {
      if (i != d.chosen && times[i]) others.push_back(i);
    }
    std::sort(others.begin(), others.end(), [&](std::size_t a, std::size_t b) { return *times[a] < *times[b]; });
    for (std::size_t i = 0; i < others.size() && i < 2; ++i) order.push_back(others[i]);
    std::vector<std::vector<std::pair<std::string, double>>> out(candidates.size());
    bool any = false;
    for (std::size_t i : order) {
      saved.put_back();
      auto figures = explainer.measure(metrics, [&] {
        run(i, stream);
        driver::check(driver::get().cuStreamSynchronize(stream), "cuStreamSynchronize", "measuring {}", label(i));
      });
      if (!figures) break;
      if (figures->empty()) continue;
      out[i] = std::move(*figures);
      any = true;
    }
    saved.put_back();
    if (!any) out.clear();
    return out;
  };
  if (const auto metrics = base::env_text(base::Env::tune_metrics)) {
    if (auto explainer = tune_explainer()) {
      d.sol = measure_figures(*explainer, *metrics, halving.times);
    } else if (!g_no_explainer_said.exchange(true, std::memory_order_relaxed)) {
      RuntimeAccess::log(*runtime, LogLevel::warn,
                         fmt::format("KJIT_TUNE_METRICS={}: nothing in this program reads hardware counters for "
                                     "the tuner; they come with libkjit_tools (kjit::install_tools(), "
                                     "<kjit/tools.hpp>)",
                                     *metrics));
    }
  }
  RuntimeAccess::entries(*runtime).store_entry(dkey, tune::encode_decision(dkey, d));
  ++timed;
  return from(d, TuneDecision::Source::timed, dkey);
}

TunerEngine::TunerEngine(Program program, std::vector<TuneCandidate> candidates, TuneOptions options,
                         Runtime& runtime)
    : m_impl(std::make_unique<Impl>(std::move(program), std::move(candidates), std::move(options), runtime)) {}
TunerEngine::TunerEngine(std::string name, std::string source_key, std::vector<TuneCandidate> candidates,
                         std::vector<KernelHandle> kernels, TuneOptions options, Runtime& runtime)
    : m_impl(std::make_unique<Impl>(std::move(name), std::move(source_key), std::move(candidates), std::move(kernels),
                                    std::move(options), runtime)) {}
TunerEngine::TunerEngine(Program program, TuneSpec spec, TuneOptions options, Runtime& runtime)
    : m_impl(std::make_unique<Impl>(std::move(program), std::move(spec), std::move(options), runtime)) {}
TunerEngine::~TunerEngine() = default;
TunerEngine::TunerEngine(TunerEngine&&) noexcept = default;
TunerEngine& TunerEngine::operator=(TunerEngine&&) noexcept = default;

std::size_t TunerEngine::size() const { return m_impl->candidates.size(); }
const TuneCandidate& TunerEngine::candidate(std::size_t i) const { return m_impl->candidates.at(i); }

const KernelHandle& TunerEngine::kernel(std::size_t i) {
  Impl& im = *m_impl;
  if (!im.load(i)) {
    throw UsageError(fmt::format("tuning {}: candidate {} ({}) cannot be used: {}", im.program.name(), i, im.label(i),
                                 im.load_errors[i]));
  }
  return im.kernels[i];
}

const TuneDecision* TunerEngine::Impl::held(std::string_view key) const {
  const Held* h = decisions.find(system::xxh3_64(key.data(), key.size()), [&](const Held& v) { return v.key == key; });
  return h != nullptr ? &h->decision : nullptr;
}

const TuneDecision* TunerEngine::find(const TuneKey& key) const {
  const TuneDecision* d = m_impl->held(key.text());
  if (d != nullptr) m_impl->in_memory.fetch_add(1, std::memory_order_relaxed);
  return d;
}

const TuneDecision& TunerEngine::decide(const TuneKey& key, const Run& run, const TuneBuffers& buffers,
                                        StreamRef stream, const std::vector<bool>& allowed) {
  Impl& im = *m_impl;
  std::lock_guard lock(im.mutex);  // one decision per key at a time (timing runs alone on the GPU)
  if (const TuneDecision* h = im.held(key.text())) return *h;
  TuneDecision d;
  if (!allowed.empty() && allowed.size() != im.candidates.size()) {
    throw UsageError(fmt::format("tuning {}: {} flags for {} candidates", im.program.name(), allowed.size(),
                                 im.candidates.size()));
  }
  // The first candidate this call allows, the others not timed for `why`.
  const auto first_allowed = [&](TuneDecision::Source source, const char* why) {
    std::size_t first = 0;
    while (!allowed.empty() && first < allowed.size() && !allowed[first]) ++first;
    if (first == im.candidates.size()) {
      throw UsageError(fmt::format("tuning {} for {}: no candidate serves this call", im.name(), key.text()));
    }
    TuneDecision f;
    f.source = source;
    f.chosen = first;
    for (std::size_t i = 0; i < im.candidates.size(); ++i) {
      f.labels.push_back(im.label(i));
      f.median_us.push_back(-1);
      f.why_not.push_back(i == first ? "" : why);
    }
    f.label = f.labels[first];
    return f;
  };
  if (im.mode == TuneMode::off) {
    d = first_allowed(TuneDecision::Source::off, "KJIT_TUNE=off");
  } else {
    const bool capture = capturing(stream);
    if (capture) {
      if (auto it = im.provisional.find(key.text()); it != im.provisional.end()) return *it->second;
    }
    const cache::Key dkey = im.decision_key(key);
    std::optional<tune::Decision> cached;
    if (im.mode == TuneMode::on) {
      if (auto bytes = RuntimeAccess::entries(*im.runtime).find_entry(dkey)) {
        std::string why;
        cached = tune::decode_decision(dkey, *bytes, &why);
        if (cached && (cached->labels.size() != im.candidates.size() ||
                       (!allowed.empty() && !allowed[cached->chosen]))) {
          cached.reset();
        }
      }
    }
    if (cached) {
      d = im.from(*cached, TuneDecision::Source::cache, dkey);
      ++im.from_cache;
    } else if (capture) {
      auto& slot = im.provisional[std::string(key.text())];
      slot = std::make_unique<TuneDecision>(
          first_allowed(TuneDecision::Source::capture, "not timed: the stream is capturing a CUDA graph"));
      im.report(*slot, key);
      return *slot;
    } else {
      d = im.tune(key, run, buffers, stream, dkey, allowed);
    }
  }
  im.report(d, key);
  if (auto it = im.provisional.find(key.text()); it != im.provisional.end()) im.provisional.erase(it);
  const std::string_view text = key.text();
  return im.decisions.insert(system::xxh3_64(text.data(), text.size()), {std::string(text), std::move(d)}).decision;
}

TunerStats TunerEngine::stats() const {
  return {m_impl->timed.load(), m_impl->from_cache.load(), m_impl->in_memory.load()};
}

std::string format_decision(std::string_view name, std::string_view key, std::string_view device,
                            const TuneDecision& d) {
  std::string text = fmt::format("tuning {} for {} on {}: {} ({})", name, key.empty() ? "-" : key, device,
                                 d.label,
                                 d.source == TuneDecision::Source::timed     ? "timed"
                                 : d.source == TuneDecision::Source::cache   ? "from the cache"
                                 : d.source == TuneDecision::Source::capture ? "not timed while capturing a CUDA graph"
                                                                             : "KJIT_TUNE=off");
  for (std::size_t i = 0; i < d.labels.size(); ++i) {
    text += fmt::format("\n  {} {:<40} {}", i == d.chosen ? "*" : " ", d.labels[i],
                        d.median_us[i] >= 0 ? fmt::format("{:.3f} us", d.median_us[i]) : std::string("-"));
    if (!d.why_not[i].empty()) text += fmt::format("  ({})", d.why_not[i]);
  }
  return text;
}

}  // namespace kjit
