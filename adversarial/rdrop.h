// RDrop: R-Drop (Liang et al. 2021, "R-Drop: Regularized Dropout for Neural Networks"), as a
// gradient strategy. The batch goes through the model twice with independent dropout masks (one
// twin pass of the engine: two forwards, one backward), giving per-example losses ℓ¹_b, ℓ²_b and
// output distributions P¹_b, P²_b. The step minimises
//   L = (1/Z) Σ_b [ ½(ℓ¹_b + ℓ²_b) + α · ½(KL(P¹_b ‖ P²_b) + KL(P²_b ‖ P¹_b)) ]
// i.e. the mean of the two task losses plus α times the mean of the two KL directions, as the
// paper's Eq. (3) and its reference code (ce_loss = 0.5·(CE₁ + CE₂); kl = (p_loss + q_loss)/2).
// Distributions as SMART's symmetric_kl (adversarial/smart.h): softmax over classes; a Bernoulli
// per label for multilabel; softmax per labelled token for token tasks; softmax over positions for
// span start and end. Regression has no distribution: refused at the first step. With dropout 0
// the two forwards agree, the KL term is 0 and the step is plain training. The twin pass runs on
// each replica's own shard, so the step is the same on any number of replicas and processes.
#pragma once
#include "adversarial/strategy.h"

namespace unif::adversarial {

class RDrop final : public Strategy {
 public:
  explicit RDrop(double alpha) : alpha_(alpha) {}
  StepResult accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t seed,
                        int64_t step) override;
  std::string name() const override { return "rdrop"; }
  /// Two forwards (one twin pass).
  int64_t passes_per_step() const override { return 2; }

 private:
  double alpha_;
};

}  // namespace unif::adversarial
