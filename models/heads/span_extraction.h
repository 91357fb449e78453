// BertForQuestionAnswering as HF (span extraction): bert WITHOUT pooler + `qa_outputs` Linear(H, 2)
// giving start and end logits per position. l_b = (CE_start + CE_end) / 2 with positions clamped to
// [0, L] and position L ignored (contributes 0), as HF; loss_count = B.
#pragma once
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "models/heads/bert_task_model.h"

namespace unif::models {

class BertForQuestionAnsweringImpl : public BertTaskModel {
 public:
  explicit BertForQuestionAnsweringImpl(const BertOptions& options);

  /// logits (B, L, 2): [..., 0] start, [..., 1] end; labels (B, 2) int64 (start, end).
  ModelOutput forward(const Batch& batch, const torch::Tensor& word_embedding_delta = {}) override;
  std::shared_ptr<TaskModel> clone_model() const override;
  Task kind() const override { return Task::SpanExtraction; }
  int64_t num_labels() const override { return 2; }

  torch::nn::Linear qa_outputs{nullptr};  // (2, H)
};
TORCH_MODULE(BertForQuestionAnswering);

}  // namespace unif::models
