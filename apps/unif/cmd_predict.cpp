// `unif predict --model DIR --input FILE [--output FILE] [--batch-size N] [--keep-going]` (SPEC
// §4, §7, §8): one JSON line per input line, output line N answering input line N (a blank line gets
// {"error": "blank line"}). Fields other than the model's inputs are carried through as "input".
// `-` is standard input / output (predict_io.h: the output ends). The input is streamed: a regular
// file in chunks of lines (memory does not grow with the input), a pipe or terminal batch by batch
// as lines arrive (a co-process gets each answer before it writes the next line); each chunk runs
// under inference mode, in length-sorted batches over a worker pool. A bad line ends the run after
// the answers before it are written, or with --keep-going gets {"error": "..."}. Outputs that are
// not finite are never turned into a label. masked_lm answers through predict_fill_mask.h.
#include <chrono>
#include <cstdio>
#include <iostream>

#include <c10/core/InferenceMode.h>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "apps/unif/commands.h"
#include "apps/unif/predict_fill_mask.h"
#include "apps/unif/predict_io.h"
#include "framework/common/error.h"
#include "framework/data/records.h"
#include "framework/data/word_windows.h"
#include "framework/engines/auto_devices.h"
#include "framework/parallel/worker_pool.h"
#include "framework/train/build.h"
#include "framework/train/evaluate.h"
#include "framework/train/model_dir.h"
#include "models/architectures.h"

