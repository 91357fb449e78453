// FastBERT's early exit: a small classifier after every encoder layer but the last (a "branch"),
// trained by self-distillation from the model's own head, so that inference can answer at the
// first layer confident enough.
//
// A branch reads the mean of its layer's outputs over the real tokens (a family-agnostic summary:
// a lower layer's first position carries little of the sentence in models trained with mean
// pooling): dense (H -> H) -> tanh -> classifier (H -> C), saved
// as `branches.<i>.dense` / `branches.<i>.classifier` (branch i follows layer i + 1). Its loss is
// KL(p_head || p_branch) with the head's distribution held fixed (FastBERT's self-distillation, one
// temperature). Confidence is FastBERT's normalized entropy: H(p) / ln C, in [0, 1].
#pragma once
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace unif::models {

class EarlyExitBranchImpl : public torch::nn::Cloneable<EarlyExitBranchImpl> {
 public:
  EarlyExitBranchImpl(int64_t hidden_size, int64_t num_labels, double initializer_range);
  void reset() override;
  /// hidden (B, L, H), attention_mask (B, L) 1/0 -> logits (B, C) of the masked mean.
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& attention_mask);

  int64_t hidden_size, num_labels;
  double initializer_range;
  torch::nn::Linear dense{nullptr}, classifier{nullptr};
};
TORCH_MODULE(EarlyExitBranch);

/// Per row (B): the entropy of softmax(logits) divided by ln C (0 certain, 1 uniform).
torch::Tensor normalized_entropy(const torch::Tensor& logits);

/// Per row (B): KL(softmax(teacher) || softmax(student)), the teacher's logits held fixed (no gradient).
torch::Tensor self_distillation_kl(const torch::Tensor& teacher_logits, const torch::Tensor& student_logits);

}  // namespace unif::models
