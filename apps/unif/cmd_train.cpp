// `unif train CONFIG.yaml [--set a.b=v ...]` (SPEC §2): load and validate the config, train (the
// trainer writes the resolved config to output_dir/config.yaml). With WORLD_SIZE > 1 (SPEC §6, torchrun's
// variables) the process first joins the c10d process group; only rank 0 writes.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "apps/unif/commands.h"
#include "framework/common/error.h"
#include "framework/config/run_config.h"
#include "framework/parallel/process_group.h"
#include "framework/train/trainer.h"

namespace unif::app {

Command add_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Fine-tune a model as CONFIG.yaml says (docs/spec.md: every key)");
  auto config = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  cmd->add_option("config", *config, "YAML run configuration")->required();
  cmd->add_option("--set", *sets, "Override a config key: a.b=value (YAML syntax), repeatable");
  cmd->footer(
      "CONFIG.yaml sections: task, output_dir, seed; model (pretrained, max_seq_length, ...); data (train, dev,\n"
      "test, text_fields, label_field, labels); training (batch_size, epochs, max_steps, optimizer, schedule,\n"
      "precision, eval_every, save_every, loss, early_stopping, best_metric, freeze, report_to, ...); parallel\n"
      "(devices); adversarial; span; distill. A starting config: unif init TASK [--model DIR] [--data FILE] >\n"
      "config.yaml.\n"
      "Every key with its default: unif help keys. Reference: docs/spec.md.");
  return [config, sets]() -> int {
    // WORLD_SIZE > 1 (torchrun or by hand): join the process group first, so that a rank failing
    // later (bad config, missing file) makes its peers fail at their next collective, not hang.
    // The group is joined here, once, and handed to the trainer (null: one process).
    const auto dist = framework::read_dist_env();  // UserError (exit 2) for malformed variables
    std::shared_ptr<framework::ProcessGroup> group;
    try {
      if (dist) group = framework::ProcessGroup::join(*dist);
      auto cfg = framework::load_config(*config, *sets, framework::Purpose::Train);
      framework::Trainer trainer(cfg, group);  // fit() writes output_dir/config.yaml (rank 0)
      return trainer.fit();
    } catch (const framework::DistributedError& e) {
      // A peer died or timed out: one clear line, not "internal".
      std::cerr << "error: " << e.what() << "\n";
      return 1;
    }
  };
}

}  // namespace unif::app
