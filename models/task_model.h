// TaskModel: the one interface the trainer, the data-parallel engine and the adversarial strategies
// see. Any torch::nn model that implements it can be fine-tuned by unif (see docs/cpp-api.md).
#pragma once
#include <memory>
#include <stdexcept>
#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>

#include "models/io.h"

namespace unif::models {

class TaskModel : public torch::nn::Module {
 public:
  /// Forward on a batch. When `word_embedding_delta` (B, L, H) is defined it is added to the
  /// word-embedding output E = word_embeddings(input_ids) before the rest of the model (SPEC §5).
  virtual ModelOutput forward(const Batch& batch, const torch::Tensor& word_embedding_delta = {}) = 0;

  /// The module whose output adversarial methods perturb.
  virtual torch::nn::Embedding word_embeddings() = 0;

  /// A deep copy with its own parameters (for data-parallel replicas).
  virtual std::shared_ptr<TaskModel> clone_model() const = 0;

  /// Whether the training loss couples the examples of a batch (in-batch negatives: every anchor is
  /// scored against every other example's embeddings), so that it is not a sum of per-example
  /// losses. Such a model leaves ModelOutput::example_losses undefined and computes its loss with
  /// batch_loss() on the outputs of the WHOLE global batch, which the engines gather from every
  /// replica and rank before calling it (framework/engines/coupled_pass.h).
  virtual bool couples_examples() const { return false; }
  /// The loss of a whole batch from its gathered outputs (`out.logits` in batch order, on one
  /// device) and the batch's labels, as sum_b l_b would be: the trainer divides by Z (the number of
  /// examples) as for every task. Only called when couples_examples().
  virtual torch::Tensor batch_loss(const ModelOutput& out, const Batch& batch) const;
  /// For such a model, how many examples of `batch` each replica forwards at a time under a
  /// gradient cache (framework/engines/gradient_cache.h: memory bounded by that piece, gradients
  /// unchanged); 0 (the default): the whole shard at once, its graph kept.
  virtual int64_t gradient_cache_rows(const Batch& batch) const { return 0; }

  /// The tags of one token-task sequence from its logits at the positions that carry a tag (T, C):
  /// each word's first piece, in order. The default takes each row's argmax; a model with a CRF
  /// decodes the best sequence (Viterbi). With `probs`, each chosen tag's probability (T) (the
  /// softmax; a CRF's marginal).
  virtual torch::Tensor decode_tags(const torch::Tensor& emissions, torch::Tensor* probs = nullptr) const;
};

inline torch::Tensor TaskModel::decode_tags(const torch::Tensor& emissions, torch::Tensor* probs) const {
  auto tags = emissions.argmax(-1);
  if (probs) *probs = emissions.to(torch::kDouble).softmax(-1).gather(1, tags.unsqueeze(1)).squeeze(1);
  return tags;
}

inline torch::Tensor TaskModel::batch_loss(const ModelOutput&, const Batch&) const {
  throw std::logic_error("TaskModel::batch_loss: this model's loss is a sum of per-example losses");
}

}  // namespace unif::models
