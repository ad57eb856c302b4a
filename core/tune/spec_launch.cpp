// kjit::TunerEngine's launch over a spec (a manifest's "tuning" entry, KernelLoader::tuner, kjit
// tune): a repeat of a decided shape launches at once, without a lock; another shape is keyed,
// decided (timing every candidate with the spec's grid and outputs) and launched. Also the checks of a
// spec's arguments against a kernel's parameters.
#include <kjit/error.hpp>
#include <kjit/tune.hpp>

#include "core/system/hash.hpp"
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

std::string TunerEngine::decision_key(std::span<const TuneValue> shape) const {
  return m_impl->decision_key(key_for(shape)).hex();
}

namespace {

// A shape's hash: its names and values in order.
std::uint64_t shape_hash(std::span<const TuneValue> shape) {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  for (const auto& v : shape) {
    const std::uint64_t parts[2] = {system::xxh3_64(v.name.data(), v.name.size()), static_cast<std::uint64_t>(v.value)};
    h = system::xxh3_64(parts, sizeof parts) ^ (h * 0x100000001b3ull);
  }
  return h;
}

}  // namespace

const TuneDecision& TunerEngine::launch(std::span<const TuneValue> shape, StreamRef stream, void** args) {
  Impl& im = *m_impl;
  const std::uint64_t hash = shape_hash(shape);
  if (const Impl::ShapeCall* call = im.shapes.find(hash, [&](const Impl::ShapeCall& c) { return c.matches(shape); })) {
    im.in_memory.fetch_add(1, std::memory_order_relaxed);
    LaunchConfig c = call->config;
    c.stream = stream;
    call->kernel->launch_raw(c, args);
    return *call->decision;
  }
  // A shape not remembered: its key (built in place) and the decision held for it (no lock), else
  // decided now; then its grid.
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
  // Remembered once decided (a decision held only while capturing is not), while there is room.
  if (d->source == TuneDecision::Source::capture || im.shapes.size() >= Impl::k_remembered_shapes) return *d;
  std::lock_guard lock(im.mutex);
  if (im.shapes.size() >= Impl::k_remembered_shapes ||
      im.shapes.find(hash, [&](const Impl::ShapeCall& call) { return call.matches(shape); }) != nullptr) {
    return *d;
  }
  Impl::ShapeCall call;
  for (const auto& v : shape) {
    call.names.emplace_back(v.name);
    call.values.push_back(v.value);
  }
  call.decision = d;
  call.kernel = &chosen;
  call.config = c;
  call.config.stream = nullptr;
  im.shapes.insert(hash, std::move(call));
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
