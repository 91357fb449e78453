// hf_config: read and write a HF `config.json` for BERT-family models (BertConfig keys). The known
// keys map onto models::EncoderConfig and the task fields (architectures, id2label, problem_type,
// num_labels); every key read is kept in `raw` so unknown ones survive a round trip.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/encoder_config.h"

namespace unif::framework {

struct HfConfig {
  models::EncoderConfig bert;              // HF names
  std::vector<std::string> architectures;  // e.g. BertForSequenceClassification
  std::vector<std::string> id2label;       // ordered by id; empty if absent
  std::string problem_type;                // "", single_label_classification, multi_label_classification, regression
  int64_t num_labels = 2;
  nlohmann::json raw;  // everything read (object), so unknown keys survive a round trip
};

/// Throws unif::UserError on an unreadable file, invalid JSON, a non-object top level, or a known
/// key of the wrong type / value (the message names the file and the key).
HfConfig read_hf_config(const std::filesystem::path& file);

/// As read_hf_config, from a config object already parsed; `source` names it in messages.
HfConfig hf_config_from_json(nlohmann::json raw, const std::string& source);

/// `model.config`: `file` (or, when empty, BertConfig's defaults or those of `overrides`' model_type)
/// with each field of `overrides` set over it before the family reads it, so an output directory's
/// config.json carries them. UserError "model.config.KEY: ..." for a field the family does not read
/// (with a did-you-mean and the fields it does), a value of the wrong type, a task key (architectures,
/// id2label, label2id, num_labels, problem_type) or a model_type that would change a pretrained
/// model's family.
HfConfig read_hf_config(const std::filesystem::path& file, const nlohmann::json& overrides);

/// `base` (as hf_config_json gives it) with each field of `fields` set over it, read again: for
/// a config made from another (ELECTRA's generator from its discriminator). `key` names the fields
/// in messages ("model.generator.config"); UserError as read_hf_config with overrides.
HfConfig with_config_fields(const HfConfig& base, const nlohmann::json& fields, const std::string& key);

/// The config.json object write_hf_config writes: `raw` overlaid with the typed fields.
nlohmann::json hf_config_json(const HfConfig& cfg);

/// Writes `raw` overlaid with the typed fields (BertConfig keys, id2label/label2id, num_labels,
/// model_type "bert"), keys sorted and indented like HF, through a temporary
/// file renamed into place. Throws unif::UserError on an IO failure.
void write_hf_config(const std::filesystem::path& file, const HfConfig& cfg);

}  // namespace unif::framework
