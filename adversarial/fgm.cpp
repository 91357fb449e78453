// Fgm: one clean pass for gθ(0)/2 and gδ(0), one pass at δ = ε·normalize(gδ(0)) for gθ(δ)/2.
#include "adversarial/fgm.h"

#include "adversarial/perturbation.h"

namespace unif::adversarial {

StepResult Fgm::accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t, int64_t) {
  const auto mask = padding_mask(batch);  // (B, L, 1)
  const double w = 0.5 * scale;
  auto clean = engine.run(batch, {}, w, /*want_delta_grad=*/true);
  // The engine returns d(w·Σl)/dδ; normalize() is per example, so only its direction matters, but
  // divide by w anyway so that the 1e-8 floor applies to ∇δ L itself.
  const auto delta = epsilon_ * normalize(clean.delta_grad / w, mask);  // (B, L, H)
  auto adv = engine.run(batch, delta, w, false);
  return {clean.loss_sum, std::move(clean.output), 2, false, {clean.loss_sum, adv.loss_sum}, {}};
}

}  // namespace unif::adversarial
