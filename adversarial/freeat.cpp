// FreeAt: K replays of the batch, an optimizer step after each, δ updated by the sign of the same
// backward's gδ (the "free" part: no extra pass for the perturbation).
#include "adversarial/freeat.h"

#include "adversarial/perturbation.h"

namespace unif::adversarial {

StepResult FreeAt::accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t, int64_t) {
  const auto mask = padding_mask(batch);  // (B, L, 1)
  StepResult result;
  torch::Tensor delta;  // δ₀ = 0
  for (int64_t k = 1; k <= steps_; ++k) {
    auto r = engine.run(batch, delta, scale, /*want_delta_grad=*/true);
    result.pass_losses.push_back(r.loss_sum);
    if (k == 1) {
      result.loss_sum = r.loss_sum;  // the clean loss (δ₀ = 0)
      result.output = std::move(r.output);
    }
    engine.optimizer_step();
    const auto base = delta.defined() ? delta : torch::zeros_like(r.delta_grad);
    delta = apply_mask((base + epsilon_ * r.delta_grad.sign()).clamp(-epsilon_, epsilon_), mask);
  }
  result.passes = steps_;
  result.stepped = true;
  return result;
}

}  // namespace unif::adversarial
