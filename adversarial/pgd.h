// Pgd: projected gradient descent (Madry et al. 2018), SPEC §5:
//   δ₀ = 0; δ_k = project_ε(δ_{k-1} + α·normalize(gδ(δ_{k-1}))), k = 1..K;
//   g = (gθ(0) + gθ(δ_K)) / 2.   K+1 passes per step (the K-1 inner ones compute gδ only).
#pragma once
#include "adversarial/strategy.h"

namespace unif::adversarial {

class Pgd final : public Strategy {
 public:
  Pgd(double epsilon, double alpha, int64_t steps) : epsilon_(epsilon), alpha_(alpha), steps_(steps) {}
  StepResult accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t seed,
                        int64_t step) override;
  std::string name() const override { return "pgd"; }
  int64_t passes_per_step() const override { return steps_ + 1; }

 private:
  double epsilon_, alpha_;
  int64_t steps_;
};

}  // namespace unif::adversarial
