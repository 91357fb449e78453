// BertTaskModel: the part every BERT head shares — a BertModel registered as "bert" (so keys start
// with `bert.` as in HF), the word-embedding perturbation hook of TaskModel, and parameter copying
// for clone_model(). Heads (sequence_classification.h, token_classification.h, span_extraction.h)
// add their output layer and loss.
#pragma once
#include <memory>
#include <torch/nn/module.h>
#include <torch/types.h>

#include "framework/common/task.h"
#include "models/bert/bert_model.h"
#include "models/heads/loss.h"
#include "models/task_model.h"

namespace unif::models {

class BertTaskModel : public TaskModel {
 public:
  BertTaskModel(const BertOptions& options, bool add_pooling_layer);

  torch::nn::Embedding word_embeddings() override { return bert->embeddings->word_embeddings; }
  virtual Task kind() const = 0;
  virtual int64_t num_labels() const = 0;
  const BertOptions& options() const { return bert->options; }
  /// training.loss of the classification and token-classification heads (loss.h); other heads
  /// ignore it. clone_model() copies it.
  void set_loss_options(LossOptions options) { loss_ = std::move(options); }
  const LossOptions& loss_options() const { return loss_; }

  BertModel bert{nullptr};

 protected:
  /// E = word_embeddings(input_ids) (+ delta), fed to BERT as inputs_embeds. delta (B, L, H) or undefined.
  /// first_token_only: see BertModel::forward (for heads that read pooler_output alone).
  BertModelOutput encode(const Batch& batch, const torch::Tensor& word_embedding_delta, bool first_token_only = false);
  /// Multiplies l_b (B) by batch.sample_weights when defined.
  static torch::Tensor weighted(const torch::Tensor& example_losses, const Batch& batch);
  /// Dropout probability of the head: classifier_dropout, or hidden_dropout_prob when it is null (< 0).
  static double head_dropout(const BertOptions& options);

  LossOptions loss_;
};

/// Copies every parameter and buffer of `from` into `to` (same names and shapes; new storage on
/// `from`'s device), and the training mode. Used by clone_model().
void copy_module_state(const torch::nn::Module& from, torch::nn::Module& to);

}  // namespace unif::models
