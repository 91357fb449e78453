// TextCnn: a small non-BERT classifier (UNIF's TextCNN: Kim 2014) implementing models::TaskModel,
// the example of training your own model through the C++ API (docs/cpp-api.md). Word embedding
// (the module adversarial methods perturb) → Conv1d filters of widths 2, 3, 4 with ReLU → max-pool
// over the windows that lie inside each example (so padding never changes an example's logits) →
// dropout → linear. Classification: l_b = sample weight × cross-entropy; multilabel (`multilabel`):
// l_b = sample weight × mean over labels of the sigmoid cross-entropy (as the BERT head); loss_count = B.
#pragma once
#include <memory>
#include <vector>

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "models/layers/dropout.h"
#include "models/task_model.h"

namespace unif::examples {

struct TextCnnOptions {
  int64_t vocab_size = 0;
  int64_t embedding_dim = 64;
  int64_t filters = 64;  // per width
  std::vector<int64_t> widths{2, 3, 4};
  double dropout = 0.1;
  int64_t num_labels = 2;
  bool multilabel = false;  // sigmoid per label instead of softmax
};

class TextCnn final : public models::TaskModel {
 public:
  explicit TextCnn(TextCnnOptions options);
  models::ModelOutput forward(const models::Batch& batch, const torch::Tensor& word_embedding_delta = {}) override;
  torch::nn::Embedding word_embeddings() override { return embedding_; }
  std::shared_ptr<models::TaskModel> clone_model() const override;
  const TextCnnOptions& options() const { return options_; }

 private:
  TextCnnOptions options_;
  torch::nn::Embedding embedding_{nullptr};
  std::vector<torch::nn::Conv1d> convs_;
  models::Dropout dropout_{nullptr};  // per-replica generators under data parallelism (models/layers/dropout.h)
  torch::nn::Linear classifier_{nullptr};
};

}  // namespace unif::examples
