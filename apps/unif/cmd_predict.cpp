// `unif predict --model DIR --input FILE [--output FILE] [--batch-size N]` (SPEC §4): one JSON
// line per input line. Fields other than the model's inputs are carried through as "input".
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "apps/unif/commands.h"
#include "apps/unif/predict_fill_mask.h"
#include "framework/common/error.h"
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

}  // namespace

Command add_predict(CLI::App& app) {
  auto* cmd = app.add_subcommand("predict", "Predict with a model directory, one JSON line per input line");
  auto model = std::make_shared<std::string>();
  auto input = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto batch_size = std::make_shared<int64_t>(32);
  cmd->add_option("--model", *model, "Model directory (ours or a plain HF one)")->required();
  cmd->add_option("--input", *input, "JSONL (or TSV) file of inputs")->required();
  cmd->add_option("--output", *output, "Write here instead of stdout");
  cmd->add_option("--batch-size", *batch_size, "Examples per forward pass")->check(CLI::PositiveNumber);
  return [model, input, output, batch_size] {
    auto lm = framework::load_model_dir(*model);
    if (lm.meta.task == Task::MaskedLm) return predict_fill_mask(lm, *input, *output, *batch_size);  // fill-mask
    auto labels = framework::LabelSet::from_names(lm.meta.labels);
    framework::DataConfig dc;
    dc.text_fields = lm.meta.text_fields;
    dc.label_field = lm.meta.label_field;
    auto data = framework::load_task_data(lm.meta.task, dc, labels, *input, *lm.tokenizer, lm.meta.max_seq_length,
                                          lm.meta.truncate_method, false, lm.meta.span);
    auto ev = framework::evaluate(*lm.model, lm.meta.task, data, labels, *batch_size);
    std::ofstream file;
    std::string tmp;
    if (!output->empty()) {
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
    std::ostream& out = output->empty() ? std::cout : file;
    for (size_t i = 0; i < data.examples.size(); ++i) {
      // Span extraction has several windows per example; its answers are per example already.
      const auto& enc = lm.meta.task == Task::SpanExtraction ? data.encoded.front() : data.encoded[i];
      auto j = prediction(lm.meta.task, labels, ev, i, enc, data.examples[i]);
      j["input"] = data.examples[i].record;
      out << j.dump() << "\n";
    }
    out.flush();
    if (!output->empty()) {
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
