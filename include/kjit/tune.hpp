// kjit::Tuner: which variant of a kernel is fastest, timed once per device and problem key and
// cached like a kernel. Candidates differ by template arguments (name expressions), -D defines
// and launch shape. A key seen before launches the chosen candidate at once; a new key compiles
// the candidates in parallel, times them (kjit::bench, successive halving: a clearly slower one
// stops early), launches the winner and stores the decision as a small entry of kjit's cache
// (disk, and the fleet's remote tier), so that a fresh process, or another node, times nothing.
//
//   kjit::Tuner<void(const float*, float*, int)> square(program, {
//       {.kernel = "square<1>", .block = 128}, {.kernel = "square<4>", .block = 256}});
//   square.launch(kjit::TuneKey().add_bucketed("n", n),
//                 [&](const kjit::TuneCandidate& c) { return kjit::Dim3(kjit::ceil_div(n, c.block.x)); },
//                 stream, {}, x, y, n);
//
// Or from a kernel manifest's "tuning" entry (manifest.hpp), where the key, grid and outputs are
// data, so that `kjit tune MANIFEST` decides the listed shapes ahead of time:
//
//   auto square = loader.tuner<void(const float*, float*, int)>("square.cu", "square");
//   square.launch({{"n", n}}, stream, x, y, n);
//
// KJIT_TUNE=off launches the first candidate, KJIT_TUNE=force times again; KJIT_PRINT_TUNING=1
// reports each decision with its timings through the Runtime's log (stderr by default).
#pragma once

