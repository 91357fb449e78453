// RDrop: one twin pass; see rdrop.h for the loss.
#include "adversarial/rdrop.h"

#include "adversarial/smart.h"

namespace unif::adversarial {

StepResult RDrop::accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t, int64_t) {
  PassRequest twin;
  twin.scale = scale;
  const double alpha = alpha_;
  twin.pair_loss_fn = [&batch, alpha](const models::ModelOutput& a, const models::ModelOutput& b, int64_t first) {
    const auto task = 0.5 * (a.example_losses.sum() + b.example_losses.sum());
    return task + alpha * 0.5 * symmetric_kl(a.logits, b.logits, batch, first);
  };
  auto r = engine.run_custom(batch, twin);
  return {r.loss_sum, std::move(r.output), 2, false, {r.loss_sum, r.custom_loss}, {}};
}

}  // namespace unif::adversarial
