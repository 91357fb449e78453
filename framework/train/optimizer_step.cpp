// OptimizerStep: see optimizer_step.h.
#include "framework/train/optimizer_step.h"

#include <cmath>

#include "framework/parallel/process_group.h"
#include "framework/train/run_log.h"

namespace unif::framework {

OptimizerStep::OptimizerStep(Optimizer& optimizer, const Schedule& schedule, double base_lr, double max_grad_norm,
                             LossScaler* scaler, std::shared_ptr<ProcessGroup> group)
    : optimizer_(optimizer),
      schedule_(schedule),
      base_lr_(base_lr),
      max_grad_norm_(max_grad_norm),
      scaler_(scaler),
      group_(std::move(group)) {}

void OptimizerStep::begin(int64_t step, bool empty) {
  step_ = step;
  empty_ = empty;
  loss_nonfinite_ = false;
  loss_ = 0.0;
  report_ = {};
}

void OptimizerStep::set_loss(double loss_sum, double loss) {
  loss_ = loss;
  loss_nonfinite_ = !std::isfinite(loss_sum);  // the global batch's loss: the same on every rank
}

void OptimizerStep::mark_loss_nonfinite() {
  if (!loss_nonfinite_ || report_.nonfinite) return;
  report_.nonfinite = true;
  report_.what = "the loss is " + fmt_num(loss_);
}

double OptimizerStep::lr() const { return base_lr_ * schedule_.multiplier(step_); }

void OptimizerStep::run() {
  // The decision order is step_policy.h's: Z = 0, the loss, fp16 overflow, the norm.
  StepFacts facts;
  facts.empty = empty_;
  facts.loss_finite = !loss_nonfinite_;
  facts.scaled = scaler_ != nullptr;
  if (scaler_ && !empty_ && !loss_nonfinite_) {  // fp16: unscale the reduced gradients
    std::vector<torch::Tensor> params;
    for (const auto& p : optimizer_.params()) params.push_back(p.tensor);
    facts.grads_finite = scaler_->unscale(params);
    facts.scale_at_floor = scaler_->at_floor();
  }
  StepOutcome outcome = step_outcome(facts);
  double norm = 0.0;
  if (outcome == StepOutcome::Update) {
    norm = clip_grad_norm(optimizer_.params(), max_grad_norm_);
    if (!std::isfinite(norm)) outcome = StepOutcome::NonFinite;
  }
  // The ranks decide together (their losses and reduced gradients agree, but one rank must never
  // step while another skips: their parameters would part for good). Z, the loss and a scaler
  // overflow are the same on every rank; the norm is of the reduced gradients.
  const bool mine = outcome == StepOutcome::NonFinite;
  const bool any = group_ ? group_->any(mine) : mine;
  if (any) {
    if (!report_.nonfinite)
      report_.what =
          loss_nonfinite_ ? "the loss is " + fmt_num(loss_)
          : facts.scale_at_floor && !facts.grads_finite
              ? "the gradients are not finite even at the smallest fp16 loss scale (" + fmt_num(scaler_->scale()) + ")"
          : mine ? "the gradient norm is " + fmt_num(norm)
                 : "the loss or gradient norm is not finite on another rank";
    report_.nonfinite = true;
  }
  if (any || outcome != StepOutcome::Update) {
    optimizer_.zero_grad();  // no update: parameters and optimizer state stay as they were
    return;
  }
  optimizer_.step(lr());
  optimizer_.zero_grad();
}

}  // namespace unif::framework
