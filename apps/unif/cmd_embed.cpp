// `unif embed --model DIR --input FILE [--output FILE] [--batch-size N] [--dimensions K]
// [--normalize | --no-normalize] [--quantize int8] [--keep-going]` (SPEC §9): one
// {"embedding": [...]} line per input line, with predict's streaming, errors and co-process rules
// (predict_io.h). A record's text is its `text` field, else the model's first text field. The model
// is an embedding model: a unif embedding run's directory, a sentence-transformers save, or a plain
// HF base model (<Family>Model: mean pooling).
#include <cstdio>
#include <memory>
#include <optional>

#include "apps/unif/commands.h"
#include "apps/unif/predict_io.h"
#include "framework/common/error.h"
#include "framework/data/dataset.h"
#include "framework/inference/predictor.h"

namespace unif::app {

Command add_embed(CLI::App& app) {
  auto* cmd = app.add_subcommand("embed", "Embed texts with an embedding model, one {\"embedding\": [...]} per line");
  auto model = std::make_shared<std::string>();
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto batch_size = std::make_shared<int64_t>(32);
  auto dimensions = std::make_shared<int64_t>(0);
  auto normalize = std::make_shared<bool>(false);
  auto no_normalize = std::make_shared<bool>(false);
  auto keep_going = std::make_shared<bool>(false);
  auto quantize = std::make_shared<std::string>("none");
  cmd->add_option("--model", *model,
                  "Embedding model directory (unif's, sentence-transformers', or a plain HF one), or a Hub id "
                  "(org/name) through the Hugging Face cache")
      ->required();
  cmd->add_option("--input", *input, "JSONL, .tsv or .csv file of texts; - reads standard input")->required();
  cmd->add_option("--output", *output, "Write here instead of standard output (- is standard output)");
  cmd->add_option("--batch-size", *batch_size, "Texts per forward pass (1 to 1048576)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--dimensions", *dimensions, "Keep the first K features of each embedding (Matryoshka sizes)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  auto* norm = cmd->add_flag("--normalize", *normalize, "L2-normalize each (cut) embedding");
  cmd->add_flag("--no-normalize", *no_normalize, "Leave the embeddings as the model makes them (its Normalize)")
      ->excludes(norm);
  cmd->add_flag("--keep-going", *keep_going, "A bad input line gets {\"error\": ...} and the run goes on");
  add_quantize_option(cmd, *quantize);
  return [=] {
    PredictorOptions options;
    options.batch_size = *batch_size;
    options.quantize = *quantize;
    options.dimensions = *dimensions;
    if (*normalize) options.normalize = true;
    if (*no_normalize) options.normalize = false;
    const auto predictor = Predictor::load(*model, options);
    if (predictor.task() != Task::Embedding)
      throw UserError("--model: " + *model + " is a " + to_string(predictor.task()) +
                      " model, not an embedding model (use unif predict)");
    if (!predictor.quantization().empty()) std::fprintf(stderr, "%s\n", predictor.quantization().c_str());
    PredictInput in(*input);
    PredictOutput out(*output);
    framework::DataConfig fields_cfg;
    fields_cfg.text_fields = {};
    fields_cfg.label_field = predictor.label_field();
    auto fields = framework::record_fields(predictor.task(), fields_cfg, /*require_labels=*/false);
    fields.bare_values = true;  // a string per line
    predict_lines(in, out, predictor, *batch_size, *keep_going, fields, "embed");
    out.commit();
    return 0;
  };
}

}  // namespace unif::app
