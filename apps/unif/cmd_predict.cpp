// `unif predict --model DIR --input FILE [--output FILE] [--batch-size N]` (SPEC §4, §7): one JSON
// line per input line, output line N answering input line N (a blank line gets
// {"error": "blank line"}). Fields other than the model's inputs are carried through as "input".
// `-` is standard input / output. The input is streamed: read, answered and written in chunks of
// lines (memory does not grow with the input), under inference mode, in length-sorted batches.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <c10/core/InferenceMode.h>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "apps/unif/commands.h"
#include "apps/unif/predict_fill_mask.h"
#include "framework/common/error.h"
#include "framework/data/records.h"
#include "framework/parallel/auto_devices.h"
#include "framework/train/build.h"
#include "framework/train/model_dir.h"

namespace unif::app {

namespace {

using nlohmann::json;
using framework::Task;

json prediction(Task task, const framework::LabelSet& labels, const framework::Evaluation& ev, size_t i,
                const framework::EncodedExample& e, const framework::Example& ex) {
  if (task == Task::SpanExtraction) {
    const auto& a = ev.answers.at(i);
    return {{"answer", a.text}, {"start", a.start}, {"end", a.end}, {"score", a.score}};
  }
  const auto& logits = ev.logits.at(i);
  auto to_vec = [](const torch::Tensor& t) {
    auto c = t.to(torch::kDouble).contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  };
  switch (task) {
    case Task::Classification: {
      auto probs = torch::softmax(logits, -1);
      return {{"label", labels.names.at(static_cast<size_t>(logits.argmax().item<int64_t>()))},
              {"probs", to_vec(probs)}, {"logits", to_vec(logits)}};
    }
    case Task::Multilabel: {
      auto probs = torch::sigmoid(logits);
      std::vector<std::string> on;
      for (int64_t i = 0; i < probs.size(0); ++i)
        if (probs[i].item<double>() > 0.5) on.push_back(labels.names.at(static_cast<size_t>(i)));
      return {{"labels", on}, {"probs", to_vec(probs)}};
    }
    case Task::Regression: return {{"value", logits.flatten()[0].item<double>()}};
    case Task::TokenClassification: {
      const int64_t outside = labels.index.count("O") ? labels.index.at("O") : 0;
      std::vector<std::string> tags;
      for (auto id : framework::word_predictions(e, ex, logits, outside)) tags.push_back(labels.names.at(static_cast<size_t>(id)));
      return {{"tags", tags}};
    }
    case Task::SpanExtraction: break;
    case Task::MaskedLm: break;  // predict_fill_mask.h
  }
  return {};
}

// The text fields of one input line. A model directory with unif.yaml names them; a plain HF
// directory takes `text`, or the pair `text_a`/`text_b` (SPEC §4) for the sequence tasks.
std::vector<std::string> text_fields_for(const framework::LoadedModel& lm, bool plain_hf, const framework::Record& r,
                                         const std::string& input) {
  const bool sequence_task = lm.meta.task == Task::Classification || lm.meta.task == Task::Multilabel ||
                             lm.meta.task == Task::Regression;
  if (!plain_hf || !sequence_task) return lm.meta.text_fields;
  const auto has = [&](const char* f) { return r.fields.contains(f) && !r.fields.at(f).is_null(); };
  if (has("text")) return {"text"};
  if (has("text_a")) return has("text_b") ? std::vector<std::string>{"text_a", "text_b"} : std::vector<std::string>{"text_a"};
  throw UserError(input + ":" + std::to_string(r.line) +
                  ": missing field 'text' (or 'text_a' and 'text_b' for a sentence pair)");
}

}  // namespace

Command add_predict(CLI::App& app) {
  auto* cmd = app.add_subcommand("predict", "Predict with a model directory, one JSON line per input line");
  auto model = std::make_shared<std::string>();
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto batch_size = std::make_shared<int64_t>(32);
  cmd->add_option("--model", *model, "Model directory (ours or a plain HF one)")->required();
  cmd->add_option("--input", *input, "JSONL (or .tsv) file of inputs; - reads standard input")->required();
  cmd->add_option("--output", *output, "Write here instead of standard output (- is standard output)");
  // A plain range: CLI::PositiveNumber would print its bound, the largest double (~300 digits).
  cmd->add_option("--batch-size", *batch_size, "Examples per forward pass (1 to 1048576)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  return [model, input, output, batch_size] {
    namespace fs = std::filesystem;
    auto lm = framework::load_model_dir(*model);
    if (lm.meta.task == Task::MaskedLm) return predict_fill_mask(lm, *input, *output, *batch_size);  // fill-mask
    c10::InferenceMode inference;  // after loading: the parameters stay ordinary tensors
    const bool plain_hf = !fs::exists(fs::path(*model) / "unif.yaml");
    auto labels = framework::LabelSet::from_names(lm.meta.labels);

    // The input: a file (a regular file, /dev/stdin, a named pipe) or `-`, standard input.
    std::ifstream in_file;
    std::istream* in = &std::cin;
    const std::string in_name = *input == "-" ? "stdin" : *input;
    if (*input != "-") {
      std::error_code ec;
      if (!fs::exists(*input, ec)) throw UserError(*input + ": data file not found");
      if (fs::is_directory(*input, ec)) throw UserError("--input: '" + *input + "' is a directory, not a file");
      in_file.open(*input, std::ios::binary);
      if (!in_file) throw UserError(*input + ": cannot open data file");
      in = &in_file;
    }
    framework::RecordReader reader(*in, in_name, fs::path(*input).extension() == ".tsv");

    const bool to_stdout = output->empty() || *output == "-";
    std::ofstream file;
    std::string tmp;
    if (!to_stdout) {
      tmp = *output + ".tmp";
      file.open(tmp, std::ios::binary | std::ios::trunc);
      if (!file) throw UserError("--output: cannot write '" + *output + "'");
    }
    // Whatever ends this scope, no half-written OUTPUT.tmp stays behind (after the rename it is gone).
    struct RemoveTmp {
      const std::string& path;
      ~RemoveTmp() {
        std::error_code ec;
        if (!path.empty()) std::filesystem::remove(path, ec);
      }
    } remove_tmp{tmp};
    std::ostream& out = to_stdout ? std::cout : file;

    // Chunks of lines: enough for full length-sorted batches, few enough to keep memory flat.
    const auto chunk = static_cast<size_t>(std::max<int64_t>(2048, 16 * *batch_size));
    // As training's `auto`: one worker per physical core for small and medium models (evaluate()).
    framework::WorkerPool workers(framework::cpu_eval_workers({"auto"}, lm.model->options().hidden_size()));
    const auto t0 = std::chrono::steady_clock::now();
    auto last_progress = t0;
    bool progress_shown = false;
    int64_t done = 0;
    std::vector<framework::Record> lines;
    for (bool more = true; more;) {
      lines.clear();
      for (framework::Record r; lines.size() < chunk && (more = reader.next(r));) lines.push_back(std::move(r));
      framework::TaskData data;
      data.file = in_name;
      data.span = lm.meta.span;
      std::vector<int64_t> example_of(lines.size(), -1);
      for (size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].fields.is_null()) continue;
        framework::DataConfig dc;
        dc.text_fields = text_fields_for(lm, plain_hf, lines[i], in_name);
        dc.label_field = lm.meta.label_field;
        auto ex = framework::make_examples(lm.meta.task, dc, labels, in_name, {lines[i]}, false);
        example_of[i] = static_cast<int64_t>(data.examples.size());
        for (auto& e : ex) {
          e.has_label = false;  // labels in the input are checked, then ignored: no metrics here
          data.examples.push_back(std::move(e));
        }
      }
      framework::Evaluation ev;
      if (!data.examples.empty()) {
        data.encoded = framework::encode_examples(lm.meta.task, data.examples, *lm.tokenizer,
                                                  static_cast<int>(lm.meta.max_seq_length),
                                                  framework::parse_truncate_method(lm.meta.truncate_method), lm.meta.span);
        ev = framework::evaluate(*lm.model, lm.meta.task, data, labels, *batch_size, {}, true, &workers);
      }
      for (size_t i = 0; i < lines.size(); ++i) {
        if (example_of[i] < 0) {
          out << R"({"error":"blank line"})" << "\n";
          continue;
        }
        const auto x = static_cast<size_t>(example_of[i]);
        // Span extraction has several windows per example; its answers are per example already.
        const auto& enc = lm.meta.task == Task::SpanExtraction ? data.encoded.front() : data.encoded[x];
        auto j = prediction(lm.meta.task, labels, ev, x, enc, data.examples[x]);
        j["input"] = data.examples[x].record;
        out << j.dump() << "\n";
      }
      out.flush();
      if (!out) throw UserError("--output: write to '" + (to_stdout ? std::string("standard output") : *output) + "' failed");
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
    if (!to_stdout) {
      file.close();
      if (!file) throw UserError("--output: write to '" + *output + "' failed");
      std::error_code ec;
      std::filesystem::rename(tmp, *output, ec);
      if (ec) throw UserError("--output: cannot move the finished output to '" + *output + "': " + ec.message());
    }
    return 0;
  };
}

}  // namespace unif::app
