// BertForSequenceClassification as HF: bert (with pooler) + dropout + `classifier` Linear(H, C) on the
// pooled [CLS] output. Three problem types, each with a per-example loss l_b (SPEC §5, summed, never
// averaged here):
//   single-label: cross-entropy;  multi-label: mean over C of BCE-with-logits;
//   regression: squared error (mean over C when C > 1), so sum_b l_b / B equals HF's MSELoss.
#pragma once
#include "models/bert/dropout.h"
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "models/heads/bert_task_model.h"

namespace unif::models {

class BertForSequenceClassificationImpl : public BertTaskModel {
 public:
  /// kind: Classification (num_labels >= 2), Multilabel (>= 1) or Regression (>= 1).
  /// Throws std::invalid_argument otherwise.
  BertForSequenceClassificationImpl(const BertOptions& options, int64_t num_labels,
                                    Task kind = Task::Classification);

  /// logits (B, C). Labels: Classification (B) int64; Multilabel (B, C) float; Regression (B) or (B, C) float.
  ModelOutput forward(const Batch& batch, const torch::Tensor& word_embedding_delta = {}) override;
  std::shared_ptr<TaskModel> clone_model() const override;
  Task kind() const override { return kind_; }
  int64_t num_labels() const override { return num_labels_; }

  Dropout dropout{nullptr};
  torch::nn::Linear classifier{nullptr};  // (C, H)

 private:
  int64_t num_labels_;
  Task kind_;
};
TORCH_MODULE(BertForSequenceClassification);

}  // namespace unif::models
