// `unif eval [CONFIG.yaml] --model DIR [--data FILE] [--report] [--set a.b=v ...]` (SPEC §2): metrics of
// a model directory on the config's dev data (or --data), printed as one JSON object on stdout. The
// loss is the training run's: the config's training.loss (class weights, label smoothing, focal) and
// distill apply as in training. Without a config the model directory says the task, the input fields
// and the labels, and --data names the file. --report adds the per-class table (stderr) and its
// numbers ("report" in the JSON).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "apps/unif/commands.h"
#include "framework/common/error.h"
#include "framework/config/run_config.h"
#include "framework/data/ranking.h"
#include "framework/inference/predictor.h"

namespace unif::app {

namespace {

// Whether a predictor loaded with `a` is the one `b` asks for (the batch size is read per call).
bool same_loading(const PredictorOptions& a, const PredictorOptions& b) {
  return a.device == b.device && a.threads == b.threads && a.quantize == b.quantize && a.unpadded == b.unpadded &&
         a.exit_threshold == b.exit_threshold;
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
  cmd->add_option("--data", *data,
                  "Labelled file to evaluate on (JSONL, TSV, CSV, CoNLL); replaces data.dev. A pair model also takes a "
                  "ranking file: {\"query\", \"texts\": [...], \"labels\": [...]} a line");
  cmd->add_flag("--report", *report,
                "Per-class precision, recall, F1 and support (per label for multilabel, per entity type for "
                "token classification; the confusion matrix for classification): the table on stderr, its numbers "
                "under \"report\" in the JSON");
  cmd->add_option("--set", *sets, "Override a config key: a.b=value (YAML syntax), repeatable");
  add_quantize_option(cmd, *quantize);
  auto exit_threshold = std::make_shared<std::optional<double>>();
  add_exit_threshold_option(cmd, exit_threshold);
  return [config, model, data, report, quantize, sets, exit_threshold] {
    const bool retrieval =
        std::any_of(sets->begin(), sets->end(), [](const std::string& s) { return s.rfind("data.retrieval", 0) == 0; });
    if (config->empty() && data->empty() && !retrieval)
      throw UserError(
          "unif eval: give a config (its data.dev is evaluated) or --data FILE (or both); an embedding model also "
          "takes a retrieval set alone (--set data.retrieval.queries=FILE --set data.retrieval.corpus=FILE)");
    // A ranking file (one {"query", "texts", "labels"} a line) ranks each query's texts by a pair
    // model's scores: the retrieval metrics (Predictor::evaluate_ranking).
    if (!data->empty() && framework::is_ranking_file(*data)) {
      PredictorOptions options;
      options.quantize = *quantize;
      if (!config->empty())
        options = Predictor::options_for(framework::load_config(*config, *sets, framework::Purpose::Eval), *quantize);
      options.exit_threshold = *exit_threshold;
      const auto ranker = Predictor::load(*model, options);
      if (!ranker.quantization().empty()) std::fprintf(stderr, "%s\n", ranker.quantization().c_str());
      if (*report) throw UserError("--report: a ranking has no classes to report on");
      std::cout << ranker.evaluate_ranking(*data).to_json().dump() << std::endl;
      return 0;
    }
    // With a config: its devices and model.unpadded say how to load the model. Without one, the
    // model directory says the task and fields, and the --set overrides may ask for other options.
    std::optional<framework::RunConfig> cfg;
    std::optional<Predictor> predictor;
    if (!config->empty()) {
      std::vector<std::string> overrides = *sets;
      if (!data->empty()) overrides.push_back("data.dev=" + nlohmann::json(*data).dump());
      cfg = framework::load_config(*config, overrides, framework::Purpose::Eval);
    } else {
      PredictorOptions first;
      first.device = "auto";
      first.quantize = *quantize;
      first.exit_threshold = *exit_threshold;
      predictor = Predictor::load(*model, first);
      cfg = predictor->eval_config(*data, *sets);
    }
    auto options = Predictor::options_for(*cfg, *quantize);
    options.exit_threshold = *exit_threshold;
    if (!predictor || !same_loading(predictor->options(), options)) predictor = Predictor::load(*model, options);
    if (!predictor->quantization().empty()) std::fprintf(stderr, "%s\n", predictor->quantization().c_str());
    const auto result = predictor->evaluate(*cfg, *report);
    if (*report) std::cerr << result.report_text;
    std::cout << result.to_json().dump() << std::endl;
    return 0;
  };
}

}  // namespace unif::app
