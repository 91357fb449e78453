// `unif train CONFIG.yaml [--set a.b=v ...]` (SPEC §2): load and validate the config, write the
// resolved config to output_dir/config.yaml, train.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "apps/unif/commands.h"
#include "framework/common/error.h"
#include "framework/config/run_config.h"
#include "framework/train/trainer.h"

namespace unif::app {

Command add_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Fine-tune a model as CONFIG.yaml says (SPEC §3)");
  auto config = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  cmd->add_option("config", *config, "YAML run configuration")->required();
  cmd->add_option("--set", *sets, "Override a config key: a.b=value (YAML syntax), repeatable");
  return [config, sets] {
    // Without a process group every rank would train alone and write the same output_dir.
    if (const char* ws = std::getenv("WORLD_SIZE"); ws != nullptr && std::atoi(ws) > 1)
      throw UserError("WORLD_SIZE=" + std::string(ws) +
                      ": multi-process training (c10d) is not available in this build yet; use "
                      "parallel.devices for several replicas in one process");
    auto cfg = framework::load_config(*config, *sets, framework::Purpose::Train);
    framework::Trainer trainer(cfg);
    {
      const auto file = std::filesystem::path(cfg.output_dir) / "config.yaml";
      const auto tmp = std::filesystem::path(file.string() + ".tmp");
      std::ofstream(tmp) << framework::to_yaml(cfg);
      std::filesystem::rename(tmp, file);
    }
    return trainer.fit();
  };
}

}  // namespace unif::app
