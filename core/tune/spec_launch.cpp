// kjit::TunerEngine's launch over a spec (a manifest's "tuning" entry, KernelLoader::tuner, kjit
// tune): a repeat of the last decided shape launches at once; another shape is keyed, decided
// (timing every candidate with the spec's grid and outputs) and launched. Also the checks of a
// spec's arguments against a kernel's parameters.
#include <kjit/error.hpp>
#include <kjit/tune.hpp>

#include "core/tune/spec.hpp"
#include "core/tune/tuner_engine.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kjit {

namespace {

// A KernelHandle whose parameters can be checked against sizes known only at run time (a spec's).
struct SignatureCheck : KernelHandle {
  explicit SignatureCheck(const KernelHandle& h) : KernelHandle(h) {}
  using KernelHandle::check_signature;
};

}  // namespace

namespace tune {

// The spec's argument sizes and type names, as check_signature takes them.
void check_against_spec(const KernelHandle& kernel, const TuneSpec& spec) {
  std::vector<std::size_t> sizes;
  std::vector<const char*> names;
  for (const auto& a : spec.arguments) {
    sizes.push_back(tune::parse_argument_type(a.type).size());
    names.push_back(a.type.c_str());
  }
  SignatureCheck(kernel).check_signature(sizes.data(), sizes.size(), names.data());
}

}  // namespace tune

LaunchConfig TunerEngine::Impl::config(std::size_t i, Dim3 grid, CUstream_st* stream) const {
  LaunchConfig c;
  c.grid = grid;
  c.block = candidates[i].block;
  c.shared_mem = candidates[i].shared_mem;
  c.cluster = candidates[i].cluster;
  c.stream = stream;
  return c;
}

const TuneSpec* TunerEngine::spec() const { return m_impl->spec ? &m_impl->spec->spec() : nullptr; }

TuneKey TunerEngine::key_for(std::span<const TuneValue> shape) const {
  return m_impl->require_spec("a key for a shape").key(shape);
}

const TuneDecision& TunerEngine::launch(std::span<const TuneValue> shape, StreamRef stream, void** args) {
  Impl& im = *m_impl;
  {
    std::unique_lock lock(im.mutex);
    if (im.last.matches(shape)) {
      LaunchConfig c = im.last.config;
      const KernelHandle* k = im.last.kernel;
      const TuneDecision* d = im.last.decision;
      lock.unlock();
      im.in_memory.fetch_add(1, std::memory_order_relaxed);
      c.stream = stream;
      k->launch_raw(c, args);
      return *d;
    }
  }
  const tune::CompiledSpec& spec = im.require_spec("a launch for a shape");
  const long long sms = spec.uses_sm_count() ? Device::current().multiprocessor_count() : 0;
  const TuneKey key = spec.key(shape);
  const TuneDecision* d = find(key);
  if (d == nullptr) {
    d = &decide(
        key,
        [&](std::size_t i, CUstream_st* s) {
          im.kernels[i].launch_raw(im.config(i, spec.grid(im.candidates[i], shape, sms), s), args);
        },
        spec.buffers(shape, args, sms), stream);
  }
  const KernelHandle& chosen = kernel(d->chosen);
  const LaunchConfig c = im.config(d->chosen, spec.grid(im.candidates[d->chosen], shape, sms), stream);
  chosen.launch_raw(c, args);
  if (d->source == TuneDecision::Source::capture) return *d;  // decided at the first call outside a capture
  std::lock_guard lock(im.mutex);
  im.last.names.clear();
  for (const auto& v : shape) im.last.names.emplace_back(v.name);
  im.last.values.clear();
  for (const auto& v : shape) im.last.values.push_back(v.value);
  im.last.decision = d;
  im.last.kernel = &chosen;
  im.last.config = c;
  im.last.config.stream = nullptr;
  return *d;
}

void check_spec_signature(const TuneSpec& spec, const std::size_t* sizes, std::size_t count) {
  if (spec.arguments.empty()) return;
  bool same = spec.arguments.size() == count;
  for (std::size_t i = 0; same && i < count; ++i) same = tune::parse_argument_type(spec.arguments[i].type).size() == sizes[i];
  if (same) return;
  std::vector<std::string> declared, listed;
  for (std::size_t i = 0; i < count; ++i) declared.push_back(fmt::format("{} B", sizes[i]));
  for (const auto& a : spec.arguments) {
    listed.push_back(fmt::format("{} {} [{} B]", a.type, a.name, tune::parse_argument_type(a.type).size()));
  }
  throw UsageError(fmt::format("making a tuner for \"{}\": the signature has {} parameter{} ({}) but the spec lists "
                               "{} argument{} ({})",
                               spec.name, count, count == 1 ? "" : "s", fmt::join(declared, ", "),
                               spec.arguments.size(), spec.arguments.size() == 1 ? "" : "s", fmt::join(listed, ", ")));
}

}  // namespace kjit