#include <kjit/compile_options.hpp>
#include <kjit/export.hpp>
#include <kjit/kernel.hpp>
#include <kjit/module.hpp>
#include <kjit/program.hpp>
#include <kjit/runtime.hpp>

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace kjit {

struct TuneCandidate {
  std::string kernel;                 // the kernel's name or name expression ("square<4>")
  long long param = 0;                // a value of the caller's (blocks per SM, ...), passed to its grid function
  std::vector<std::string> defines;   // -D for this candidate only ("TILE=64")
  Dim3 block{256};
  std::size_t shared_mem = 0;         // dynamic shared memory, bytes
  Dim3 cluster{0, 0, 0};
  std::string label;                  // empty: text()

  // "square<4> block (256,1,1) smem 0 -DTILE=64": what the decision key holds.
  KJIT_API std::string text() const;
};

// The caller's problem key: sizes and types whose change may change the winner. Its text
// ("n<=1024 dtype=float") is built in place: up to k_inline characters it allocates nothing, so a
// decided key's launch stays off the heap.
class KJIT_API TuneKey {
public:
  static constexpr std::size_t k_inline = 112;

  TuneKey& add(std::string_view name, long long value);
  TuneKey& add(std::string_view name, std::string_view value);
  // The value's bucket, the next power of two (1000 and 1024 share one decision).
  TuneKey& add_bucketed(std::string_view name, long long value);
  std::string_view text() const {
    return m_long.empty() ? std::string_view(m_inline, m_size) : std::string_view(m_long);
  }

private:
  void append(std::string_view name, std::string_view op, std::string_view value);

  char m_inline[k_inline]{};
  std::size_t m_size = 0;  // of m_inline's text
  std::string m_long;      // the whole text, once it outgrew m_inline
};

enum class TuneMode { on, off, force };  // KJIT_TUNE (on when unset)

struct TuneOptions {
  CompileOptions compile;        // every candidate's, before its own defines
  std::optional<TuneMode> mode;  // unset: KJIT_TUNE
  std::optional<bool> print;     // unset: KJIT_PRINT_TUNING
  double noise = 0.03;           // candidates within 3% of the best tie; a tie goes to the earliest
  int rounds = 3;                // successive halving: rounds, each with twice the time
  double drop_above = 1.3;       // a candidate over 1.3x the best stops after a round
  double round_ms = 8;           // the first round's timing per candidate
  bool flush_l2 = true;
};

// Outputs that timing runs must leave as they found them: zeroed before each run (an
// accumulator) or copied aside and put back before each run and at the end.
struct TuneBuffers {
  std::vector<std::pair<void*, std::size_t>> reset_to_zero;
  std::vector<std::pair<void*, std::size_t>> restore;
};

// One value of a tuned call's shape: {"n", 1 << 20}.
struct TuneValue {
  std::string_view name;
  long long value = 0;
};

// A kernel argument as a tuning spec describes it: `kjit tune` makes it up (random inputs), a
// program's call names its outputs through it.
struct TuneArgument {
  enum class Output { none, reset_to_zero, restore };
  std::string name;
  std::string type;             // "const float*", "__half*", "int", "unsigned long long", ...
  std::string count;            // a pointer's element count, an expression of the shape ("rows * cols")
  std::string value;            // a scalar's value: a number ("1.5") or an expression of the shape ("n")
  std::string fill = "random";  // what kjit tune puts in a buffer: random, zero, or a number
  Output output = Output::none;
};

// A tuner as data (a kernel manifest's "tuning" entry; see manifest.hpp): its candidates, the
// shape variables of its key, its grid and arguments as expressions of the shape, and the shapes
// `kjit tune` decides ahead of time. Expressions are integer arithmetic (+ - * / %, ceil_div,
// min, max, pow2) over the shape's variables and sm_count; the grid's also over the candidate's
// block (block_x, block_y, block_z), param and shared_mem.
struct TuneSpec {
  std::string name;
  std::vector<TuneCandidate> candidates;
  std::vector<std::string> key;         // "n" (exact) or "pow2(n)" (its bucket), in order
  std::vector<std::string> grid;        // 1 to 3 expressions: x, y, z
  std::vector<TuneArgument> arguments;  // the kernel's parameters, in order
  std::vector<std::vector<std::pair<std::string, long long>>> shapes;
};

struct TuneDecision {
  // capture: the call's stream was capturing a CUDA graph, where nothing can be timed: the first
  // candidate it allows, held only while capturing (the first call outside a capture decides).
  enum class Source { timed, cache, off, capture } source = Source::timed;
  std::size_t chosen = 0;
  std::string label;
  std::vector<std::string> labels;
  std::vector<double> median_us;      // < 0: not timed to the end (failed or dropped)
  std::vector<std::string> why_not;   // per candidate: empty, or why it was skipped or dropped
  double noise = 0;
  std::string key;                    // the decision's cache key (hex)
};


struct TunerStats {
  std::uint64_t timed = 0;       // decisions made by timing
  std::uint64_t from_cache = 0;  // decisions read from the disk or remote cache
  std::uint64_t in_memory = 0;   // launches whose decision this Tuner held already
};

// The untyped engine behind Tuner<Sig>: candidates, decisions and their cache.
class KJIT_API TunerEngine {
public:
  using Run = std::function<void(std::size_t candidate, CUstream_st* stream)>;

  TunerEngine(Program program, std::vector<TuneCandidate> candidates, TuneOptions options, Runtime& runtime);
  // Over kernels already loaded (one each, in the candidates' order), named `name`, whose code the
  // cache key `source_key` stands for: the shipped kernels tune this way.
  TunerEngine(std::string name, std::string source_key, std::vector<TuneCandidate> candidates,
              std::vector<KernelHandle> kernels, TuneOptions options, Runtime& runtime);
  // Over a spec (KernelLoader::tuner, kjit tune): its candidates, and its key, grid and outputs
  // for launch(shape, ...). Throws UsageError for a spec that does not hold together.
  TunerEngine(Program program, TuneSpec spec, TuneOptions options, Runtime& runtime);
  ~TunerEngine();
  TunerEngine(TunerEngine&&) noexcept;
  TunerEngine& operator=(TunerEngine&&) noexcept;
  TunerEngine(const TunerEngine&) = delete;
  TunerEngine& operator=(const TunerEngine&) = delete;

  std::size_t size() const;
  const TuneCandidate& candidate(std::size_t i) const;
  // The candidate's kernel (compiled and loaded on first use). Throws what compiling throws.
  const KernelHandle& kernel(std::size_t i);
  // The decision for `key` on the current device: held, cached, or made now by timing `run`.
  // Throws Error when every candidate fails.
  // `allowed` (empty: all) leaves out candidates that cannot serve this call (a shape too small):
  // put what decides it in the key.
  const TuneDecision& decide(const TuneKey& key, const Run& run, const TuneBuffers& buffers, StreamRef stream,
                             const std::vector<bool>& allowed = {});
  // The decision held for `key`, without deciding.
  const TuneDecision* find(const TuneKey& key) const;
  TunerStats stats() const;

  // With a spec: null otherwise.
  const TuneSpec* spec() const;
  // The spec's tuning key for `shape`. Throws UsageError without a spec or for a missing value.
  TuneKey key_for(std::span<const TuneValue> shape) const;
  // The cache key of the decision for `shape` on the current device (32 hex digits), which
  // `kjit tune --shard` splits by: every shape of one decision goes to one shard. Throws as key_for.
  std::string decision_key(std::span<const TuneValue> shape) const;
  // The spec's launch: the decision for `shape` (timing every candidate on `args`, the driver's
  // argument array, with the spec's outputs reset or restored), then the chosen candidate's
  // launch with the spec's grid. Each candidate's parameters are checked once against the spec's.
  const TuneDecision& launch(std::span<const TuneValue> shape, StreamRef stream, void** args);

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// Throws UsageError when a spec's arguments do not have a signature's sizes (both listed); for
// Tuner<Sig>'s constructor.
KJIT_API void check_spec_signature(const TuneSpec& spec, const std::size_t* sizes, std::size_t count);

// Hardware-counter figures that explain a tuner's winner (KJIT_TUNE_METRICS, e.g. "sol"): the
// tuner asks, an explainer measures. libkjit_tools' explainer reads them with a Profiler
// (kjit::install_tools()); without one a decision stands without figures, and the tuner says so
// once through the Runtime's log.
class KJIT_API TuneExplainer {
public:
  virtual ~TuneExplainer();
  // Measures `launch` (one launch of a candidate, which it synchronizes) under the counters
  // `metrics`: the figures (name, value) of its main kernel, empty when it saw none, nullopt when
  // counters cannot be read now (the tuner then stops asking for this decision).
  virtual std::optional<std::vector<std::pair<std::string, double>>> measure(const std::string& metrics,
                                                                            const std::function<void()>& launch) = 0;
};
// Every tuner's explainer from now on (null: none). Thread-safe.
KJIT_API void set_tune_explainer(std::shared_ptr<TuneExplainer> explainer);

template <class Signature>
class Tuner;

template <class... Params>
class Tuner<void(Params...)> {
public:
  using Grid = std::function<Dim3(const TuneCandidate&)>;

  Tuner(Program program, std::vector<TuneCandidate> candidates, TuneOptions options = {},
        Runtime& runtime = Runtime::global())
      : m_engine(std::move(program), std::move(candidates), std::move(options), runtime),
        m_typed(m_engine.size()),
        m_once(std::make_unique<std::once_flag[]>(m_engine.size())) {}

  // Launches the candidate chosen for `key` on `stream` (tuning first when the key is new).
  // `grid`: a Grid or any callable of its signature, called as it is (never copied into a
  // std::function), so that a decided key's launch takes no lock and allocates nothing.
  template <class GridFn>
    requires std::is_invocable_r_v<Dim3, const GridFn&, const TuneCandidate&>
  const TuneDecision& launch(const TuneKey& key, const GridFn& grid, StreamRef stream, const TuneBuffers& buffers,
                             std::type_identity_t<Params>... args) {
    const TuneDecision* d = m_engine.find(key);
    if (d == nullptr) {
      d = &m_engine.decide(
          key, [&](std::size_t i, CUstream_st* s) { typed(i).launch(config(i, grid, s), args...); }, buffers,
          stream);
    }
    typed(d->chosen).launch(config(d->chosen, grid, stream), args...);
    return *d;
  }

  // Over a spec (KernelLoader::tuner<Sig> makes these from a manifest's "tuning" entry): the
  // spec's arguments must have the signature's sizes (UsageError otherwise).
  Tuner(Program program, TuneSpec spec, TuneOptions options = {}, Runtime& runtime = Runtime::global())
      : m_engine(std::move(program), std::move(spec), std::move(options), runtime),
        m_typed(m_engine.size()),
        m_once(std::make_unique<std::once_flag[]>(m_engine.size())) {
    using Info = detail::SignatureInfo<void(Params...)>;
    check_spec_signature(*m_engine.spec(), Info::sizes, Info::count);
  }

  // The spec's launch for `shape` ({{"n", n}}): its key, grid and outputs come from the spec.
  const TuneDecision& launch(std::initializer_list<TuneValue> shape, StreamRef stream,
                             std::type_identity_t<Params>... args) {
    return launch(std::span<const TuneValue>(shape.begin(), shape.size()), stream, args...);
  }
  const TuneDecision& launch(std::span<const TuneValue> shape, StreamRef stream,
                             std::type_identity_t<Params>... args) {
    if constexpr (sizeof...(Params) == 0) {
      return m_engine.launch(shape, stream, nullptr);
    } else {
      void* pointers[] = {const_cast<void*>(static_cast<const void*>(&args))...};
      return m_engine.launch(shape, stream, pointers);
    }
  }

  TunerEngine& engine() { return m_engine; }
  TunerStats stats() const { return m_engine.stats(); }

private:
  template <class GridFn>
  LaunchConfig config(std::size_t i, const GridFn& grid, StreamRef stream) const {
    const TuneCandidate& c = m_engine.candidate(i);
    LaunchConfig cfg;
    cfg.grid = grid(c);
    cfg.block = c.block;
    cfg.shared_mem = c.shared_mem;
    cfg.stream = stream;
    cfg.cluster = c.cluster;
    return cfg;
  }
  // The candidate's typed kernel, made (and its signature checked) once.
  const Kernel<void(Params...)>& typed(std::size_t i) {
    std::call_once(m_once[i], [&] { m_typed[i] = Kernel<void(Params...)>(m_engine.kernel(i)); });
    return m_typed[i];
  }

  TunerEngine m_engine;
  std::vector<Kernel<void(Params...)>> m_typed;
  std::unique_ptr<std::once_flag[]> m_once;
};

}  // namespace kjit
