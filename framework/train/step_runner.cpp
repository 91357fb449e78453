// StepRunner: see step_runner.h.
#include "framework/train/step_runner.h"

namespace unif::framework {

StepReport StepRunner::run(std::vector<models::Batch>& micro, double z, int64_t step) {
  StepReport r;
  r.z = z;
  // fp16: the loss scaler's factor rides on 1/Z into every backward of the step.
  const double scale = (z > 0 ? 1.0 / z : 0.0) * (scaler_ ? scaler_->scale() : 1.0);
  stepper_.begin(step, z == 0);
  bool stepped = false;
  for (auto& b : micro) {
    const auto pass = strategy_.accumulate(engine_, b, scale, seed_, step);
    r.loss_sum += pass.loss_sum;
    stepped = stepped || pass.stepped;
    r.samples += b.size();
  }
  r.lr = stepper_.lr();
  stepper_.set_loss(r.loss_sum, r.loss_sum * scale);
  if (!stepped)
    engine_.optimizer_step();  // -> OptimizerStep::run
  else
    stepper_.mark_loss_nonfinite();  // a strategy that steps itself (freeat)
  r.outcome = stepper_.report();
  return r;
}

}  // namespace unif::framework
