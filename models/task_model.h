// TaskModel: the one interface the trainer, the data-parallel engine and the adversarial strategies
// see. Any torch::nn model that implements it can be fine-tuned by unif (see docs/cpp-api.md).
#pragma once
#include <memory>
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
};

}  // namespace unif::models
