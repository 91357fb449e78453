// EncoderTaskModel: the part every task head shares — the family's encoder registered under the
// family's prefix (so keys start with `bert.`, `roberta.`, `distilbert.`, ... as in HF), the
// word-embedding perturbation hook of TaskModel, and parameter copying for clone_model(). The family
// comes from options.model_type() (models/architectures.h). Heads (sequence_classification.h,
// token_classification.h, span_extraction.h, masked_lm.h) add their output layer and loss.
#pragma once
#include <memory>
#include <string>
#include <vector>
#include <torch/nn/module.h>
#include <torch/types.h>

#include "framework/common/task.h"
#include "models/encoder_config.h"
#include "models/encoder_model.h"
#include "models/heads/loss.h"
#include "models/task_model.h"

namespace unif::models {

struct Architecture;

class EncoderTaskModel : public TaskModel {
 public:
  /// Builds the encoder of options.model_type()'s family (std::invalid_argument for an unknown
  /// family or bad options).
  EncoderTaskModel(const EncoderConfig& options, bool add_pooling_layer);

  torch::nn::Embedding word_embeddings() override { return encoder_->word_embeddings(); }
  virtual Task kind() const = 0;
  virtual int64_t num_labels() const = 0;
  const EncoderConfig& options() const { return encoder_->encoder_options(); }
  /// The family's encoder (BertModel, RobertaModel, ...).
  EncoderModel& encoder() { return *encoder_; }
  /// The family's row in the architecture table.
  const Architecture& architecture() const { return *arch_; }
  /// training.loss of the classification and token-classification heads (loss.h); other heads
  /// ignore it. clone_model() copies it.
  void set_loss_options(LossOptions options) { loss_ = std::move(options); }
  const LossOptions& loss_options() const { return loss_; }
  /// Optional modules a checkpoint may hold beside the head (a token classifier's `crf.*`): called
  /// with the checkpoint's tensor names before its weights load, so that those find their module.
  virtual void adopt_checkpoint_modules(const std::vector<std::string>& names) {}
  /// A tap (layer_tap.h) the encoder reports to on the next forward passes, for a caller that
  /// wraps the head (layer-wise distillation reads every layer's output); nullptr: none. A head's
  /// own tap (early exit) comes first.
  /// The tap holds for forward passes on the calling thread only, so that threads running the same
  /// model at once (evaluation workers) each read their own.
  void set_layer_tap(LayerTap* tap);

 protected:
  /// The encoder on the batch, word_embedding_delta (B, L, H_emb) or undefined added to its word
  /// embeddings. first_token_only, tap: see EncoderModel::encode (heads that read position 0 alone).
  EncoderOutput encode(const Batch& batch, const torch::Tensor& word_embedding_delta, bool first_token_only = false,
                       LayerTap* tap = nullptr);
  /// Multiplies l_b (B) by batch.sample_weights when defined.
  static torch::Tensor weighted(const torch::Tensor& example_losses, const Batch& batch);
  /// Dropout probability of the head: classifier_dropout, or hidden_dropout_prob when it is null (< 0).
  static double head_dropout(const EncoderConfig& options);

  const Architecture* arch_;
  std::shared_ptr<EncoderModel> encoder_;
  LossOptions loss_;
};

/// Copies every parameter and buffer of `from` into `to` (same names and shapes; new storage on
/// `from`'s device), and the training mode. Used by clone_model().
void copy_module_state(const torch::nn::Module& from, torch::nn::Module& to);

}  // namespace unif::models
