#include "usage_hints.hpp"

#include <kjit/compile_options.hpp>
#include <kjit/error.hpp>
#include <kjit/tools/closest_names.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <string_view>
#include <unordered_map>

namespace kjit::cli {
namespace {

std::vector<std::string> all_subcommand_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::App* sub : command.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// The command the user reached: `kjit cache ls` gives cache's ls.
CLI::App* deepest_command(CLI::App& app) {
  CLI::App* command = &app;
  while (!command->get_subcommands().empty()) command = command->get_subcommands().front();
  return command;
}

// Every option a command takes (its own and, as they fall through, its parents'), as written.
std::vector<std::string> option_names(const CLI::App* command) {
  std::vector<std::string> names;
  for (; command != nullptr; command = command->get_parent()) {
    for (const CLI::Option* o : command->get_options()) {
      for (const auto& l : o->get_lnames()) names.push_back("--" + l);
      for (const auto& s : o->get_snames()) names.push_back("-" + s);
    }
  }
  return names;
}

// The words of the command line that are not options nor an option's value, with their place.
std::vector<std::pair<int, std::string>> words(const CLI::App* command, int argc, char** argv) {
  const std::vector<std::string> options = [&] {
    std::vector<std::string> with_value;
    for (const CLI::App* c = command; c != nullptr; c = c->get_parent()) {
      for (const CLI::Option* o : c->get_options()) {
        if (o->get_items_expected_min() == 0 || o->get_positional()) continue;
        for (const auto& l : o->get_lnames()) with_value.push_back("--" + l);
        for (const auto& s : o->get_snames()) with_value.push_back("-" + s);
      }
    }
    return with_value;
  }();
  std::vector<std::pair<int, std::string>> out;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (!a.starts_with("-")) {
      out.emplace_back(i, std::string(a));
      continue;
    }
    if (a.find('=') != std::string_view::npos) continue;
    if (std::find(options.begin(), options.end(), a) != options.end()) ++i;  // skip its value
  }
  return out;
}

std::string did_you_mean(const std::vector<std::string>& names) {
  if (names.empty()) return {};
  return fmt::format(" (did you mean {}?)", fmt::join(names, " or "));
}

// NVRTC or nvcc knows `flag` (one word, or a flag and its value; kjit's one list of them decides).
bool is_compile_flag(std::vector<std::string> flag) {
  CompileOptions o;
  o.flags = std::move(flag);
  try {
    (void)canonical_flags(o, Arch::sm(90));
    return true;
  } catch (const Error&) {
    return false;
  }
}

// A command that takes NVRTC flags after "--": one with a "flags" positional (compile, ptx, sass,
// resources, cache explain), and diff, which gives them to both sides.
bool takes_compile_flags(const CLI::App* command) {
  if (command->get_name() == "diff") return true;
  for (const CLI::Option* o : command->get_options()) {
    if (o->get_positional() && o->get_name(true, false) == "flags") return true;
  }
  return false;
}

std::string shell_quoted(std::string_view arg) {
  const bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_=.,/:+@%").find(c) != std::string_view::npos;
  });
  if (plain) return std::string(arg);
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string usage_message(CLI::App& app, const CLI::ParseError& error, int argc, char** argv,
                          const std::vector<std::string>& after_dashes) {
  CLI::App* command = deepest_command(app);
  const std::vector<std::string> extras = app.remaining(true);

  // "kjit profile /bin/true": the program was meant, and goes after "--".
  if (command->get_name() == "profile" && !extras.empty() && !extras.front().starts_with("-")) {
    return fmt::format("{}: the program goes after \"--\": kjit profile [options] -- {}", extras.front(),
                       fmt::join(extras, " "));
  }

  // "kjit frobnicate", "kjit compil", "kjit cache sats": name the unknown command and what was meant,
  // not "A subcommand is required".
  if (command->get_subcommands([](const CLI::App*) { return true; }).size() > 0 && command->get_subcommands().empty()) {
    const std::vector<std::pair<int, std::string>> all = words(command, argc, argv);
    // The word after the last command reached (the first word for kjit itself).
    std::string word;
    if (command == &app) {
      if (!all.empty()) word = all.front().second;
    } else {
      for (std::size_t i = 0; i + 1 < all.size(); ++i) {
        if (all[i].second == command->get_name()) {
          word = all[i + 1].second;
          break;
        }
      }
    }
    const std::vector<std::string> names = all_subcommand_names(*command);
    std::string path;  // "cache remote"
    for (const CLI::App* c = command; c != &app; c = c->get_parent()) path = c->get_name() + (path.empty() ? "" : " " + path);
    const std::string what = command == &app ? "command" : fmt::format("{} command", path);
    if (!word.empty() && std::find(names.begin(), names.end(), word) == names.end()) {
      return fmt::format("unknown {} \"{}\"{}; the {}s are {}", what, word, did_you_mean(closest_names(word, names)),
                         what, fmt::join(names, ", "));
    }
    if (word.empty() && extras.empty()) {  // "kjit cache": which one
      return fmt::format("no {} given; the {}s are {}", what, what, fmt::join(names, ", "));
    }
  }

  // Options nobody has: what was meant, or for NVRTC's and nvcc's flags, where they go. A flag
  // whose value is the next word (-I inc, -maxrregcount 32, -Xptxas -v, -Xcompiler -fPIC) moves
  // with it, also when that word is one of kjit's own options (-v). Linear in the words: each
  // extra is found at the next of its places not taken yet.
  std::vector<bool> misplaced_at(static_cast<std::size_t>(std::max(argc, 1)), false);
  std::vector<int> misplaced;  // places in argv
  std::vector<std::string> unknown;
  std::unordered_map<std::string_view, std::vector<int>> places;  // each word's places in argv, last first
  for (int i = argc - 1; i >= 1; --i) places[argv[i]].push_back(i);
  auto next_place = [&](std::string_view word) {
    auto it = places.find(word);
    if (it == places.end()) return 0;
    while (!it->second.empty() && misplaced_at[static_cast<std::size_t>(it->second.back())]) it->second.pop_back();
    return it->second.empty() ? 0 : it->second.back();
  };
  auto misplace = [&](int at) {
    misplaced_at[static_cast<std::size_t>(at)] = true;
    misplaced.push_back(at);
  };
  const std::vector<std::string> options = option_names(command);
  const bool compile_flags = takes_compile_flags(command);
  for (const std::string& extra : extras) {
    if (!extra.starts_with("-") || extra == "-") continue;
    const int at = next_place(extra);
    if (at == 0 && places.count(extra) > 0) continue;  // moved already, as the value of the flag before it
    const std::string name = extra.substr(0, extra.find('='));
    if (compile_flags && at > 0) {
      // With the next word when that word is no flag of its own and the two are one (-Xcompiler
      // -fPIC, -Xptxas -v, -I inc), else alone (-O3, -Xcompiler alone is dropped too).
      const bool next_free = at + 1 < argc && !misplaced_at[static_cast<std::size_t>(at + 1)];
      if (next_free && !is_compile_flag({argv[at + 1]}) && is_compile_flag({extra, argv[at + 1]})) {
        misplace(at);
        misplace(at + 1);
        continue;
      }
      if (is_compile_flag({extra})) {
        misplace(at);
        continue;
      }
      if (next_free && is_compile_flag({extra, argv[at + 1]})) {  // -Xptxas -v: a flag that needs its value
        misplace(at);
        misplace(at + 1);
        continue;
      }
    }
    // A one-letter option is one edit from every other: no guess for those.
    const std::vector<std::string> close = name.size() > 2 ? closest_names(name, options) : std::vector<std::string>{};
    unknown.push_back(fmt::format("unknown option {}{}", name, did_you_mean(close)));
  }
  if (!unknown.empty()) {
    return fmt::format("{}", fmt::join(unknown, "; "));
  }
  if (!misplaced.empty()) {
    std::sort(misplaced.begin(), misplaced.end());
    std::vector<std::string> line{"kjit"};
    std::vector<std::string> moved;
    for (int i = 1; i < argc; ++i) (misplaced_at[static_cast<std::size_t>(i)] ? moved : line).push_back(shell_quoted(argv[i]));
    line.emplace_back("--");
    line.insert(line.end(), moved.begin(), moved.end());
    for (const auto& f : after_dashes) line.push_back(shell_quoted(f));
    return fmt::format("{}: flags for NVRTC and nvcc go after \"--\": {}", fmt::join(moved, " "),
                       fmt::join(line, " "));
  }
  return error.what();
}

}  // namespace kjit::cli
