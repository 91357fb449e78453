// Predictor's state, shared by its source files (predictor.cpp: loading and predictions,
// predictor_eval.cpp: labelled evaluation), and what its three steps hand each other: a prepared
// record's inputs, a batch's outputs. Internal: not installed with the public headers.
#pragma once
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "framework/common/error.h"
#include "framework/data/dataset.h"
#include "framework/data/span_decoding.h"
#include "framework/inference/predictor.h"
#include "framework/model/fill_mask.h"
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
  mutable std::mutex forward_mutex;  // one forward pass (over the worker pool) at a time

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

  // The three steps of predict() (see predictor.h).
  PreparedRecord prepare(const fw::Record& record, const std::string& source) const;
  ForwardOutputs forward(const std::vector<PreparedRecord>& records) const;
  Prediction postprocess(const PreparedRecord& record, const ForwardOutputs::Outputs& outputs, size_t index) const;
};

// A record read and tokenized (Predictor::preprocess).
struct PreparedRecord::Inputs {
  // Its answer where the model does not see it (an error, rejected; a text without words), else
  // the start of its answer (task, input).
  Prediction answer;
  bool forward = false;  // whether the model sees it
  // Every task but masked_lm: its example(s) and their rows (EncodedExample::example counts from
  // 0 within the record); token classification of {"text"}: the text's words.
  std::vector<fw::Example> examples;
  std::vector<fw::EncodedExample> encoded;
  std::vector<Word> words;
  bool text_input = false;
  // masked_lm: the text's ids, or why it cannot be answered.
  fw::MaskedText masked;
  int64_t rows = 0, longest = 0;
};

// A batch's outputs (Predictor::forward), per record of the batch in its order.
struct ForwardOutputs::Outputs {
  std::vector<std::vector<torch::Tensor>> logits;  // the rows of its first example, on the CPU
  std::vector<fw::SpanCandidate> answers;          // span extraction: its best answer
  std::vector<fw::FillMaskResult> fills;           // masked_lm
  std::vector<int64_t> exit_layers;                // early exit: the layer that answered (0: none)
};

}  // namespace unif
