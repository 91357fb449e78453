// Predictor's state, shared by its source files (predictor.cpp: loading and predictions,
// predictor_eval.cpp: labelled evaluation). Internal: not installed with the public headers.
#pragma once
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "framework/common/error.h"
#include "framework/data/dataset.h"
#include "framework/inference/predictor.h"
#include "framework/model/model_dir.h"
#include "framework/parallel/worker_pool.h"
#include "models/architectures.h"

namespace unif {

namespace fw = framework;

struct Predictor::State {
  std::filesystem::path dir;  // the model directory, as given to load()
  fw::LoadedModel lm;
  bool plain_hf = false;
  std::string quantization;  // Predictor::quantization()
  fw::LabelSet labels;
  PredictorOptions options;
  std::unique_ptr<fw::WorkerPool> workers;
  mutable std::mutex forward;  // one forward pass (over the worker pool) at a time

  // The text fields of one record. A model directory with unif.yaml names them; a plain HF
  // directory takes `text`, or the pair `text_a`/`text_b` (SPEC §4) for the sequence tasks.
  std::vector<std::string> text_fields_for(const fw::Record& r, const std::string& source) const {
    const bool sequence_task = task_spec(lm.meta.task).input == TaskInput::Text;
    if (!plain_hf || !sequence_task) return lm.meta.text_fields;
    const auto has = [&](const char* f) { return r.fields.contains(f) && !r.fields.at(f).is_null(); };
    if (has("text")) return {"text"};
    if (!has("text_a"))
      throw UserError(source + ":" + std::to_string(r.line) +
                      ": missing field 'text' (or 'text_a' and 'text_b' for a sentence pair)");
    if (!has("text_b")) return {"text_a"};
    // A pair needs token types 0 and 1: a model with one (RoBERTa-style type_vocab_size 1) cannot take it.
    std::vector<std::string> pair{"text_a", "text_b"};
    fw::check_segments(lm.meta.task, pair, source + ":" + std::to_string(r.line),
                       models::usable_token_types(lm.hf.bert), "the model (its config.json)");
    return pair;
  }

  std::vector<Prediction> fill_masks(const std::vector<fw::Record>& records, const std::string& source) const;
  std::vector<Prediction> run(const std::vector<fw::Record>& records, const std::string& source) const;
};

}  // namespace unif
