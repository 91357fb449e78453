// pretrained: build a BERT task model from a HF model directory (config.json + model.safetensors or
// pytorch_model.bin) and save one back in the same format. The head comes from the config's
// `architectures` (+ `problem_type`) unless the caller overrides it; weights are matched by HF names.
//
// Example:
//   auto loaded = load_pretrained("tests/fixtures/tiny-bert-zh");
//   loaded.model->eval();
//   ModelOutput out = loaded.model->forward(batch);
//   save_pretrained("runs/x/final", *loaded.model, loaded.config);
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "framework/checkpoint/hf_config.h"
#include "framework/checkpoint/state_dict.h"
#include "framework/common/task.h"
#include "models/heads/encoder_task_model.h"

namespace unif::framework {

struct PretrainedOptions {
  std::optional<Task> task;           // default: from architectures / problem_type
  std::optional<int64_t> num_labels;  // default: config.json's num_labels (or id2label size)
  /// Strict: a missing encoder/embedding key is a UserError. A missing head (classifier, qa_outputs,
  /// pooler) is always only reported and left freshly initialised.
  bool strict = true;
  bool sparse_embeddings = false;       // EncoderConfig::sparse_embeddings of the built model
  bool unpad_inputs = true;             // EncoderConfig::unpad_inputs (model.unpadded)
  bool gradient_checkpointing = false;  // EncoderConfig::gradient_checkpointing (training.gradient_checkpointing)
  /// Leave out head weights (classifier, qa_outputs) whose shape differs from the built head, e.g.
  /// a 2-label checkpoint fine-tuned on 7 labels; they are reported missing and freshly initialised.
  bool fresh_mismatched_head = false;
  /// What messages call the config (default: <dir>/config.json).
  std::string config_source;
};

struct PretrainedModel {
  std::shared_ptr<models::EncoderTaskModel> model;
  HfConfig config;    // as read from config.json, task fields updated to the built head
  LoadReport report;  // missing: freshly initialised; unexpected: ignored
  Task task = Task::Classification;
};

/// The head a config asks for: models::task_from_hf (architectures.h), the rule every loader uses
/// (BertForTokenClassification -> TokenClassification, ..., no architectures = a sequence head,
/// regression for num_labels 1 without problem_type, as HF). A class that is no task head
/// (BertModel, BertForPreTraining) gets a fresh sequence head by the same rule.
Task task_from_config(const HfConfig& config);

/// UserError unless the parameters of the encoder `options` describe agree in shape with those of
/// `weights` (a weight file; models::Architecture::sized_tensors: the embeddings and the layers'
/// matrices) that the file holds: read from its header, before a model is built, so that a config
/// whose sizes are not the checkpoint's allocates nothing. The message names `config_source`, the
/// config keys sizing the tensor, both shapes and the file.
void check_checkpoint_shapes(const models::EncoderConfig& options, const std::string& config_source,
                             const std::filesystem::path& weights);

/// This machine's memory in bytes: its physical memory, or its cgroup's limit where lower.
uint64_t memory_bytes();

/// UserError unless `copies` float32 copies of the parameters `options` describe
/// (models::parameter_estimate) fit in `memory` bytes: the check before a model is built from a
/// config alone. `copies`: 1 for the weights; training adds gradients and the optimizer's state.
/// The message names `config_source`, the parameter count, the tensor that holds most of them and
/// the keys sizing it.
void check_model_memory(const models::EncoderConfig& options, const std::string& config_source, double copies,
                        uint64_t memory = memory_bytes());

/// Loads `dir` (reads dir/config.json; a sentence-transformers save is read from its Transformer
/// module's folder, see framework/common/hf_dir.h). Throws unif::UserError on a missing directory or config.json,
/// a model_type not in models/architectures.h, a bad config, a shape mismatch, or (strict) missing encoder weights.
PretrainedModel load_pretrained(const std::filesystem::path& dir, const PretrainedOptions& options = {});
/// Same with the brief's positional overrides.
PretrainedModel load_pretrained(const std::filesystem::path& dir, std::optional<Task> task,
                                std::optional<int64_t> num_labels = std::nullopt);
/// Same with a config the caller has already read (and possibly edited, e.g. dropout overrides).
PretrainedModel load_pretrained(const std::filesystem::path& dir, HfConfig config, const PretrainedOptions& options);

/// Writes dir/model.safetensors (HF names, no position_ids) and dir/config.json (config with
/// architectures / problem_type / num_labels set from the model's head), each through a temporary
/// file renamed into place. Creates `dir`. Throws unif::UserError on IO failure.
void save_pretrained(const std::filesystem::path& dir, const models::EncoderTaskModel& model, HfConfig config);

}  // namespace unif::framework
