// kjit compile and kjit ptx.
#include "commands.hpp"
#include "errors.hpp"

#include <kjit/tools/inspect.hpp>
#include <kjit/tools/write_file.hpp>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>

namespace kjit::cli {
namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    auto comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    if (comma > pos) out.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

struct CompileArgs {
  std::vector<std::string> files;
  std::string arch;
  std::string emit = "ptx,cubin";
  std::string out_dir;
  std::vector<std::string> flags;
  bool link = false;
  bool lto = false;
};

// kjit compile --link: every file one part of one link (.cu files compiled as relocatable code,
// prebuilt device code by its extension), the cubin written as <first file's stem>.cubin.
void compile_and_link(Context& ctx, const CompileArgs& args) {
  const std::string name = std::filesystem::path(args.files.front()).stem().string();
  Link link(name);
  link.lto(args.lto);
  for (const auto& file : args.files) {
    ctx.input = file;
    if (std::filesystem::path(file).extension() == ".cu") link.add(ctx.program(file));
    else link.add_file(file);
  }
  ctx.input.clear();
  // The whole request: compiling each program (or finding it cached) and the link. r.compile_ms
  // is nvJitLink's step alone.
  const auto start = std::chrono::steady_clock::now();
  CompileResult r = ctx.runtime().link(link, ctx.options(args.arch, args.flags));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::string written;
  if (!args.out_dir.empty()) {
    written = (std::filesystem::path(args.out_dir) / (name + ".cubin")).string();
    write_file_atomically(written, r.cubin);
  }
  if (ctx.json) {
    print_json(nlohmann::json::array({{{"files", json_names(args.files)}, {"key", r.key},
                                                {"outcome", std::string(to_string(r.outcome))}, {"arch", r.arch.str()},
                                                {"ms", ms}, {"link_ms", r.compile_ms},
                                                {"cubin_bytes", r.cubin.size()},
                                                {"lto", args.lto}, {"output", json_name(written)}, {"log", r.log}}}));
  } else {
    fmt::print("{}: {} {} ({}, linked{}){}{}\n", fmt::join(args.files, " + "), to_string(r.outcome), r.key,
               r.arch.str(), args.lto ? " with LTO" : "",
               r.outcome == Outcome::compiled ? fmt::format(", {:.0f} ms, of which nvJitLink {:.0f} ms", ms, r.compile_ms)
                                              : "",
               written.empty() ? "" : fmt::format(" -> {}", written));
    if (!r.log.empty() && ctx.shows(LogLevel::warn)) fmt::print(stderr, "{}", r.log);
  }
}

// -o DIR names each output after its file's stem: two files of one stem (a/k.cu, b/k.cu) would
// write the same DIR/k.ptx, the second over the first. Refused before anything is compiled.
void refuse_same_outputs(const std::vector<std::string>& files, const std::string& out_dir) {
  std::map<std::string, std::string> by_stem;
  for (const auto& file : files) {
    auto [it, added] = by_stem.emplace(std::filesystem::path(file).stem().string(), file);
    std::error_code ec;
    if (added || it->second == file || std::filesystem::equivalent(it->second, file, ec)) continue;
    throw UsageError(fmt::format("-o {}: {} and {} would both be written as {}.*, the second over the first; "
                                 "compile them with one -o folder each",
                                 out_dir, it->second, file,
                                 (std::filesystem::path(out_dir) / it->first).string()));
  }
}

// The typed options as the library's table lists them: the flags that set each.
std::string typed_options_help() {
  std::string out = "\n\nTyped options (CompileOptions, docs/compile-options.md) and the flags that set them "
                    "(after --, but for the command's own options):";
  for (const CompileOptionField& f : compile_option_fields()) {
    std::vector<std::string> spellings;
    if (!f.cli.empty()) spellings.push_back(std::string(f.cli));
    for (std::string_view r : f.raw_flags) {
      if (!r.empty()) spellings.emplace_back(r);
    }
    if (!f.raw_prefix.empty()) spellings.push_back(std::string(f.raw_prefix) + "VALUE");
    if (f.kind == CompileOptionKind::raw_flags) spellings.emplace_back("any NVRTC or nvcc flag");
    out += fmt::format("\n  {} ({}): {}{}", f.name, fmt::join(spellings, ", "), f.doc,
                       f.kind == CompileOptionKind::count ? fmt::format(" ({} to {})", f.min, f.max) : "");
  }
  return out;
}

}  // namespace

