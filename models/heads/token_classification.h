// <Family>ForTokenClassification as HF (the same in every family): the encoder WITHOUT pooler +
// dropout (classifier_dropout, else hidden_dropout_prob) + `classifier` Linear(H, C) on every position. l_b = sum over
// b's tokens whose label != -100 of the cross-entropy; loss_count = number of such tokens (SPEC §5: Z counts labeled
// tokens).
// With a CRF (enable_crf; SPEC's model.crf): l_b = -log p(gold tags | logits) of b's labeled
// positions as one sequence (crf.h), still over Z = labeled tokens (pytorch-crf's token_mean), and
// decode_tags() is the Viterbi path. The CRF is saved as `crf.*` beside HF's tensors.
#pragma once
#include "models/layers/dropout.h"
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "models/heads/crf.h"
#include "models/heads/encoder_task_model.h"

namespace unif::models {

class EncoderForTokenClassificationImpl : public EncoderTaskModel {
 public:
  /// Throws std::invalid_argument when num_labels < 1.
  EncoderForTokenClassificationImpl(const EncoderConfig& options, int64_t num_labels);

  /// logits (B, L, C); labels (B, L) int64 with -100 = ignored.
  ModelOutput forward(const Batch& batch, const torch::Tensor& word_embedding_delta = {}) override;
  std::shared_ptr<TaskModel> clone_model() const override;
  Task kind() const override { return Task::TokenClassification; }
  int64_t num_labels() const override { return num_labels_; }
  torch::Tensor decode_tags(const torch::Tensor& emissions, torch::Tensor* probs = nullptr) const override;
  void adopt_checkpoint_modules(const std::vector<std::string>& names) override;

  /// Adds a freshly initialised CRF (a no-op when there is one); `constraints` forbid moves.
  void enable_crf(const std::optional<CrfConstraints>& constraints = std::nullopt);
  /// Removes the CRF (back to per-token cross-entropy).
  void disable_crf();
  bool has_crf() const { return !crf.is_empty(); }

  static constexpr int64_t kIgnoreIndex = -100;

  Dropout dropout{nullptr};
  torch::nn::Linear classifier{nullptr};   // (C, H)
  std::unique_ptr<TokenHead> family_head;  // the family's own head (architectures.h), instead of the two above
  Crf crf{nullptr};                        // null = no CRF

 private:
  ModelOutput crf_loss(ModelOutput out, const Batch& batch) const;
  int64_t num_labels_;
};
TORCH_MODULE(EncoderForTokenClassification);

}  // namespace unif::models
