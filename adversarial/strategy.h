// Strategy: how one training step turns a batch into the gradient the optimizer sees (SPEC §5).
// `none` is a single forward/backward; adversarial methods (fgm, pgd, freelb, freeat, smart)
// perturb the word-embedding output E and combine several passes. A strategy knows nothing of BERT,
// of the data or of devices: it sees a GradientEngine and a Batch.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/types.h>

#include "framework/engines/gradient_engine.h"
#include "models/io.h"

namespace unif::adversarial {

// The engine contract the strategies drive (framework/engines/gradient_engine.h), under the names
// the strategies use.
using framework::GradientEngine;
using framework::LossFn;
using framework::PairLossFn;
using framework::PassRequest;
using framework::PassResult;
using framework::StrategyError;
using framework::task_pass;

/// The result of a strategy's step: the clean loss (sum over the batch) and outputs for metrics.
struct StepResult {
  double loss_sum = 0.0;
  models::ModelOutput output;
  int64_t passes = 0;                       // forward/backward passes used
  bool stepped = false;                     // the strategy already stepped the optimizer (FreeAT)
  std::vector<double> pass_losses;          // sum_b l_b of each pass, in order (diagnostics, tests)
  std::vector<int64_t> projected_examples;  // per ascent step: examples projected back onto the ε ball
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  /// Accumulates the step's gradient g (scaled by `scale` = 1/Z) into the parameters.
  /// `step` and `seed` seed any random initial noise for the whole global batch.
  virtual StepResult accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t seed,
                                int64_t step) = 0;
  virtual std::string name() const = 0;
  /// Forward/backward passes per step (for the log and docs).
  virtual int64_t passes_per_step() const = 0;
  /// State that must survive a checkpoint for an exact resume (SMART's teacher), by name; CPU or
  /// device tensors. Empty for stateless strategies.
  virtual std::map<std::string, torch::Tensor> state() const { return {}; }
  /// Restores state(); throws StrategyError when it does not fit (`where` names the file).
  virtual void load_state(const std::map<std::string, torch::Tensor>& state, const std::string& where) {
    (void)state, (void)where;
  }
};

/// Plain training: g = gθ(0).
class NoAdversary final : public Strategy {
 public:
  StepResult accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t, int64_t) override {
    auto r = engine.run(batch, {}, scale, false);
    return {r.loss_sum, std::move(r.output), 1, false, {r.loss_sum}, {}};
  }
  std::string name() const override { return "none"; }
  int64_t passes_per_step() const override { return 1; }
};

}  // namespace unif::adversarial
