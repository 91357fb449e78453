// `unif predict --model DIR --input FILE [--output FILE] [--batch-size N] [--keep-going] [--top-k K]`
// (SPEC §4, §7, §8): one JSON line per input line, output line N answering input line N (a blank
// line gets {"error": "blank line"}). Fields other than the model's inputs are carried through as
// "input". The answers are unif::Predictor's (framework/inference/predictor.h), as `unif serve`'s.
// `-` is standard input / output (predict_io.h: the output ends). The input is streamed: a regular
// file in chunks of lines (memory does not grow with the input), a pipe or terminal batch by batch
// as lines arrive (a co-process gets each answer before it writes the next line); each chunk runs
// under inference mode, in length-sorted batches over a worker pool. A bad line ends the run after
// the answers before it are written, or with --keep-going gets {"error": "..."}. Outputs that are
// not finite are never turned into a label.
#include <chrono>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/unif/commands.h"
#include "apps/unif/predict_io.h"
#include "framework/common/error.h"
#include "framework/data/dataset.h"
#include "framework/data/records.h"
#include "framework/inference/predictor.h"

namespace unif::app {

using nlohmann::json;

void predict_lines(PredictInput& in, PredictOutput& out, const Predictor& predictor, int64_t batch_size,
                   bool keep_going, const framework::RecordFields& fields, const char* command) {
  framework::RecordReader reader(in.stream(), in.name(), in.format(), fields);
  // Chunks of lines: enough for full length-sorted batches, few enough to keep memory flat. A pipe's
  // chunk ends early, at the lines already there.
  const auto chunk = static_cast<size_t>(std::max<int64_t>(2048, 16 * batch_size));
  const auto t0 = std::chrono::steady_clock::now();
  auto last_progress = t0;
  bool progress_shown = false;
  int64_t done = 0;
  std::vector<PredictLine> lines;
  for (bool more = true; more;) {
    lines.clear();
    while (lines.size() < chunk) {
      // A pipe: answer what has come before waiting for more.
      if (in.interactive() && !lines.empty() && !in.line_ready()) break;
      PredictLine l;
      try {
        if (!(more = reader.next(l.record))) break;
      } catch (const UserError& e) {
        if (in.stream().bad()) throw;  // a read error ends the input, not just a line
        l.error = e.what();
      }
      const bool bad = !l.error.empty();
      lines.push_back(std::move(l));
      if (bad && !keep_going) {
        more = false;
        break;
      }
    }
    if (lines.empty()) break;
    std::vector<framework::Record> records;
    for (const auto& l : lines)
      if (l.error.empty()) records.push_back(l.record);
    const auto answers = predictor.predict(records, in.name());
    std::ostream& o = out.stream();
    for (size_t i = 0, k = 0; i < lines.size(); ++i) {
      const std::string* error = &lines[i].error;
      if (error->empty() && answers[k].rejected) error = &answers[k].error;
      if (!error->empty()) {
        if (!keep_going) {
          out.flush();
          throw UserError(*error);
        }
        o << json{{"error", *error}}.dump() << "\n";
      } else {
        o << answers[k].to_json().dump() << "\n";
      }
      if (lines[i].error.empty()) ++k;
    }
    out.flush();
    done += static_cast<int64_t>(lines.size());
    const auto now = std::chrono::steady_clock::now();
    if (more && now - last_progress > std::chrono::seconds(10)) {
      const double s = std::chrono::duration<double>(now - t0).count();
      std::fprintf(stderr, "%s: %lld lines in %.0f s (%.0f lines/s)\n", command, static_cast<long long>(done), s,
                   done / s);
      last_progress = now;
      progress_shown = true;
    }
  }
  if (progress_shown)
    std::fprintf(stderr, "%s: done, %lld lines in %.0f s\n", command, static_cast<long long>(done),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

Command add_predict(CLI::App& app) {
  auto* cmd = app.add_subcommand("predict", "Predict with a model directory, one JSON line per input line");
  auto model = std::make_shared<std::string>();
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto batch_size = std::make_shared<int64_t>(32);
  auto keep_going = std::make_shared<bool>(false);
  auto top_k = std::make_shared<int64_t>(0);
  auto quantize = std::make_shared<std::string>("none");
  cmd->add_option("--model", *model,
                  "Model directory (ours or a plain HF one), or a Hub id (org/name) through the Hugging Face cache")
      ->required();
  cmd->add_option("--input", *input,
                  "JSONL, .tsv, .csv (or .conll for token classification) file of inputs; - reads standard input")
      ->required();
  cmd->add_option("--output", *output, "Write here instead of standard output (- is standard output)");
  // A plain range: CLI::PositiveNumber would print its bound, the largest double (~300 digits).
  cmd->add_option("--batch-size", *batch_size, "Examples per forward pass (1 to 1048576)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_flag("--keep-going", *keep_going, "A bad input line gets {\"error\": ...} and the run goes on");
  cmd->add_option("--top-k", *top_k, "Classification, multilabel: add \"top\", the K best labels with their scores")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  add_quantize_option(cmd, *quantize);
  auto exit_threshold = std::make_shared<std::optional<double>>();
  add_exit_threshold_option(cmd, exit_threshold);
  return [model, input, output, batch_size, keep_going, top_k, quantize, exit_threshold] {
    PredictorOptions options;
    options.exit_threshold = *exit_threshold;
    options.batch_size = *batch_size;
    options.top_k = *top_k;
    options.quantize = *quantize;
    // Threads: as training's `auto`, one worker per physical core for small and medium models.
    const auto predictor = Predictor::load(*model, options);
    if (!predictor.quantization().empty()) std::fprintf(stderr, "%s\n", predictor.quantization().c_str());
    PredictInput in(*input);
    PredictOutput out(*output);
    // What the input's header (TSV, CSV) must hold and what a CoNLL sentence is called: the model's
    // fields; a plain HF directory's sequence tasks take `text` or `text_a`/`text_b` per line.
    framework::DataConfig fields_cfg;
    fields_cfg.text_fields = predictor.text_fields();
    fields_cfg.label_field = predictor.label_field();
    auto fields = framework::record_fields(predictor.task(), fields_cfg, /*require_labels=*/false);
    const bool sequence_task = task_spec(predictor.task()).input == TaskInput::Text;
    if (predictor.plain_hf() && sequence_task) fields.text_fields.clear();
    fields.bare_values = true;  // a string or a pair per line (framework/inference/standard_records.h)
    predict_lines(in, out, predictor, *batch_size, *keep_going, fields, "predict");
    out.commit();
    return 0;
  };
}

}  // namespace unif::app
