// FreeAt: "free" adversarial training (Shafahi et al. 2019), SPEC §5: the batch is replayed K
// times; each replay takes an optimizer step with gθ(δ) and then δ ← clamp(δ + ε·sign(gδ(δ)), -ε, ε)
// (padding kept at 0), δ₀ = 0. The strategy steps the optimizer itself (StepResult::stepped), K
// optimizer steps per training step, so it cannot be combined with grad_accum_steps > 1 (the
// config rejects that). K passes per step.
#pragma once
#include "adversarial/strategy.h"

namespace unif::adversarial {

class FreeAt final : public Strategy {
 public:
  FreeAt(double epsilon, int64_t steps) : epsilon_(epsilon), steps_(steps) {}
  StepResult accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t seed,
                        int64_t step) override;
  std::string name() const override { return "freeat"; }
  int64_t passes_per_step() const override { return steps_; }

 private:
  double epsilon_;
  int64_t steps_;
};

}  // namespace unif::adversarial
