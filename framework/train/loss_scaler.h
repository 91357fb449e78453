// LossScaler: dynamic loss scaling for training.precision fp16 (SPEC §7), as torch.cuda.amp's
// GradScaler. The loss is multiplied by scale() before backward so that small float16 gradients
// do not flush to zero; unscale() divides the accumulated (float32 master) gradients by it again
// before clipping and the optimizer step and reports whether any is inf or NaN. A step with
// non-finite gradients is skipped, and update() at the end of the training step halves the scale;
// after growth_interval steps in a row without one it doubles.
//
// Within one training step the scale does not change (update() is called once per step, after
// every optimizer step of it: FreeAT takes several), so every backward of the step and every
// unscale() use the same factor.
//
// Example (the trainer's fp16 path):
//   LossScaler scaler;                                   // 2^16, x2 after 2000 good steps, x0.5 on overflow
//   strategy.accumulate(engine, batch, scaler.scale() / z, ...);
//   if (scaler.unscale(params)) { clip; optimizer.step(); }   // in the engine's optimizer step
//   optimizer.zero_grad();
//   if (scaler.update()) log("step skipped");
#pragma once
#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace unif::framework {

struct LossScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;  // good steps in a row before the scale grows
  /// The floor of the scale (DeepSpeed's min_loss_scale): an overflow at this scale means gradients
  /// that are non-finite whatever the scale (the trainer treats the step as non-finite), and the
  /// scale never reaches 0.
  double min_scale = 1.0;
};

class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions options = {});

  /// The factor the loss is multiplied by in this step.
  double scale() const { return scale_; }
  /// Divides every defined gradient of `params` (dense or sparse) by scale() in place. Returns false
  /// when any gradient holds an inf or NaN (the caller skips the optimizer step and zeroes them);
  /// the overflow is remembered until update().
  bool unscale(const std::vector<torch::Tensor>& params);
  /// Ends a training step. After an overflow in it: scale *= backoff_factor (not below min_scale), the good-step count
  /// restarts, and true is returned (the step was skipped). Otherwise the step counts as good and
  /// every growth_interval-th good step multiplies the scale by growth_factor; false is returned.
  bool update();

  /// Whether the scale is at its floor (options.min_scale).
  bool at_floor() const { return scale_ <= options_.min_scale; }
  /// Steps skipped so far (overflows).
  int64_t skipped_steps() const { return skipped_; }
  /// Good steps since the last change of the scale.
  int64_t good_steps() const { return good_; }
  /// Resume: the state a checkpoint holds.
  void restore(double scale, int64_t good_steps, int64_t skipped_steps);

 private:
  LossScalerOptions options_;
  double scale_;
  int64_t good_ = 0, skipped_ = 0;
  bool overflow_ = false;  // since the last update()
};

}  // namespace unif::framework
