// StepPolicy: what the optimizer step of one training step does with its gradients, given what was
// (not) finite: training.nonfinite (SPEC §7) and fp16 loss scaling decided in one place, in this
// order:
//   1. a non-finite loss is a non-finite step, whatever the precision: the data or the model is
//      broken, which no loss scale cures (training.nonfinite: error stops, skip skips and counts);
//   2. fp16: gradients that overflow after unscaling skip the update and lower the loss scale (an
//      ordinary event of loss scaling, not counted as non-finite) — unless the scale is already at
//      its floor, where the gradients are non-finite whatever the scale: a non-finite step;
//   3. a non-finite gradient norm (after clipping's reduction) is a non-finite step;
//   4. otherwise the update is taken.
// Z = 0 (nothing to predict in the step: no labelled token, no masked token) is no update at all
// (weight decay would still move the weights).
#pragma once

namespace unif::framework {

enum class StepOutcome {
  Update,      // clip, step, zero the gradients
  Empty,       // Z = 0: no update, nothing counted
  ScalerSkip,  // fp16 overflow: no update, the loss scaler backs off
  NonFinite,   // no update; training.nonfinite decides (error: stop with exit 3, skip: count)
};

struct StepFacts {
  bool empty = false;           // Z = 0
  bool loss_finite = true;      // the global batch's loss
  bool scaled = false;          // fp16 loss scaling is on
  bool grads_finite = true;     // after unscaling (fp16); ignored when !scaled
  bool scale_at_floor = false;  // fp16: the loss scale cannot go lower
};

/// The outcome before the gradient norm is known (Update means: go on and clip).
inline StepOutcome step_outcome(const StepFacts& f) {
  if (f.empty) return StepOutcome::Empty;
  if (!f.loss_finite) return StepOutcome::NonFinite;
  if (f.scaled && !f.grads_finite) return f.scale_at_floor ? StepOutcome::NonFinite : StepOutcome::ScalerSkip;
  return StepOutcome::Update;
}

}  // namespace unif::framework
