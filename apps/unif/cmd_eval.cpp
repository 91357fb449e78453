// `unif eval [CONFIG.yaml] --model DIR [--data FILE] [--report] [--set a.b=v ...]` (SPEC §2): metrics of
// a model directory on the config's dev data (or --data), printed as one JSON object on stdout. The
// loss is the training run's: the config's training.loss (class weights, label smoothing, focal) and
// distill apply as in training. Without a config the model directory says the task, the input fields
// and the labels, and --data names the file. --report adds the per-class table (stderr) and its
// numbers ("report" in the JSON).
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include <c10/core/InferenceMode.h>

#include <nlohmann/json.hpp>

#include "apps/unif/commands.h"
#include "framework/common/error.h"
#include "framework/config/run_config.h"
#include "framework/engines/auto_devices.h"
#include "framework/metrics/metric_set.h"
#include "framework/parallel/worker_pool.h"
#include "framework/train/build.h"
#include "framework/train/evaluate.h"
#include "framework/train/model_dir.h"
#include "models/architectures.h"
#include "models/quantize.h"

namespace unif::app {

namespace {

// The run configuration of an evaluation without a config file: the model directory's task, input
// fields and span settings, `data` as data.dev, then the --set overrides.
framework::RunConfig config_from_model(const framework::LoadedModel& lm, const std::string& model,
                                       const std::string& data, const std::vector<std::string>& sets) {
  framework::RunConfig base;
  base.task = lm.meta.task;
  base.data.dev = data;
  base.data.text_fields = lm.meta.text_fields;
  base.data.label_field = lm.meta.label_field;
  base.span = lm.meta.span;
  return framework::parse_config(framework::to_yaml(base), model + " (unif eval without a config)", sets,
                                 framework::Purpose::Eval);
}

}  // namespace

Command add_eval(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "Evaluate a model directory on the config's dev data or on --data");
  auto config = std::make_shared<std::string>();
  auto model = std::make_shared<std::string>();
  auto data = std::make_shared<std::string>();
  auto report = std::make_shared<bool>(false);
  auto quantize = std::make_shared<std::string>("none");
  auto sets = std::make_shared<std::vector<std::string>>();
  cmd->add_option("config", *config, "YAML run configuration (optional with --data)");
  cmd->add_option("--model", *model, "Model directory (ours or a plain HF one)")->required();
  cmd->add_option("--data", *data, "Labelled file to evaluate on (JSONL, TSV, CSV, CoNLL); replaces data.dev");
  cmd->add_flag("--report", *report,
                "Per-class precision, recall, F1 and support (per label for multilabel, per entity type for "
                "token classification; the confusion matrix for classification): the table on stderr, its numbers "
                "under \"report\" in the JSON");
  cmd->add_option("--set", *sets, "Override a config key: a.b=value (YAML syntax), repeatable");
  add_quantize_option(cmd, *quantize);
  return [config, model, data, report, quantize, sets] {
    if (config->empty() && data->empty())
      throw UserError("unif eval: give a config (its data.dev is evaluated) or --data FILE (or both)");
    auto lm = framework::load_model_dir(*model);
    std::vector<std::string> overrides = *sets;
    if (!data->empty() && !config->empty()) overrides.push_back("data.dev=" + nlohmann::json(*data).dump());
    auto cfg = config->empty() ? config_from_model(lm, *model, *data, *sets)
                               : framework::load_config(*config, overrides, framework::Purpose::Eval);
    if (!cfg.model.unpadded) lm = framework::load_model_dir(*model, /*unpad_inputs=*/false);  // the padded path
    const std::string source = cfg.source.string();
    if (cfg.data.dev.empty()) throw UserError(source + ": data.dev: required by `unif eval` (or give --data)");
    if (lm.meta.task != cfg.task)
      throw UserError(*model + ": the model was trained for task " + to_string(lm.meta.task) + " but the config says " +
                      to_string(cfg.task));
    framework::check_segments(cfg.task, cfg.data.text_fields, source + ": data.text_fields",
                              models::usable_token_types(lm.hf.bert), "the model (" + *model + ")");
    const auto kind = framework::metric_kind(cfg.task);
    if (*report && kind != framework::MetricKind::classification && kind != framework::MetricKind::multilabel &&
        kind != framework::MetricKind::token)
      throw UserError("unif eval --report: task " + to_string(cfg.task) +
                      " has no classes to report on (classification, multilabel and token_classification do)");
    auto labels = framework::LabelSet::from_names(lm.meta.labels);
    auto dev = framework::load_task_data(
        cfg.task, cfg.data, labels, cfg.data.dev, *lm.tokenizer, lm.meta.max_seq_length, lm.meta.truncate_method, true,
        cfg.span, cfg.task == Task::MaskedLm ? framework::mlm_masking(cfg, *lm.tokenizer) : framework::MlmMasking{});
    // The run's loss (training.loss, distill): the same ℓ and Z as the dev evaluations of training.
    const auto setup = framework::evaluation_setup(cfg, lm, labels);
    // On the configured device: parallel.devices' first entry (auto: the first GPU when one is visible).
    const auto devices = framework::parse_devices(cfg.parallel.devices);
    const auto device = framework::eval_device(devices);
    if (device.is_cuda()) setup.model->to(device);
    if (*quantize == "int8") {
      if (device.is_cuda())
        throw UserError(
            "--quantize int8 runs on the CPU (dynamic int8 Linear layers); parallel.devices puts the "
            "model on " +
            device.str() + ": --set parallel.devices=[cpu]");
      try {
        std::fprintf(stderr, "%s\n", models::quantize_dynamic_int8(*setup.model).summary().c_str());
      } catch (const std::runtime_error& e) { throw UserError(e.what()); }
    }
    c10::InferenceMode inference;
    framework::WorkerPool workers(framework::cpu_eval_workers(devices, lm.model->options().hidden_size()));
    auto ev = framework::evaluate(*setup.model, cfg.task, dev, labels, cfg.training.evaluation_batch_size(),
                                  setup.class_weights, true, &workers);
    nlohmann::json j(ev.metrics);
    j["examples"] = dev.examples.size();
    if (*report) {
      const auto r = framework::evaluation_report(cfg.task, dev, labels, ev);
      if (!r) throw std::logic_error("unif eval --report: no report for task " + to_string(cfg.task));
      std::cerr << r->text();
      j["report"] = r->json();
    }
    std::cout << j.dump() << std::endl;
    return 0;
  };
}

}  // namespace unif::app
