// The record shapes every model takes besides its own field names (those of its training data), so
// that a client need not know what the training file's columns were called:
//
//   single-text models   {"text": "..."} or a bare JSON string "..."
//   pair models          {"text": "...", "text_pair": "..."} or a bare pair ["...", "..."]
//
// (embedding models: {"text"} or a string; token classification: {"text"} or a string, split into
// words.) A record that holds the model's own first field is taken as it is; any other record is left
// for the model's own reading to refuse, naming the fields it expects.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/common/task.h"

namespace unif::framework {

/// `record` with the model's field names filled from the standard ones. `text_fields`: the model's
/// (empty for a plain HF directory, which reads `text`, or `text_a` and `text_b`).
nlohmann::json with_model_fields(Task task, const nlohmann::json& record, const std::vector<std::string>& text_fields);

/// What a model takes, for messages and `/info`: e.g. {"text": "..."} | "..." for a single-text
/// model whose field is `text`, or {"utterance": ...} | {"text": ...} | "...".
std::string accepted_record_shapes(Task task, const std::vector<std::string>& text_fields);

}  // namespace unif::framework
