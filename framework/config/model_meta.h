// ModelMeta: what a model directory needs beyond HF's files to be used by `unif eval/predict`
// (SPEC §4 `unif.yaml`: task, labels, input fields, max_seq_length, lower-casing, truncation;
// span extraction also its window/decoding settings).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "framework/config/run_config.h"

namespace unif::framework {

struct ModelMeta {
  Task task = Task::Classification;
  std::vector<std::string> labels;  // id order (empty for regression and span extraction)
  std::vector<std::string> text_fields{"text"};
  std::string label_field = "label";
  int64_t max_seq_length = 128;
  bool do_lower_case = true;
  std::string truncate_method = "LIFO";
  SpanConfig span;  // span extraction: windows and decoding (unif.yaml `span`)
  /// data.long_text of the run (written when windows): how predict and eval read long texts.
  std::string long_text = "truncate";
  int64_t long_text_stride = 0;
  std::string long_text_pooling = "mean";
};

/// The meta of a run's model, from its resolved config and label set.
ModelMeta model_meta(const RunConfig& cfg, std::vector<std::string> labels);

/// Writes unif.yaml (atomically: temporary name, then rename).
void write_model_meta(const std::filesystem::path& file, const ModelMeta& meta);
/// Reads unif.yaml; UserError naming the file and key on anything missing or mistyped.
ModelMeta read_model_meta(const std::filesystem::path& file);

}  // namespace unif::framework
