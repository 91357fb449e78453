// Smart: the smoothness-inducing adversarial regularizer of SMART (Jiang et al. 2020). The step's
// gradient is that of
//   L(E) + λ·(1/Z)·Σ_b sKL_b(f(E), f(E+δ*)),   sKL(p, q) = KL(p‖q) + KL(q‖p) = Σ (p-q)(log p - log q)
// where f is the model's output distribution (classification: softmax over classes; multilabel: a
// Bernoulli per label; token tasks: softmax per labeled token; span extraction: softmax over
// positions for start and end) and δ* comes from projected ascent on the sKL: δ₀ ~ N(0, σ²) at
// real tokens (σ = 1e-5), δ_k = project_ε(δ_{k-1} + α·normalize(∇δ sKL(f(E)‖f(E+δ_{k-1})))), K steps
// (ε = 0: no projection). The gradient is exact for fixed δ*: one pass at δ* (the adversarial side,
// clean distribution held fixed) and one clean pass (task loss + λ·sKL with the adversarial side
// held fixed). Passes: 1 forward-only clean pass + K ascent passes (δ only) + 2 = K+3.
// Not implemented: the Bregman proximal point term with a momentum teacher (smart_momentum is
// accepted and unused). Regression has no output distribution: refused at the first step.
#pragma once
#include "adversarial/perturbation.h"
#include "adversarial/strategy.h"

namespace unif::adversarial {

/// Sum over the examples (and labeled tokens) of sKL between the distributions given by `logits`
/// and `target_logits` (same shape, detached by the caller where wanted). `batch` supplies the
/// kind of output (from its labels) and, for token tasks, which tokens count. Throws
/// unif::UserError for regression labels (no distribution).
torch::Tensor symmetric_kl(const torch::Tensor& logits, const torch::Tensor& target_logits, const models::Batch& batch,
                           int64_t first = 0);

class Smart final : public Strategy {
 public:
  static constexpr double kNoiseStd = 1e-5;  // σ of δ₀, as in the SMART reference code

  Smart(double epsilon, double alpha, int64_t steps, double lambda)
      : epsilon_(epsilon), alpha_(alpha), steps_(steps), lambda_(lambda) {}
  StepResult accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t seed,
                        int64_t step) override;
  std::string name() const override { return "smart"; }
  int64_t passes_per_step() const override { return steps_ + 3; }

 private:
  double epsilon_, alpha_;
  int64_t steps_;
  double lambda_;
  MicroCounter micro_;
};

}  // namespace unif::adversarial
