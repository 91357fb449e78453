// `unif eval CONFIG.yaml --model DIR [--set a.b=v ...]` (SPEC §2): metrics of a model directory on
// the config's dev data, printed as one JSON object on stdout. The loss is the training run's: the
// config's training.loss (class weights, label smoothing, focal) and distill apply as in training.
#include <iostream>

#include <c10/core/InferenceMode.h>

#include <nlohmann/json.hpp>

#include "apps/unif/commands.h"
#include "framework/common/error.h"
#include "framework/config/run_config.h"
#include "framework/engines/auto_devices.h"
#include "framework/parallel/worker_pool.h"
#include "framework/train/build.h"
#include "framework/train/evaluate.h"
#include "framework/train/model_dir.h"
#include "models/architectures.h"

namespace unif::app {

Command add_eval(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "Evaluate a model directory on the config's dev data");
  auto config = std::make_shared<std::string>();
  auto model = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  cmd->add_option("config", *config, "YAML run configuration")->required();
  cmd->add_option("--model", *model, "Model directory (ours or a plain HF one)")->required();
  cmd->add_option("--set", *sets, "Override a config key: a.b=value (YAML syntax), repeatable");
  return [config, model, sets] {
    auto cfg = framework::load_config(*config, *sets, framework::Purpose::Eval);
    if (cfg.data.dev.empty()) throw UserError(*config + ": data.dev: required by `unif eval`");
    auto lm = framework::load_model_dir(*model);
    if (lm.meta.task != cfg.task)
      throw UserError(*model + ": the model was trained for task " + to_string(lm.meta.task) + " but the config says " +
                      to_string(cfg.task));
    framework::check_segments(cfg.task, cfg.data.text_fields, *config + ": data.text_fields",
                              models::usable_token_types(lm.hf.bert), "the model (" + *model + ")");
    auto labels = framework::LabelSet::from_names(lm.meta.labels);
    auto data = framework::load_task_data(
        cfg.task, cfg.data, labels, cfg.data.dev, *lm.tokenizer, lm.meta.max_seq_length, lm.meta.truncate_method, true,
        cfg.span, cfg.task == Task::MaskedLm ? framework::mlm_masking(cfg, *lm.tokenizer) : framework::MlmMasking{});
    // The run's loss (training.loss, distill): the same ℓ and Z as the dev evaluations of training.
    const auto setup = framework::evaluation_setup(cfg, lm, labels);
    // On the configured device: parallel.devices' first entry (auto: the first GPU when one is visible).
    const auto devices = framework::parse_devices(cfg.parallel.devices);
    const auto device = framework::eval_device(devices);
    if (device.is_cuda()) setup.model->to(device);
    c10::InferenceMode inference;
    framework::WorkerPool workers(framework::cpu_eval_workers(devices, lm.model->options().hidden_size()));
    auto ev = framework::evaluate(*setup.model, cfg.task, data, labels, cfg.training.batch_size, setup.class_weights,
                                  true, &workers);
    nlohmann::json j(ev.metrics);
    j["examples"] = data.examples.size();
    std::cout << j.dump() << std::endl;
    return 0;
  };
}

}  // namespace unif::app
