// hf_config: read and write a HF `config.json` for BERT-family models (BertConfig keys). The known
// keys map onto models::BertOptions and the task fields (architectures, id2label, problem_type,
// num_labels); every key read is kept in `raw` so unknown ones survive a round trip.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/bert/options.h"

namespace unif::framework {

struct HfConfig {
  models::BertOptions bert;                // HF names
  std::vector<std::string> architectures;  // e.g. BertForSequenceClassification
  std::vector<std::string> id2label;       // ordered by id; empty if absent
  std::string problem_type;                // "", single_label_classification, multi_label_classification, regression
  int64_t num_labels = 2;
  nlohmann::json raw;  // everything read (object), so unknown keys survive a round trip
};

/// Throws unif::UserError on an unreadable file, invalid JSON, a non-object top level, or a known
/// key of the wrong type / value (the message names the file and the key).
HfConfig read_hf_config(const std::filesystem::path& file);

/// Writes `raw` overlaid with the typed fields (BertConfig keys, id2label/label2id, num_labels,
/// model_type "bert"), keys sorted and indented like HF, through a temporary
/// file renamed into place. Throws unif::UserError on an IO failure.
void write_hf_config(const std::filesystem::path& file, const HfConfig& cfg);

}  // namespace unif::framework
