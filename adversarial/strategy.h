// Strategy: how one training step turns a batch into the gradient the optimizer sees (SPEC §5).
// `none` is a single forward/backward; adversarial methods (fgm, pgd, freelb, freeat, smart)
// perturb the word-embedding output E and combine several passes. A strategy knows nothing of BERT,
// of the data or of devices: it sees a GradientEngine and a Batch.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include <torch/types.h>

#include "models/io.h"

namespace unif::adversarial {

/// What one forward/backward pass returns.
struct PassResult {
  double loss_sum = 0.0;        // sum_b l_b over the batch (not normalized)
  torch::Tensor delta_grad;     // (B, L, H) d(scale * sum_b l_b)/d delta, when asked for
  models::ModelOutput output;   // logits etc., gathered in batch order
};

/// Runs forward+backward at a perturbation of the word-embedding output; implemented by the
/// framework on one device or many replicas (the strategy cannot tell which).
class GradientEngine {
 public:
  virtual ~GradientEngine() = default;
  /// Forward on `batch` with E + delta (delta undefined = 0), then backward of
  /// `scale * sum_b l_b`, ACCUMULATING into the parameters' gradients.
  virtual PassResult run(const models::Batch& batch, const torch::Tensor& delta, double scale,
                         bool want_delta_grad) = 0;
  /// Hidden size H of the word-embedding output.
  virtual int64_t embedding_dim() const = 0;
  /// Clip, step the optimizer and zero the gradients (used by FreeAT, which steps per replay).
  virtual void optimizer_step() = 0;
};

/// The result of a strategy's step: the clean loss (sum over the batch) and outputs for metrics.
struct StepResult {
  double loss_sum = 0.0;
  models::ModelOutput output;
  int64_t passes = 0;          // forward/backward passes used
  bool stepped = false;        // the strategy already stepped the optimizer (FreeAT)
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  /// Accumulates the step's gradient g (scaled by `scale` = 1/Z) into the parameters.
  /// `step` and `seed` seed any random initial noise for the whole global batch.
  virtual StepResult accumulate(GradientEngine& engine, const models::Batch& batch, double scale,
                                int64_t seed, int64_t step) = 0;
  virtual std::string name() const = 0;
  /// Forward/backward passes per step (for the log and docs).
  virtual int64_t passes_per_step() const = 0;
};

/// Plain training: g = gθ(0).
class NoAdversary final : public Strategy {
 public:
  StepResult accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t,
                        int64_t) override {
    auto r = engine.run(batch, {}, scale, false);
    return {r.loss_sum, std::move(r.output), 1, false};
  }
  std::string name() const override { return "none"; }
  int64_t passes_per_step() const override { return 1; }
};

}  // namespace unif::adversarial
