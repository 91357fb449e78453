// `unif`: the command-line entry point. Parses arguments, runs one subcommand, turns every user
// error into one `error: ...` line and exit code 2 (SPEC §2).
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <algorithm>
#include <map>
#include <vector>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/unif/commands.h"
#include "framework/common/build_info.h"
#include "framework/common/error.h"
#include "framework/common/runtime.h"
#include "framework/config/did_you_mean.h"

namespace {

// Ctrl-C (or SIGTERM) before the trainer installs its own handler (loading the model and data, or
// during eval / predict): say so, then exit 128 + signal like a default kill, but not silently.
const char* volatile g_interrupt_note = "\ninterrupted: exiting before any work was saved\n";
extern "C" void on_startup_signal(int sig) {
  const char* note = g_interrupt_note;
  ssize_t ignored = ::write(2, note, std::strlen(note));
  (void)ignored;
  ::_exit(128 + sig);
}

/// `word` is close to `name` (a typo) or one is a prefix of the other (`evaluate` for `eval`).
std::string suggest_command(const std::string& word, const std::vector<std::string>& names) {
  for (const auto& n : names)
    if (word.size() >= 3 && (n.rfind(word, 0) == 0 || word.rfind(n, 0) == 0)) return " (did you mean '" + n + "'?)";
  return unif::framework::did_you_mean(word, names);
}

}  // namespace

int main(int argc, char** argv) {
  // Ctrl-C and SIGTERM are blocked until their handler is in place: init_runtime may re-exec unif,
  // and a signal sent between the exec and the handler would otherwise kill it silently, or be lost
  // where the parent ignores it (a background job of a script) and leave unif waiting on its input.
  // A blocked signal stays pending across the exec and reaches the handler below.
  sigset_t startup_signals;
  sigemptyset(&startup_signals);
  sigaddset(&startup_signals, SIGINT);
  sigaddset(&startup_signals, SIGTERM);
  sigprocmask(SIG_BLOCK, &startup_signals, nullptr);
  unif::init_runtime(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "train") == 0)
    g_interrupt_note =
        "\ninterrupted before training started (loading the config, model and data): nothing was trained; "
        "run the command again to start\n";
  std::signal(SIGINT, on_startup_signal);
  std::signal(SIGTERM, on_startup_signal);
  sigprocmask(SIG_UNBLOCK, &startup_signals, nullptr);
  CLI::App app{"unif: fine-tune BERT-family models on LibTorch", "unif"};
  // SPEC §7: the LibTorch, CUDA, cuDNN and NCCL versions compiled in, and the GPUs seen.
  app.set_version_flag("--version", [] {
    std::string v = std::string("unif ") + UNIF_VERSION + "\n" + unif::build_info();
    v.pop_back();  // CLI11 ends the text with its own newline
    return v;
  });
  app.require_subcommand(0, 1);
  std::map<CLI::App*, unif::app::Command> commands;
  auto add = [&](unif::app::Command (*fn)(CLI::App&)) {
    auto before = app.get_subcommands({});
    auto cmd = fn(app);
    auto after = app.get_subcommands({});
    commands[after.back()] = cmd;
    (void)before;
  };
  add(unif::app::add_train);
  add(unif::app::add_eval);
  add(unif::app::add_predict);
  add(unif::app::add_embed);
  add(unif::app::add_serve);
  add(unif::app::add_tokenize);
  add(unif::app::add_init);
  app.add_subcommand("help",
                     "List the commands; `unif help CMD` = `unif CMD --help`; `unif help keys`: every config key");

  std::vector<std::string> names;
  std::string listed;
  for (auto* sub : app.get_subcommands({})) {
    names.push_back(sub->get_name());
    listed += (listed.empty() ? "" : ", ") + sub->get_name();
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  auto unknown_command = [&](const std::string& word) {
    std::cerr << "error: unknown command '" << word << "'" << suggest_command(word, names) << "; the commands are "
              << listed << " (see `unif help`)\n";
    return 2;
  };
  if (!args.empty() && args[0] == "help") {
    // `unif help` lists the commands; `unif help CMD` is exactly `unif CMD --help`.
    if (args.size() == 1) {
      std::cout << app.help();
      return 0;
    }
    if (args.size() == 2 && args[1] == "keys") return unif::app::print_config_keys();
    if (args.size() > 2) {
      std::cerr << "error: `unif help` takes one command name, got " << args.size() - 1 << " arguments\n";
      return 2;
    }
    if (std::find(names.begin(), names.end(), args[1]) == names.end() || args[1] == "help") {
      if (args[1] == "help") {
        std::cout << app.help();
        return 0;
      }
      return unknown_command(args[1]);
    }
    args = {args[1], "--help"};
  } else if (!args.empty() && !args[0].empty() && args[0][0] != '-' &&
             std::find(names.begin(), names.end(), args[0]) == names.end()) {
    return unknown_command(args[0]);
  }

  try {
    std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last-first
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "error: " << e.what() << " (see `unif help`)\n";
    return 2;
  }
  for (auto& [sub, run] : commands) {
    if (!sub->parsed()) continue;
    try {
      return run();
    } catch (const unif::UserError& e) {
      // One line (SPEC §2): several problems (a ConfigError lists each) are joined with "; ".
      std::string msg = e.what();
      for (size_t p = msg.find('\n'); p != std::string::npos; p = msg.find('\n', p)) msg.replace(p, 1, "; ");
      std::cerr << "error: " << msg << "\n";
      return 2;
    } catch (const std::exception& e) {
      std::cerr << "error: internal: " << e.what() << "\n";
      return 1;
    }
  }
  std::cout << app.help();
  return 0;
}
