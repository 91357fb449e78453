// Pgd: the clean pass gives gθ(0)/2 and gδ(0); K-1 delta-only passes walk δ up the loss inside the
// ε ball; the pass at δ_K gives gθ(δ_K)/2.
#include "adversarial/pgd.h"

#include "adversarial/perturbation.h"

namespace unif::adversarial {

StepResult Pgd::accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t, int64_t) {
  const auto mask = padding_mask(batch);  // (B, L, 1)
  const double w = 0.5 * scale;
  StepResult result;
  auto clean = engine.run(batch, {}, w, /*want_delta_grad=*/true);
  result.pass_losses.push_back(clean.loss_sum);
  torch::Tensor grad = clean.delta_grad / w;  // ∇δ L at δ₀ = 0, (B, L, H)
  torch::Tensor delta = torch::zeros_like(grad);
  for (int64_t k = 1; k <= steps_; ++k) {
    const auto moved = delta + alpha_ * normalize(grad, mask);
    result.projected_examples.push_back(count_outside(moved, epsilon_, mask));
    delta = project(moved, epsilon_, mask);
    if (k == steps_) break;
    PassRequest ascent;
    ascent.delta = delta;
    ascent.scale = scale;
    ascent.want_delta_grad = true;
    ascent.param_grads = false;
    auto r = engine.run_custom(batch, ascent);
    result.pass_losses.push_back(r.loss_sum);
    grad = r.delta_grad / scale;
  }
  auto adv = engine.run(batch, delta, w, false);
  result.pass_losses.push_back(adv.loss_sum);
  result.loss_sum = clean.loss_sum;
  result.output = std::move(clean.output);
  result.passes = steps_ + 1;
  return result;
}

}  // namespace unif::adversarial
