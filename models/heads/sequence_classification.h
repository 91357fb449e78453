// <Family>ForSequenceClassification as HF: the family's encoder + its sequence head (BERT: dropout +
// `classifier` Linear(H, C) on the pooled [CLS]; RoBERTa: `classifier.dense` / `classifier.out_proj`
// on <s>; ...: the row's make_sequence_head). Three problem types, each with a per-example loss l_b
// (SPEC §5, summed, never averaged here):
//   single-label: cross-entropy;  multi-label: mean over C of BCE-with-logits;
//   regression: squared error (mean over C when C > 1), so sum_b l_b / B equals HF's MSELoss.
//
// Early exit (FastBERT; classification only): enable_early_exit() adds a branch classifier after
// every layer but the last (early_exit.h). Its loss adds each branch's self-distillation term
// KL(p_head || p_branch) to the head's cross-entropy; with an exit threshold set (inference), a
// record is answered by the first branch whose normalized entropy is below it, and the stack stops
// once every record of the batch has its answer.
#pragma once
#include <optional>
#include <string>
#include <vector>
#include <torch/nn/modules/container/modulelist.h>
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

  /// Adds the early-exit branches (`branches.<i>`, freshly initialized; nothing when present).
  /// std::invalid_argument unless the task is classification.
  void enable_early_exit();
  bool has_early_exit() const { return !branches.is_empty() && !branches->is_empty(); }
  /// Inference with early exit: a record's answer is the first branch's whose normalized entropy is
  /// below `threshold` (0: none exits early), else the head's; ModelOutput::exit_layers says which
  /// layer answered. nullopt: every record through every layer, no exit_layers.
  void set_exit_threshold(std::optional<double> threshold);
  std::optional<double> exit_threshold() const { return exit_threshold_; }
  /// A checkpoint holding `branches.*` gets its branches.
  void adopt_checkpoint_modules(const std::vector<std::string>& names) override;

  torch::nn::ModuleList branches{nullptr};  // null without early exit

 private:
  ModelOutput forward_with_exits(const Batch& batch, const torch::Tensor& word_embedding_delta);
  torch::Tensor head_losses(const torch::Tensor& logits, const Batch& batch) const;

  std::unique_ptr<SequenceHead> head_;
  int64_t num_labels_;
  Task kind_;
  std::optional<double> exit_threshold_;
};
TORCH_MODULE(EncoderForSequenceClassification);

}  // namespace unif::models