namespace unif::app {

namespace {

using nlohmann::json;

const char* const kNotFinite = "the model's outputs are not finite (NaN or inf) for this input";

// The answer to example `x` from its encoded entries (several windows for span extraction and long
// token-classification inputs) and their logits.
json prediction(Task task, const framework::LabelSet& labels, const framework::Evaluation& ev, size_t x,
                const framework::Example& ex, const std::vector<const framework::EncodedExample*>& entries,
                const std::vector<torch::Tensor>& logits) {
  for (const auto& l : logits)
    if (!torch::isfinite(l).all().item<bool>()) return {{"error", kNotFinite}};
  const PredictKind output = task_spec(task).output;
  if (output == PredictKind::Answer) {
    const auto& a = ev.answers.at(x);
    return {{"answer", a.text}, {"start", a.start}, {"end", a.end}, {"score", a.score}};
  }
  auto to_vec = [](const torch::Tensor& t) {
    auto c = t.to(torch::kDouble).contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  };
  const auto& row = logits.at(0);
  switch (output) {
    case PredictKind::Label: {
      auto probs = torch::softmax(row, -1);
      return {{"label", labels.names.at(static_cast<size_t>(row.argmax().item<int64_t>()))},
              {"probs", to_vec(probs)}, {"logits", to_vec(row)}};
    }
    case PredictKind::Labels: {
      auto probs = torch::sigmoid(row);
      std::vector<std::string> on;
      for (int64_t i = 0; i < probs.size(0); ++i)
        if (probs[i].item<double>() > 0.5) on.push_back(labels.names.at(static_cast<size_t>(i)));
      return {{"labels", on}, {"probs", to_vec(probs)}};
    }
    case PredictKind::Value: return {{"value", row.flatten()[0].item<double>()}};
    case PredictKind::Tags: {
      json tags = json::array();  // null: a word without any word piece, which the model never sees
      for (const auto& id : framework::word_window_predictions(ex, entries, logits))
        tags.push_back(id ? json(labels.names.at(static_cast<size_t>(*id))) : json(nullptr));
      return {{"tags", tags}};
    }
    case PredictKind::Answer: break;
    case PredictKind::Masks: break;  // predict_fill_mask.h
  }
  return {};
}

// The text fields of one input line. A model directory with unif.yaml names them; a plain HF
// directory takes `text`, or the pair `text_a`/`text_b` (SPEC §4) for the sequence tasks.
std::vector<std::string> text_fields_for(const framework::LoadedModel& lm, bool plain_hf, const framework::Record& r,
                                         const std::string& input) {
  const bool sequence_task = task_spec(lm.meta.task).input == TaskInput::Text;
  if (!plain_hf || !sequence_task) return lm.meta.text_fields;
  const auto has = [&](const char* f) { return r.fields.contains(f) && !r.fields.at(f).is_null(); };
  if (has("text")) return {"text"};
  if (!has("text_a"))
    throw UserError(input + ":" + std::to_string(r.line) +
                    ": missing field 'text' (or 'text_a' and 'text_b' for a sentence pair)");
  if (!has("text_b")) return {"text_a"};
  // A pair needs token types 0 and 1: a model with one (RoBERTa-style type_vocab_size 1) cannot take it.
  std::vector<std::string> pair{"text_a", "text_b"};
  framework::check_segments(lm.meta.task, pair, input + ":" + std::to_string(r.line), models::usable_token_types(lm.hf.bert),
                            "the model (its config.json)");
  return pair;
}

// Classification, multilabel, regression, token classification and span extraction.
PredictAnswerer task_answerer(const framework::LoadedModel& lm, bool plain_hf, const framework::LabelSet& labels,
                              const std::string& in_name, int64_t batch_size, framework::WorkerPool& workers) {
  return [&lm, &labels, &workers, plain_hf, in_name, batch_size](std::vector<PredictLine>& lines, bool keep_going) {
    std::vector<json> answers(lines.size());
    framework::TaskData data;
    data.file = in_name;
    data.span = lm.meta.span;
    std::vector<int64_t> example_of(lines.size(), -1);
    for (size_t i = 0; i < lines.size(); ++i) {
      auto& l = lines[i];
      if (l.error.empty() && l.record.fields.is_null()) {
        answers[i] = {{"error", "blank line"}};
        continue;
      }
      try {
        if (!l.error.empty()) throw UserError(l.error);
        framework::DataConfig dc;
        dc.text_fields = text_fields_for(lm, plain_hf, l.record, in_name);
        dc.label_field = lm.meta.label_field;
        auto ex = framework::make_examples(lm.meta.task, dc, labels, in_name, {l.record}, false);
        example_of[i] = static_cast<int64_t>(data.examples.size());
        for (auto& e : ex) {
          e.has_label = false;  // labels in the input are checked, then ignored: no metrics here
          data.examples.push_back(std::move(e));
        }
      } catch (const UserError& e) {
        l.error = e.what();
        if (!keep_going) break;
      }
    }
    if (data.examples.empty()) return answers;
    const int max_len = static_cast<int>(lm.meta.max_seq_length);
    const auto method = framework::parse_truncate_method(lm.meta.truncate_method);
    // Token classification: every word gets a tag from the model, in windows when the input is long.
    data.encoded = task_spec(lm.meta.task).input == TaskInput::Tokens
                       ? framework::encode_word_windows(*lm.tokenizer, data.examples, max_len, method)
                       : framework::encode_examples(lm.meta.task, data.examples, *lm.tokenizer, max_len, method, lm.meta.span);
    const auto ev = framework::evaluate(*lm.model, lm.meta.task, data, labels, batch_size, {}, true, &workers);
    std::vector<std::vector<const framework::EncodedExample*>> entries(data.examples.size());
    std::vector<std::vector<torch::Tensor>> logits(data.examples.size());
    for (size_t k = 0; k < data.encoded.size(); ++k) {
      const auto x = static_cast<size_t>(data.encoded[k].example);
      entries[x].push_back(&data.encoded[k]);
      logits[x].push_back(ev.logits[k]);
    }
    for (size_t i = 0; i < lines.size(); ++i) {
      if (example_of[i] < 0) continue;
      const auto x = static_cast<size_t>(example_of[i]);
      answers[i] = prediction(lm.meta.task, labels, ev, x, data.examples[x], entries[x], logits[x]);
      answers[i]["input"] = data.examples[x].record;
    }
    return answers;
  };
}

// Reads, answers and writes every line: a regular file in chunks, a pipe or terminal batch by
// batch as its lines arrive. A bad line: the answers before it are written, then UserError (or its
// error object, with keep_going).
void predict_lines(PredictInput& in, PredictOutput& out, const PredictAnswerer& answer, int64_t batch_size,
                   bool keep_going, const framework::RecordFields& fields) {
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
    auto answers = answer(lines, keep_going);
    std::ostream& o = out.stream();
    for (size_t i = 0; i < lines.size(); ++i) {
      if (!lines[i].error.empty()) {
        if (!keep_going) {
          out.flush();
          throw UserError(lines[i].error);
        }
        o << json{{"error", lines[i].error}}.dump() << "\n";
        continue;
      }
      o << answers[i].dump() << "\n";
    }
    out.flush();
    done += static_cast<int64_t>(lines.size());
    const auto now = std::chrono::steady_clock::now();
    if (more && now - last_progress > std::chrono::seconds(10)) {
      const double s = std::chrono::duration<double>(now - t0).count();
      std::fprintf(stderr, "predict: %lld lines in %.0f s (%.0f lines/s)\n", static_cast<long long>(done), s, done / s);
      last_progress = now;
      progress_shown = true;
    }
  }
  if (progress_shown)
    std::fprintf(stderr, "predict: done, %lld lines in %.0f s\n", static_cast<long long>(done),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace

Command add_predict(CLI::App& app) {
  auto* cmd = app.add_subcommand("predict", "Predict with a model directory, one JSON line per input line");
  auto model = std::make_shared<std::string>();
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto batch_size = std::make_shared<int64_t>(32);
  auto keep_going = std::make_shared<bool>(false);
  cmd->add_option("--model", *model, "Model directory (ours or a plain HF one)")->required();
  cmd->add_option("--input", *input, "JSONL, .tsv, .csv (or .conll for token classification) file of inputs; - reads standard input")->required();
  cmd->add_option("--output", *output, "Write here instead of standard output (- is standard output)");
  // A plain range: CLI::PositiveNumber would print its bound, the largest double (~300 digits).
  cmd->add_option("--batch-size", *batch_size, "Examples per forward pass (1 to 1048576)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_flag("--keep-going", *keep_going, "A bad input line gets {\"error\": ...} and the run goes on");
  return [model, input, output, batch_size, keep_going] {
    namespace fs = std::filesystem;
    auto lm = framework::load_model_dir(*model);
    PredictInput in(*input);
    PredictOutput out(*output);
    c10::InferenceMode inference;  // after loading: the parameters stay ordinary tensors
    const bool plain_hf = !fs::exists(fs::path(*model) / "unif.yaml");
    const auto labels = framework::LabelSet::from_names(lm.meta.labels);
    // As training's `auto`: one worker per physical core for small and medium models (evaluate()).
    framework::WorkerPool workers(framework::cpu_eval_workers(framework::DeviceSet{}, lm.model->options().hidden_size()));
    const auto answer = task_spec(lm.meta.task).output == PredictKind::Masks
                            ? fill_mask_answerer(lm, in.name(), *batch_size, workers)
                            : task_answerer(lm, plain_hf, labels, in.name(), *batch_size, workers);
    // What the input's header (TSV, CSV) must hold and what a CoNLL sentence is called: the model's
    // fields; a plain HF directory's sequence tasks take `text` or `text_a`/`text_b` per line.
    framework::DataConfig fields_cfg;
    fields_cfg.text_fields = lm.meta.text_fields;
    fields_cfg.label_field = lm.meta.label_field;
    auto fields = framework::record_fields(lm.meta.task, fields_cfg, /*require_labels=*/false);
    const bool sequence_task = task_spec(lm.meta.task).input == TaskInput::Text;
    if (plain_hf && sequence_task) fields.text_fields.clear();
    predict_lines(in, out, answer, *batch_size, *keep_going, fields);
    out.commit();
    return 0;
  };
}

}  // namespace unif::app
