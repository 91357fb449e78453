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
//
// Bregman proximal point with a momentum teacher (the paper's μ·D_Breg(θ, θ̃_t), MT-DNN reference):
// with μ = `bregman` > 0 the clean pass also carries μ·(1/Z)·Σ_b sKL_b(f(x; θ), f(x; θ̃)), the
// teacher's distribution held fixed, and one more forward-only pass (K+4 in all) evaluates the
// teacher through GradientEngine::forward_with. The teacher θ̃ is a copy of the parameters taken at
// the first step and moved after every optimizer step: θ̃ ← (1-β)·θ + β·θ̃ with β = `momentum`
// (done lazily at the start of the next step, when `step` has advanced; micro-batches of one step
// share it). At the first step θ̃ = θ, so the term's gradient is 0 there; with β = 0 it is 0 always.
// state()/load_state() carry θ̃ through checkpoints for an exact resume. μ = 0 is the plain
// regularizer (no teacher, no extra pass). Regression has no output distribution: refused at the
// first step.
#pragma once
#include "adversarial/perturbation.h"
#include "adversarial/strategy.h"

namespace unif::adversarial {

/// Sum over the examples (and labeled tokens) of sKL between the distributions given by `logits`
/// and `target_logits` (same shape, detached by the caller where wanted). `batch` supplies the
/// kind of output (from its labels) and, for token tasks, which tokens count. Throws
/// StrategyError for regression labels (no distribution).
torch::Tensor symmetric_kl(const torch::Tensor& logits, const torch::Tensor& target_logits, const models::Batch& batch,
                           int64_t first = 0);

class Smart final : public Strategy {
 public:
  static constexpr double kNoiseStd = 1e-5;  // σ of δ₀, as in the SMART reference code

  /// `bregman` = μ (0: no proximal term), `momentum` = β of the teacher.
  Smart(double epsilon, double alpha, int64_t steps, double lambda, double bregman = 0.0, double momentum = 0.99)
      : epsilon_(epsilon), alpha_(alpha), steps_(steps), lambda_(lambda), bregman_(bregman), momentum_(momentum) {}
  StepResult accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t seed,
                        int64_t step) override;
  std::string name() const override { return "smart"; }
  int64_t passes_per_step() const override { return steps_ + 3 + (bregman_ > 0.0 ? 1 : 0); }
  /// The teacher: "smart.teacher.<i>" (parameter i in engine order) and "smart.teacher_step".
  std::map<std::string, torch::Tensor> state() const override;
  void load_state(const std::map<std::string, torch::Tensor>& state, const std::string& where) override;

  /// The teacher's parameters (empty before the first step or with μ = 0).
  const std::vector<torch::Tensor>& teacher() const { return teacher_; }

 private:
  /// Takes the first snapshot, or moves θ̃ towards θ once per new step.
  void update_teacher(GradientEngine& engine, int64_t step);

  double epsilon_, alpha_;
  int64_t steps_;
  double lambda_, bregman_, momentum_;
  MicroCounter micro_;
  std::vector<torch::Tensor> teacher_;
  int64_t teacher_step_ = -1;  // the step whose parameters θ̃ last absorbed
};

}  // namespace unif::adversarial
