// `unif`: the command-line entry point. Parses arguments, runs one subcommand, turns every user
// error into one `error: ...` line and exit code 2 (SPEC §2).
#include <cstdio>
#include <exception>
#include <iostream>
#include <map>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/unif/commands.h"
#include "framework/common/build_info.h"
#include "framework/common/error.h"
#include "framework/common/runtime.h"

int main(int argc, char** argv) {
  unif::init_runtime(argc, argv);
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
  add(unif::app::add_tokenize);
  app.add_subcommand("help", "Show this help")->callback([&] { throw CLI::CallForHelp(); });

  try {
    app.parse(argc, argv);
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
