// Classification losses of the heads (training.loss, docs/objectives.md): per-item values whose
// sum over a global batch divided by Z (loss_normalizer) is the training loss (SPEC §5).
//
// For an item with logits z (C classes), target y, p = softmax(z), class weights w (all 1 when
// none), label smoothing ε and focal γ:
//   q_c = (1-ε)·[c = y] + ε/C                         (the smoothed target)
//   ℓ   = Σ_c q_c · w_c · (1 - p_c)^γ · (-log p_c)
//   Z   = Σ_items w_y                                 (the count of items when there are no weights)
// γ = 0 gives torch.nn.functional.cross_entropy(z, y, weight=w, label_smoothing=ε) (reduction
// mean = Σℓ / Σ w_y, as torch); ε = 0 gives the focal loss of Lin et al. 2017 with α_t = w_y:
// -w_y (1 - p_y)^γ log p_y. Items whose target is ignore_index contribute 0 and do not count in Z.
#pragma once
#include <cstdint>

#include <torch/types.h>

namespace unif::models {

struct LossOptions {
  double label_smoothing = 0.0;  // ε in [0, 1)
  double focal_gamma = 0.0;      // γ >= 0
  torch::Tensor class_weights;   // (C) float, undefined = all 1

  /// Plain cross-entropy (ε = 0, γ = 0, no weights).
  bool plain() const { return label_smoothing == 0.0 && focal_gamma == 0.0 && !class_weights.defined(); }
};

/// ℓ per item: logits (N, C), targets (N) int64; 0 where targets == ignore_index.
torch::Tensor classification_loss(const torch::Tensor& logits, const torch::Tensor& targets, const LossOptions& options,
                                  int64_t ignore_index = -100);

/// Z of `targets` (any shape, int64): Σ class_weights[y] over the targets != ignore_index, or
/// their count when class_weights is undefined.
double loss_normalizer(const torch::Tensor& targets, const torch::Tensor& class_weights, int64_t ignore_index = -100);

/// sklearn's "balanced" weights: n / (C · count_c) from the label counts (count_c = 0 gives 1.0,
/// the class never being a target).
torch::Tensor balanced_class_weights(const std::vector<int64_t>& counts);

}  // namespace unif::models
