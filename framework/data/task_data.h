// TaskData: a task's data file read and encoded for a model — its examples, their encodings (one
// per example; span extraction: one per context window) and how they are decoded or masked. What
// evaluate() runs a model over and what the trainer trains on.
#pragma once
#include <filesystem>
#include <vector>

#include "framework/config/run_config.h"
#include "framework/data/dataset.h"
#include "framework/data/mlm.h"

namespace unif::framework {

/// A task's data, encoded: examples, their encodings and the label set.
struct TaskData {
  std::filesystem::path file;
  std::vector<Example> examples;
  std::vector<EncodedExample> encoded;  // one per example; span extraction: one per context window
  SpanConfig span;                      // span extraction: decoding (max_answer_length, n_best_size, metric)
  MlmMasking mlm;                       // masked_lm: how masks are drawn (training: per epoch; eval: fixed)
  TextWindows windows;                  // data.long_text windows: evaluation pools each text's windows
};

}  // namespace unif::framework
