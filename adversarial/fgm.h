// Fgm: the fast gradient method (Miyato et al. 2017), SPEC §5:
//   δ = ε·normalize(gδ(0));  g = (gθ(0) + gθ(δ)) / 2.   2 passes per step.
#pragma once
#include "adversarial/strategy.h"

namespace unif::adversarial {

class Fgm final : public Strategy {
 public:
  explicit Fgm(double epsilon) : epsilon_(epsilon) {}
  StepResult accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t seed,
                        int64_t step) override;
  std::string name() const override { return "fgm"; }
  int64_t passes_per_step() const override { return 2; }

 private:
  double epsilon_;
};

}  // namespace unif::adversarial
