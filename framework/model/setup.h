// setup: what a run configuration makes that training and evaluation share — a data file encoded
// for the model, masked_lm's masking, the loss (class weights, label smoothing, focal γ), the
// distillation teacher, and the model `unif eval` evaluates so that its loss is the training run's
// dev loss. build_trainer_parts (framework/train/build.h) makes the rest of a training run.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "framework/config/run_config.h"
#include "framework/data/dataset.h"
#include "framework/data/mlm.h"
#include "framework/data/task_data.h"
#include "framework/model/model_dir.h"
#include "framework/text/tokenizer.h"
#include "models/heads/encoder_task_model.h"
#include "models/task_model.h"

namespace unif::framework {

/// Encodes a data file for a model (eval / predict): records → examples → encodings (span
/// extraction: windows and decoding per `span`; masked_lm: texts, masks drawn as `mlm`).
TaskData load_task_data(Task task, const DataConfig& data, const LabelSet& labels, const std::string& file,
                        const Tokenizer& tokenizer, int64_t max_seq_length, const std::string& truncate_method,
                        bool require_labels, const SpanConfig& span = {}, const MlmMasking& mlm = {});

/// masked_lm's masking for `cfg` (model.mlm_probability, model.whole_word_mask, seed) with the
/// tokenizer's [MASK] id and vocabulary size.
MlmMasking mlm_masking(const RunConfig& cfg, const Tokenizer& tokenizer);

/// training.loss.class_weights for `labels` (C), undefined when none: the listed weights, or
/// "balanced" from the labels of `train` (tokens' first pieces for token classification). A line
/// for the training log goes to `notes` when given.
torch::Tensor class_weights_for(const RunConfig& cfg, const LabelSet& labels, const TaskData& train,
                                std::vector<std::string>* notes);

/// training.loss (label smoothing, focal γ, class weights) set on the model's head.
void apply_training_loss(const RunConfig& cfg, models::EncoderTaskModel& model, const torch::Tensor& class_weights);

/// task embedding: the model's pooling and normalization and its loss (embedding.*). Pooling and
/// normalize come from model.pooling / model.normalize when set, else from the sentence-transformers
/// modules of `st_dir` (a pretrained directory; none when empty or it has no modules.json), else
/// they stay the model's (mean and false on a new model; a loaded directory's own). Nothing for other
/// models. UserError naming the key on a value the model cannot take (matryoshka_dims past its size).
void apply_embedding(const RunConfig& cfg, models::EncoderTaskModel& model, const std::filesystem::path& st_dir);

/// model.crf of a token classifier: adds its CRF (keeping one the pretrained directory held) or
/// removes one the directory held when model.crf is false, and applies crf.constrained from the
/// label names (a note in `notes` says which scheme, or that the names follow none). Other models:
/// nothing.
void apply_crf(const RunConfig& cfg, models::EncoderTaskModel& model, const LabelSet& labels,
               std::vector<std::string>* notes);

/// span.verifier of a span-extraction model: adds its verifier (keeping one the pretrained
/// directory held), or removes one the directory held when span.verifier is false. Other models:
/// nothing.
void apply_verifier(const RunConfig& cfg, models::EncoderTaskModel& model, std::vector<std::string>* notes);

/// model.early_exit of a classifier to train (FastBERT's second stage): adds its exit branches
/// (keeping those the pretrained directory held) and freezes every other parameter, so that only
/// the branches learn, each from the head's distribution; a line for the training log goes to
/// `notes`. UserError when `head_loaded` is false (the encoder or the head was freshly
/// initialised): the exits learn from a fine-tuned head, so fine-tune first. With model.early_exit
/// false, branches the directory held are dropped. Other models: nothing.
void apply_early_exit(const RunConfig& cfg, models::EncoderTaskModel& model, bool head_loaded,
                      std::vector<std::string>* notes);

/// An exit threshold for inference (`--exit-threshold`): set on a model trained with
/// model.early_exit; UserError for any other model or a threshold outside [0, 1].
void apply_exit_threshold(models::TaskModel& model, double threshold);

/// distill.teacher: a model directory of the same task, label set and vocabulary, wrapped around the
/// student (models/heads/distillation.h). UserError naming distill.teacher when it does not fit.
std::shared_ptr<models::TaskModel> distillation_model(const RunConfig& cfg,
                                                      std::shared_ptr<models::EncoderTaskModel> student,
                                                      const Tokenizer& tokenizer, const LabelSet& labels);

/// What `unif eval` evaluates so that its loss is the training run's dev loss (the same ℓ and Z):
/// the loaded model with training.loss applied, wrapped with the distill teacher when distill is
/// on, and the class weights that make Z.
struct EvaluationSetup {
  std::shared_ptr<models::TaskModel> model;
  torch::Tensor class_weights;
};
EvaluationSetup evaluation_setup(const RunConfig& cfg, const LoadedModel& lm, const LabelSet& labels);

}  // namespace unif::framework
