// Each subcommand registers itself on the CLI11 app and returns the callback main runs.
// A callback returns the process exit code; a UserError thrown from it becomes `error: ...`, exit 2.
#pragma once
#include <functional>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>

namespace unif::app {

using Command = std::function<int()>;

Command add_tokenize(CLI::App& app);
Command add_train(CLI::App& app);
Command add_eval(CLI::App& app);
Command add_predict(CLI::App& app);
Command add_embed(CLI::App& app);
Command add_serve(CLI::App& app);
Command add_init(CLI::App& app);

/// `unif help keys`: every config key with its default and meaning (docs/spec.md section 8).
int print_config_keys();

/// `--quantize none|int8` of predict, serve and eval (models/quantize.h).
inline CLI::Option* add_quantize_option(CLI::App* cmd, std::string& target) {
  return cmd
      ->add_option("--quantize", target,
                   "int8: dynamic int8 Linear layers on the CPU (faster; within about a point of fp32), none: fp32 "
                   "(default)")
      ->check(CLI::IsMember({"none", "int8"}));
}

/// `--exit-threshold U` of predict, serve and eval: a classifier trained with model.early_exit answers
/// each record at the first layer whose exit's normalized entropy is below U (0 to 1).
inline CLI::Option* add_exit_threshold_option(CLI::App* cmd, const std::shared_ptr<std::optional<double>>& target) {
  return cmd
      ->add_option_function<double>(
          "--exit-threshold", [target](const double& u) { *target = u; },
          "Early-exit classifiers (model.early_exit): answer at the first layer whose exit's normalized entropy "
          "is below U, 0 to 1 (higher: faster, less accurate); predict adds \"exit_layer\"")
      ->check(CLI::Range(0.0, 1.0));
}

}  // namespace unif::app
