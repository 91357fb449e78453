// `unif train CONFIG.yaml [--set a.b=v ...]` (SPEC §2): load and validate the config, write the
// resolved config to output_dir/config.yaml, train. With WORLD_SIZE > 1 (SPEC §6, torchrun's
// variables) the process first joins the c10d process group; only rank 0 writes.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "apps/unif/commands.h"
#include "framework/checkpoint/atomic_file.h"
#include "framework/common/error.h"
#include "framework/config/run_config.h"
#include "framework/parallel/process_group.h"
#include "framework/train/trainer.h"

namespace unif::app {

Command add_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Fine-tune a model as CONFIG.yaml says (SPEC §3)");
  auto config = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  cmd->add_option("config", *config, "YAML run configuration")->required();
  cmd->add_option("--set", *sets, "Override a config key: a.b=value (YAML syntax), repeatable");
  return [config, sets]() -> int {
    // WORLD_SIZE > 1 (torchrun or by hand): join the process group first, so that a rank failing
    // later (bad config, missing file) makes its peers fail at their next collective, not hang.
    const auto dist = framework::read_dist_env();  // UserError (exit 2) for malformed variables
    try {
      if (dist) framework::set_default_process_group(framework::ProcessGroup::join(*dist));
      const bool writer = !dist || dist->rank == 0;
      auto cfg = framework::load_config(*config, *sets, framework::Purpose::Train);
      framework::Trainer trainer(cfg);
      if (writer)  // checked and synced (a full disk is an error naming the file)
        framework::detail::write_text_file_atomic(std::filesystem::path(cfg.output_dir) / "config.yaml",
                                                  framework::to_yaml(cfg));
      const int rc = trainer.fit();
      framework::set_default_process_group(nullptr);
      return rc;
    } catch (const framework::DistributedError& e) {
      // A peer died or timed out: one clear line, not "internal".
      std::cerr << "error: " << e.what() << "\n";
      return 1;
    }
  };
}

}  // namespace unif::app
