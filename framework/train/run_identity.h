// The identity of a training run: the settings a checkpoint can only be resumed under, because they
// change the order of the data or the model's shape (docs/spec.md §8, "Resume"). Each checkpoint
// stores it in trainer_state.json ("identity"); `resume` compares it with the new run's and refuses
// a checkpoint whose identity differs. Everything else (max_steps, epochs, log/eval/save cadence,
// learning rate and schedule, devices, dev/test data, ...) may change on resume.
//
//   auto id = run_identity(cfg, parts.labels, *parts.model, parts.train.encoded.size());
//   for (auto& line : identity_changes(stored_id, id)) ...   // "training.batch_size: 8 -> 16"
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/nn/module.h>

#include "framework/config/run_config.h"
#include "framework/data/dataset.h"

namespace unif::framework {

/// A flat JSON object: config key path (or a derived name: "labels", "train_entries",
/// "model.shape") -> value.
nlohmann::json run_identity(const RunConfig& cfg, const LabelSet& labels, const torch::nn::Module& model,
                            int64_t train_entries);

/// One line per key whose value differs ("key: old -> new"; "(absent)" for a key one side lacks),
/// in the order of `current`'s keys, then keys only `stored` has.
std::vector<std::string> identity_changes(const nlohmann::json& stored, const nlohmann::json& current);

}  // namespace unif::framework