void add_compile_commands(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<CompileArgs>();
  auto* compile = app.add_subcommand("compile", "Compile .cu files through the cache (no GPU needed with --arch)");
  compile->add_option("files", args->files, "CUDA source files")->required();
  compile->add_option("--arch", args->arch, "Target: native (default), sm_XX or compute_XX");
  compile->add_option("--emit", args->emit, "What to write with -o: ptx, cubin or ptx,cubin")->capture_default_str();
  compile->add_option("-o,--output-dir", args->out_dir, "Write <name>.ptx / <name>.cubin into this directory");
  compile->add_flag("--link", args->link,
                    "Link every file into one cubin with nvJitLink: .cu files as relocatable device code, and "
                    "prebuilt .cubin .ptx .ltoir .fatbin .o .a; a program that launches kernels from the device gets the "
                    "toolkit's libcudadevrt.a added");
  compile->add_flag("--lto", args->lto, "Link with link-time optimization (.cu files as LTO-IR; implies --link)");
  ctx.add_instantiate_option(*compile);
  compile->add_option("flags", args->flags, "NVRTC or nvcc flags, after --");
  compile->positionals_at_end(false);
  compile->footer("Prints one line per file (key, outcome, arch), or with --json an array of one object per file "
                  "with \"key\" and \"outcome\" (hit, remote_hit, compiled or waited), or {\"file\", \"error\"} "
                  "for a file that failed (the others are still compiled). With --link, one line for the link (its "
                  "whole time: \"ms\", nvJitLink's step: \"link_ms\"), and -o writes <first file>.cubin. A file "
                  "with no kernel (an empty file, or templates no --instantiate names) gives a warning, and so does a "
                  "template kernel left without an instance. One arch a run, .cu files only: a list of archs or a "
                  "folder of kernels is kjit warm's (a kjit.json lists them). Flags after -- "
                  "are NVRTC's or nvcc's (translated, host-only ones dropped with a warning): docs/nvcc-flags.md "
                  "lists what kjit does with each nvcc flag." + typed_options_help());
  compile->callback([&ctx, args, compile] {
    if (args->arch.find(',') != std::string::npos) {  // a list of archs: one compile each, or warm's
      throw UsageError(fmt::format("--arch {}: kjit compile compiles for one arch a run (once per arch: --arch {}); "
                                   "kjit warm DIR --arch {} compiles a folder's kernels (its kjit.json, "
                                   "docs/manifest.md) for several",
                                   args->arch, split_list(args->arch).front(), args->arch));
    }
    if (compile->count("--emit") > 0 && args->out_dir.empty()) {
      throw UsageError(fmt::format("--emit {}: it says what -o writes, and no -o DIR was given (kjit ptx FILE prints "
                                   "the PTX)",
                                   args->emit));
    }
    if (!args->out_dir.empty() && !args->link && !args->lto) refuse_same_outputs(args->files, args->out_dir);
    if (!args->out_dir.empty()) {
      // A path under a file (-o ok.cu/sub) or a folder that cannot be made is an input that
      // failed (kind io, exit 1), as an unwritable folder is.
      std::error_code ec;
      std::filesystem::create_directories(args->out_dir, ec);
      if (ec) throw IoError(fmt::format("creating output directory {}: {}", args->out_dir, ec.message()));
    }
    if (args->link || args->lto) {
      try {
        compile_and_link(ctx, *args);
      } catch (const std::exception& e) {  // one link, one result: the array holds its error
        if (!ctx.json) throw;
        ctx.exit_code = exit_code_for(e);
        nlohmann::json j = error_json(e, ctx.input);
        if (!ctx.input.empty()) j["file"] = ctx.input;
        fmt::print("{}\n", nlohmann::json::array({j}).dump());
      }
      return;
    }
    auto emit = split_list(args->emit);
    for (const auto& e : emit) {
      if (e != "ptx" && e != "cubin") throw UsageError(fmt::format("--emit {}: expected ptx, cubin or ptx,cubin", e));
    }
    const CompileOptions options = ctx.options(args->arch, args->flags);
    // A virtual arch makes PTX only: asking -o for a cubin of one would write nothing.
    const bool cubin_asked = compile->count("--emit") > 0 && std::find(emit.begin(), emit.end(), "cubin") != emit.end();
    if (cubin_asked && options.arch.is_virtual()) {
      throw UsageError(fmt::format("--arch {} --emit {}: a virtual arch (compute_XX) makes PTX only; for a cubin name "
                                   "a real one (--arch sm_{}{}), or --emit ptx",
                                   args->arch, args->emit, options.arch.number(), options.arch.suffix()));
    }
    try {
      ctx.runtime();  // a named cache that cannot be used stops every file: said once, exit 3
    } catch (const std::exception& e) {
      if (!ctx.json) throw;
      ctx.exit_code = exit_code_for(e);
      print_json(nlohmann::json::array({error_json(e, "")}));
      return;
    }
    // Every file is tried; a failed one is reported (in the JSON array: {"file", "error"}) and
    // the rest go on.
    nlohmann::json results = nlohmann::json::array();
    for (const auto& file : args->files) {
      ctx.input = file;
      try {
        if (std::error_code ec; std::filesystem::is_directory(file, ec)) {  // a folder of kernels: warm's
          const bool manifest = std::filesystem::exists(std::filesystem::path(file) / "kjit.json", ec);
          // An input that is no file is an io error (exit 1), as a missing one is; the line names warm.
          throw IoError(fmt::format(
              "a folder, and kjit compile takes .cu files ({}/*.cu compiles each); {}", file,
              manifest ? fmt::format("kjit warm {} compiles the kernels its kjit.json lists", file)
                       : fmt::format("kjit warm {} compiles a folder's kernels once a kjit.json lists them "
                                     "(docs/manifest.md)", file)));
        }
        Program program = ctx.program(file);
        CompileResult r = ctx.runtime().compile(program, options);
        ctx.warn_if_no_kernels(file, program, r);
        std::vector<std::string> written;
        if (!args->out_dir.empty()) {
          std::string stem = std::filesystem::path(file).stem().string();
          if (cubin_asked && !r.has_cubin()) {  // the virtual arch came in the flags (-arch=compute_90)
            throw UsageError(fmt::format("--emit {}: {} was compiled for {}, a virtual arch, which makes PTX only; "
                                         "for a cubin name a real one (--arch sm_{}), or --emit ptx",
                                         args->emit, file, r.arch.str(), r.arch.number()));
          }
          for (const auto& e : emit) {
            if (e == "cubin" && !r.has_cubin()) continue;
            auto path = std::filesystem::path(args->out_dir) / (stem + "." + e);
            write_file_atomically(path, e == "ptx" ? r.ptx : r.cubin);
            written.push_back(path.string());
          }
        }
        if (ctx.json) {
          results.push_back({{"file", json_name(file)}, {"key", r.key}, {"outcome", std::string(to_string(r.outcome))},
                             {"arch", r.arch.str()}, {"compile_ms", r.compile_ms}, {"ptx_bytes", r.ptx.size()},
                             {"cubin_bytes", r.cubin.size()}, {"outputs", json_names(written)}, {"log", r.log}});
        } else {
          fmt::print("{}: {} {} ({}){}{}\n", file, to_string(r.outcome), r.key, r.arch.str(),
                     r.outcome == Outcome::compiled ? fmt::format(", {:.0f} ms", r.compile_ms) : "",
                     written.empty() ? "" : fmt::format(" -> {}", fmt::join(written, ", ")));
          if (!r.log.empty() && ctx.shows(LogLevel::warn)) fmt::print(stderr, "{}", r.log);
        }
      } catch (const std::exception& e) {
        ctx.exit_code = std::max(ctx.exit_code, exit_code_for(e));
        if (ctx.json) {
          nlohmann::json j = error_json(e, file);
          j["file"] = json_name(file);
          j["error"]["message"] = ctx.describe(e);
          results.push_back(std::move(j));
        } else {
          fmt::print(stderr, "kjit: error: {}: {}\n", file, ctx.describe(e));
        }
      }
    }
    ctx.input.clear();
    if (ctx.json) print_json(results);
  });

  auto ptx_args = std::make_shared<CompileArgs>();
  auto* ptx = app.add_subcommand("ptx", "Print the PTX of a .cu file (all kernels, or one with --kernel)");
  auto ptx_file = std::make_shared<std::string>();
  ptx->add_option("file", *ptx_file, "CUDA source file")->required();
  ptx->add_option("--arch", ptx_args->arch, "Target: native (default), sm_XX or compute_XX");
  auto kernel = std::make_shared<std::string>();
  ptx->add_option("--kernel", *kernel, "Only this kernel (its name, a C++ kernel's plain name, without its namespace when that names one, or as in the PTX)");
  ctx.add_instantiate_option(*ptx, true);
  ptx->add_option("flags", ptx_args->flags, "NVRTC flags, after --");
  ptx->positionals_at_end(false);
  ptx->callback([&ctx, ptx_args, ptx_file, kernel] {
    ctx.refuse_extra_words("ptx", *ptx_file, ptx_args->flags);
    ctx.input = *ptx_file;
    Program program = ctx.program(*ptx_file);
    CompileResult r = ctx.runtime().compile(program, ctx.options(ptx_args->arch, ptx_args->flags));
    ctx.warn_if_no_kernels(*ptx_file, program, r);
    std::string text = kernel->empty() ? r.ptx : ctx.kernel_text(*kernel, program, r, [&](const std::string& name) {
      return inspect::function_ptx(r.ptx, name);
    });
    if (ctx.json) {
      print_json(nlohmann::json{{"file", json_name(*ptx_file)}, {"kernel", json_name(*kernel)}, {"key", r.key}, {"ptx", text}});
    } else {
      fmt::print("{}", text);
    }
  });
}

}  // namespace kjit::cli
