// Classification losses: see loss.h for the formulas.
#include "models/heads/loss.h"

#include <torch/nn/functional/loss.h>

namespace unif::models {

namespace F = torch::nn::functional;

torch::Tensor classification_loss(const torch::Tensor& logits, const torch::Tensor& targets, const LossOptions& o,
                                  int64_t ignore_index) {
  const auto y = targets.to(torch::kLong);
  if (o.plain())
    return F::cross_entropy(logits, y, F::CrossEntropyFuncOptions().reduction(torch::kNone).ignore_index(ignore_index));
  const int64_t c = logits.size(-1);
  const auto valid = y.ne(ignore_index);
  const auto safe_y = y.masked_fill(~valid, 0);
  const auto log_p = torch::log_softmax(logits, -1);  // (N, C)
  auto q = torch::one_hot(safe_y, c).to(log_p.scalar_type()) * (1.0 - o.label_smoothing) + o.label_smoothing / c;
  auto term = -log_p;  // -log p_c
  if (o.focal_gamma != 0.0) {
    // (1 - p)^γ. For γ < 1 its derivative γ (1 - p)^(γ-1) is infinite at p = 1 (a confident item whose
    // p rounds to 1), and 0 · inf is NaN in the backward pass even where q_c = 0. 1 - p = -expm1(log p)
    // is clamped to 1e-30 first: there clamp passes no gradient and pow's stays finite (<= γ · 1e30).
    // Only items with 1 - p < 1e-30 see another value, where the factor -log p_c ~ 1 - p is < 1e-30.
    const auto one_minus_p = (-torch::expm1(log_p)).clamp_min(1e-30);
    term = term * one_minus_p.pow(o.focal_gamma);
  }
  if (o.class_weights.defined()) term = term * o.class_weights.to(log_p.device(), log_p.scalar_type());
  return (q * term).sum(-1) * valid.to(log_p.scalar_type());
}

double loss_normalizer(const torch::Tensor& targets, const torch::Tensor& class_weights, int64_t ignore_index) {
  const auto y = targets.to(torch::kLong).flatten();
  const auto valid = y.ne(ignore_index);
  if (!class_weights.defined()) return static_cast<double>(valid.sum().item<int64_t>());
  const auto w = class_weights.to(torch::kCPU, torch::kFloat64);
  return w.index_select(0, y.masked_select(valid).to(torch::kCPU)).sum().item<double>();
}

torch::Tensor balanced_class_weights(const std::vector<int64_t>& counts) {
  int64_t n = 0;
  for (auto k : counts) n += k;
  const auto c = static_cast<double>(counts.size());
  auto w = torch::ones({static_cast<int64_t>(counts.size())}, torch::kFloat32);
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] > 0) w[static_cast<int64_t>(i)] = static_cast<double>(n) / (c * static_cast<double>(counts[i]));
  return w;
}

}  // namespace unif::models
