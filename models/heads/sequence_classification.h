// <Family>ForSequenceClassification as HF: the family's encoder + its sequence head (BERT: dropout +
// `classifier` Linear(H, C) on the pooled [CLS]; RoBERTa: `classifier.dense` / `classifier.out_proj`
// on <s>; ...: the row's make_sequence_head). Three problem types, each with a per-example loss l_b
// (SPEC §5, summed, never averaged here):
//   single-label: cross-entropy;  multi-label: mean over C of BCE-with-logits;
//   regression: squared error (mean over C when C > 1), so sum_b l_b / B equals HF's MSELoss.
#pragma once
#include <torch/nn/pimpl.h>

#include "models/heads/encoder_task_model.h"

namespace unif::models {

class EncoderForSequenceClassificationImpl : public EncoderTaskModel {
 public:
  /// kind: Classification (num_labels >= 2), Multilabel (>= 1) or Regression (>= 1).
  /// Throws std::invalid_argument otherwise.
  EncoderForSequenceClassificationImpl(const EncoderConfig& options, int64_t num_labels,
                                       Task kind = Task::Classification);

  /// logits (B, C). Labels: Classification (B) int64; Multilabel (B, C) float; Regression (B) or (B, C) float.
  ModelOutput forward(const Batch& batch, const torch::Tensor& word_embedding_delta = {}) override;
  std::shared_ptr<TaskModel> clone_model() const override;
  Task kind() const override { return kind_; }
  int64_t num_labels() const override { return num_labels_; }

 private:
  std::unique_ptr<SequenceHead> head_;
  int64_t num_labels_;
  Task kind_;
};
TORCH_MODULE(EncoderForSequenceClassification);

}  // namespace unif::models
