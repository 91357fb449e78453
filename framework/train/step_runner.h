// StepRunner: one training step as one call. It takes the step's micro-batches and their Z (the
// global normalizer), runs the gradient strategy over each (with 1/Z, times fp16's loss scale),
// sets the step's loss, lets the engine take the optimizer step (unless the strategy stepped
// itself, as FreeAT does) and returns what happened:
//
//   StepRunner runner(*engine, *strategy, *stepper, scaler, seed);
//   const StepReport r = runner.run(micro, z, step);   // r.loss_sum, r.z, r.lr, r.outcome
//   if (r.outcome.nonfinite) ...                        // training.nonfinite
//
// The order of the calls inside is the one the exactness tests hold the trainer to (begin, the
// strategy's passes, lr, set_loss, the engine's step, the report).
#pragma once
#include <cstdint>
#include <vector>

#include "adversarial/strategy.h"
#include "framework/engines/gradient_engine.h"
#include "framework/train/loss_scaler.h"
#include "framework/train/optimizer_step.h"
#include "models/io.h"

namespace unif::framework {

/// What one training step did.
struct StepReport {
  double loss_sum = 0.0;          // Σ l_b over the global batch (the clean pass of each micro-batch)
  double z = 0.0;                 // the step's normalizer; 0: nothing to predict (no update)
  double lr = 0.0;                // the learning rate the step used
  int64_t samples = 0;            // examples in the step's micro-batches
  OptimizerStep::Report outcome;  // nonfinite: the update was not taken
  bool empty() const { return z == 0.0; }
};

class StepRunner {
 public:
  /// `scaler`: fp16's loss scaler, else null. Every reference must outlive the runner.
  StepRunner(GradientEngine& engine, adversarial::Strategy& strategy, OptimizerStep& stepper, const LossScaler* scaler,
             int64_t seed)
      : engine_(engine), strategy_(strategy), stepper_(stepper), scaler_(scaler), seed_(seed) {}

  /// Step `step` (0-based: the steps done before it) over `micro`, whose normalizer is `z`. A
  /// strategy's StrategyError passes through (the trainer reports it as a user error).
  StepReport run(std::vector<models::Batch>& micro, double z, int64_t step);

 private:
  GradientEngine& engine_;
  adversarial::Strategy& strategy_;
  OptimizerStep& stepper_;
  const LossScaler* scaler_;
  int64_t seed_;
};

}  // namespace unif::framework
