// <Family>ForQuestionAnswering as HF (span extraction): the encoder WITHOUT pooler + `qa_outputs`
// Linear(H, 2) giving start and end logits per position (DistilBERT: dropout qa_dropout before it). l_b = (CE_start +
// CE_end) / 2 with positions clamped to [0, L] and position L ignored (contributes 0), as HF; loss_count = B.
// With a verifier (enable_verifier; span.verifier): `verifier` Linear(H, 1) on [CLS]'s hidden state
// scores "this window does not hold the answer" (its target: start = end = 0), l_b adds its binary
// cross-entropy, and the logits gain a third channel holding that score at every position.
#pragma once
#include <string>
#include <vector>

#include "models/layers/dropout.h"
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "models/heads/encoder_task_model.h"

namespace unif::models {

class EncoderForQuestionAnsweringImpl : public EncoderTaskModel {
 public:
  explicit EncoderForQuestionAnsweringImpl(const EncoderConfig& options);

  /// logits (B, L, 2): [..., 0] start, [..., 1] end (with a verifier (B, L, 3): [..., 2] its
  /// logit); labels (B, 2) int64 (start, end).
  ModelOutput forward(const Batch& batch, const torch::Tensor& word_embedding_delta = {}) override;
  std::shared_ptr<TaskModel> clone_model() const override;
  void adopt_checkpoint_modules(const std::vector<std::string>& names) override;
  /// Adds a freshly initialised verifier (a no-op when there is one).
  void enable_verifier();
  bool has_verifier() const { return !verifier.is_empty(); }
  Task kind() const override { return Task::SpanExtraction; }
  int64_t num_labels() const override { return 2; }

  torch::nn::Linear qa_outputs{nullptr};   // (2, H)
  Dropout dropout{nullptr};                // qa_dropout; null where the family has none
  std::unique_ptr<TokenHead> family_head;  // the family's own head (architectures.h), instead of the two above
  torch::nn::Linear verifier{nullptr};     // (1, H) on [CLS]; null = none
};
TORCH_MODULE(EncoderForQuestionAnswering);

}  // namespace unif::models
