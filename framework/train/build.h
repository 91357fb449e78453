// build: the one place where config strings become concrete classes — the tokenizer, the BERT
// task model (pretrained or fresh), the encoded datasets, the gradient strategy.
#pragma once
#include <memory>

#include "adversarial/strategy.h"
#include "framework/config/run_config.h"
#include "framework/train/model_dir.h"
#include "framework/train/parts.h"

namespace unif::framework {

/// Tokenizer, labels, encoded train/dev data and the BERT model of `cfg` (SPEC §3), ready for
/// Trainer. UserError on any bad input (files, labels, vocab/config mismatch).
TrainerParts build_trainer_parts(const RunConfig& cfg);

/// Resume: copies the weights of checkpoint `dir` into `model`. UserError naming `dir` and a few keys
/// when the checkpoint lacks a weight of the model or holds one the model does not have.
void load_checkpoint_weights(torch::nn::Module& model, const std::filesystem::path& dir);

/// The gradient strategy named by adversarial.method.
std::unique_ptr<adversarial::Strategy> make_strategy(const AdversarialConfig& cfg);

/// Encodes a data file for a model (eval / predict): records → examples → encodings (span
/// extraction: windows and decoding per `span`; masked_lm: texts, masks drawn as `mlm`).
TaskData load_task_data(Task task, const DataConfig& data, const LabelSet& labels, const std::string& file,
                        const Tokenizer& tokenizer, int64_t max_seq_length, const std::string& truncate_method,
                        bool require_labels, const SpanConfig& span = {}, const MlmMasking& mlm = {});

/// training.loss.class_weights for `labels` (C), undefined when none: the listed weights, or
/// "balanced" from the labels of `train` (tokens' first pieces for token classification). A line
/// for the training log goes to `notes` when given.
torch::Tensor class_weights_for(const RunConfig& cfg, const LabelSet& labels, const TaskData& train,
                                std::vector<std::string>* notes);

/// training.loss (label smoothing, focal γ, class weights) set on the model's head.
void apply_training_loss(const RunConfig& cfg, models::EncoderTaskModel& model, const torch::Tensor& class_weights);

/// What `unif eval` evaluates so that its loss is the training run's dev loss (the same ℓ and Z):
/// the loaded model with training.loss applied, wrapped with the distill teacher when distill is
/// on, and the class weights that make Z.
struct EvaluationSetup {
  std::shared_ptr<models::TaskModel> model;
  torch::Tensor class_weights;
};
EvaluationSetup evaluation_setup(const RunConfig& cfg, const LoadedModel& lm, const LabelSet& labels);

/// masked_lm's masking for `cfg` (model.mlm_probability, model.whole_word_mask, seed) with the
/// tokenizer's [MASK] id and vocabulary size.
MlmMasking mlm_masking(const RunConfig& cfg, const Tokenizer& tokenizer);

}  // namespace unif::framework
