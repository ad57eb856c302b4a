// kjit diff, kjit resources, kjit sass: parse, call kjit::inspect, print.
#include "commands.hpp"

#include <nlohmann/json.hpp>

#include <kjit/tools/inspect.hpp>

#include <fmt/ranges.h>

#include <cstdlib>
#include <memory>

namespace kjit::cli {
namespace {

// "--use_fast_math -DX=1" -> {"--use_fast_math", "-DX=1"} (whitespace-separated, no quoting).
std::vector<std::string> split_flags(const std::string& s) {
  std::vector<std::string> out;
  if (s == "{}") return out;  // CLI11's spelling of an empty value (--a-flags=)
  std::size_t pos = 0;
  while (pos < s.size()) {
    const std::size_t start = s.find_first_not_of(" \t\n", pos);
    if (start == std::string::npos) break;
    std::size_t end = s.find_first_of(" \t\n", start);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    pos = end;
  }
  return out;
}

std::string side_label(const std::string& file, const std::string& arch, const std::string& flags) {
  std::string label = file;
  std::string extra = arch.empty() ? std::string() : "--arch " + arch;
  if (!flags.empty()) extra += (extra.empty() ? "" : " ") + flags;
  if (!extra.empty()) label += " [" + extra + "]";
  return label;
}

struct DiffArgs {
  std::vector<std::string> files;
  std::string arch, a_arch, b_arch, a_flags, b_flags;
  std::string color = "auto";
  bool raw = false;
  bool base_opcodes = false;
  int context = 3;
};

struct ResourcesArgs {
  std::string file;
  std::string arch;
  std::vector<std::string> flags;
};

struct SassArgs {
  std::string file;
  std::string arch;
  std::string kernel;
  std::vector<std::string> flags;
};

}  // namespace

void add_inspect_commands(CLI::App& app, Context& ctx) {
  auto d = std::make_shared<DiffArgs>();
  auto* diff = app.add_subcommand("diff", "Compare the PTX of two builds: two files, two option sets or two archs");
  diff->add_option("files", d->files, "A.cu [B.cu] (B defaults to A)")->required()->expected(1, 2);
  diff->add_option("--arch", d->arch, "Target of both sides: native (default), sm_XX or compute_XX");
  diff->add_option("--a-arch", d->a_arch, "Target of side a (overrides --arch)");
  diff->add_option("--b-arch", d->b_arch, "Target of side b (overrides --arch)");
  diff->add_option("--a-flags", d->a_flags, "NVRTC flags of side a, one string: --a-flags=\"--use_fast_math -DN=4\"");
  diff->add_option("--b-flags", d->b_flags, "NVRTC flags of side b, one string");
  ctx.add_instantiate_option(*diff);
  diff->add_flag("--raw", d->raw, "Diff the PTX as NVRTC wrote it (no normalization)");
  diff->add_flag("--base-opcodes", d->base_opcodes, "Group instruction counts by base opcode (ld, mul, ex2, ...)");
  diff->add_option("--context", d->context, "Lines of context in the unified diff")->capture_default_str();
  diff->add_option("--color", d->color, "Color the output: auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  diff->footer("Normalizes first (comments, debug info and register/label numbering removed), then prints per "
               "kernel the instruction counts with deltas, registers and spills (ptxas), and a unified diff. Flags "
               "after -- go to both sides (with one file, give a side its own with --a-flags/--b-flags).\n"
               "Exit code: 0 equal, 1 different (like diff(1)) or nothing to compare (no kernels: a template needs "
               "--instantiate); see kjit --help for the rest.");
  diff->callback([&ctx, d] {
    const std::string a_file = d->files.front();
    const std::string b_file = d->files.size() > 1 ? d->files[1] : a_file;
    const std::string a_arch = d->a_arch.empty() ? d->arch : d->a_arch;
    const std::string b_arch = d->b_arch.empty() ? d->arch : d->b_arch;
    const std::string common_flags = fmt::format("{}", fmt::join(ctx.nvrtc_flags, " "));
    if (d->files.size() == 1 && a_arch == b_arch && d->a_flags == d->b_flags && !ctx.nvrtc_flags.empty()) {
      // "kjit diff a.cu -- --use_fast_math": the flags go to both sides, so both are one build.
      throw UsageError(fmt::format("kjit diff {} -- {}: flags after -- go to both sides, so both sides are the same "
                                   "build of {}; give one side its flags with --b-flags=\"{}\" (--a-flags for the "
                                   "other), or compare two files or two archs (--a-arch, --b-arch)",
                                   a_file, common_flags, a_file, common_flags));
    }
    auto joined = [&common_flags](const std::string& side) {
      return side.empty() || side == "{}" ? common_flags : common_flags.empty() ? side : side + " " + common_flags;
    };
    const CompileOptions a_options = inspect::with_resource_report(ctx.options(a_arch, split_flags(d->a_flags)));
    const CompileOptions b_options = inspect::with_resource_report(ctx.options(b_arch, split_flags(d->b_flags)));
    ctx.input = a_file;
    const Program a_program = ctx.program(a_file);
    const CompileResult a = ctx.runtime().compile(a_program, a_options);
    ctx.input = b_file;
    const Program b_program = ctx.program(b_file);
    const CompileResult b = ctx.runtime().compile(b_program, b_options);
    ctx.input.clear();
    ctx.warn_if_no_kernels(a_file, a_program, a);
    if (b_file != a_file) ctx.warn_if_no_kernels(b_file, b_program, b);
    inspect::DiffOptions options;
    options.raw = d->raw;
    options.grouping = d->base_opcodes ? inspect::Grouping::base_opcode : inspect::Grouping::opcode;
    options.context = d->context;
    options.a_label = side_label(a_file, a_arch, joined(d->a_flags));
    options.b_label = side_label(b_file, b_arch, joined(d->b_flags));
    const inspect::DiffResult result = inspect::diff(a, b, options);
    const bool color = d->color == "always" ||
                       (d->color == "auto" && ctx.stdout_is_terminal() && std::getenv("NO_COLOR") == nullptr);
    if (ctx.json) fmt::print("{}\n", result.to_json());
    else fmt::print("{}", result.to_text(color ? inspect::Color::always : inspect::Color::never));
    ctx.exit_code = result.equal() ? k_exit_ok : k_exit_different;
  });

  auto r = std::make_shared<ResourcesArgs>();
  auto* resources = app.add_subcommand("resources", "Registers, spills, stack, shared, constant and local memory per kernel (ptxas)");
  resources->add_option("file", r->file, "CUDA source file")->required();
  resources->add_option("--arch", r->arch, "Target: native (default) or sm_XX");
  ctx.add_instantiate_option(*resources);
  resources->add_option("flags", r->flags, "NVRTC flags, after --");
  resources->positionals_at_end(false);
  resources->footer("Compiles with -Xptxas=-v (through the cache) and prints ptxas's report, completed from the "
                    "cubin (cmem: the kernel's constant banks; lmem: local memory per thread; max-thr: from the "
                    "launch bounds and registers, or the driver's with a GPU of the arch; \"-\" where unknown), "
                    "as a table, or with --json as an array of objects. C++ kernels by their demangled names.");
  resources->callback([&ctx, r] {
    ctx.refuse_extra_words("resources", r->file, r->flags);
    ctx.input = r->file;
    const Program program = ctx.program(r->file);
    const CompileResult result =
        ctx.runtime().compile(program, inspect::with_resource_report(ctx.options(r->arch, r->flags)));
    ctx.warn_if_no_kernels(r->file, program, result);
    const auto usage = inspect::resource_usage(result);
    fmt::print("{}", ctx.json ? inspect::resources_json(usage) + "\n" : inspect::resources_table(usage));
  });

  auto s = std::make_shared<SassArgs>();
  auto* sass = app.add_subcommand("sass", "Print the SASS of a .cu file (all kernels, or one with --kernel)");
  sass->add_option("file", s->file, "CUDA source file")->required();
  sass->add_option("--arch", s->arch, "Target: native (default) or sm_XX");
  sass->add_option("--kernel", s->kernel, "Only this kernel (its name, a C++ kernel's plain name, without its namespace when that names one, or as in the PTX)");
  ctx.add_instantiate_option(*sass, true);
  sass->add_option("flags", s->flags, "NVRTC flags, after --");
  sass->positionals_at_end(false);
  sass->footer("Needs nvdisasm or cuobjdump from the CUDA toolkit ($CUDA_HOME/bin, /usr/local/cuda/bin or PATH); "
               "without them it exits 3 (could not run) and names the folders searched.");
  sass->callback([&ctx, s] {
    ctx.refuse_extra_words("sass", s->file, s->flags);
    ctx.input = s->file;
    const Program program = ctx.program(s->file);
    const CompileResult result = ctx.runtime().compile(program, ctx.options(s->arch, s->flags));
    const std::string text = s->kernel.empty() ? inspect::sass(result) : ctx.kernel_text(s->kernel, program, result, [&](const std::string& name) {
      return inspect::sass(result, name);
    });
    if (ctx.json) {
      print_json(nlohmann::json{{"file", json_name(s->file)}, {"kernel", json_name(s->kernel)}, {"key", result.key}, {"sass", text}});
    } else {
      fmt::print("{}", text);
    }
  });
}

}  // namespace kjit::cli
