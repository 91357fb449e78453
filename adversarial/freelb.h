// FreeLb: FreeLB (Zhu et al. 2020, as in its reference code), SPEC §5:
//   δ₀ = 0 when init_mag = 0, else U(-1,1)·mask·init_mag/sqrt(len_b·H);
//   for k = 1..K: accumulate gθ(δ_{k-1})/K; if k < K: δ_k = δ_{k-1} + α·normalize(gδ(δ_{k-1})),
//   then project_ε when ε > 0.   g = Σ_k gθ(δ_{k-1})/K.   K passes per step.
// The initial noise comes from noise_generator(seed, step, micro-batch), drawn on the CPU for the
// whole batch the strategy sees, so it does not depend on the device count.
#pragma once
#include "adversarial/perturbation.h"
#include "adversarial/strategy.h"

namespace unif::adversarial {

class FreeLb final : public Strategy {
 public:
  FreeLb(double epsilon, double alpha, int64_t steps, double init_mag)
      : epsilon_(epsilon), alpha_(alpha), steps_(steps), init_mag_(init_mag) {}
  StepResult accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t seed,
                        int64_t step) override;
  std::string name() const override { return "freelb"; }
  int64_t passes_per_step() const override { return steps_; }

  /// The initial δ₀ for `batch` (zeros when init_mag = 0): (B, L, H) on the batch's device.
  torch::Tensor initial_delta(const models::Batch& batch, int64_t hidden, int64_t seed, int64_t step,
                              int64_t micro) const;

 private:
  double epsilon_, alpha_;
  int64_t steps_;
  double init_mag_;
  MicroCounter micro_;
};

}  // namespace unif::adversarial
