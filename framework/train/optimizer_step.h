// OptimizerStep: the optimizer step of one training step as an object the gradient engine calls
// (GradientEngine::optimizer_step, once per step; FreeAT's replays call it several times): the
// decisions of step_policy.h (Z = 0, a non-finite loss, fp16 overflow and the loss scale's floor,
// a non-finite gradient norm) taken together by every rank, then clipping, the update with the
// schedule's learning rate, and zeroed gradients. What happened is read back from report().
//
//   OptimizerStep step(optimizer, schedule, cfg.training, scaler, group);
//   auto engine = make_engine(model, [&step] { step.run(); }, engine_options);  // make_engine.h
//   step.begin(s, /*empty=*/z == 0);
//   strategy.accumulate(*engine, batch, 1 / z, ...);
//   step.set_loss(loss_sum, loss_sum / z);
//   engine->optimizer_step();          // -> step.run()
//   if (step.report().nonfinite) ...   // training.nonfinite
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "framework/train/loss_scaler.h"
#include "framework/train/optimizer.h"
#include "framework/train/schedule.h"
#include "framework/train/step_policy.h"

namespace unif::framework {

class ProcessGroup;

class OptimizerStep {
 public:
  /// `scaler`: fp16's (else null); `group`: the ranks that decide together (null: one process).
  OptimizerStep(Optimizer& optimizer, const Schedule& schedule, double base_lr, double max_grad_norm,
                LossScaler* scaler, std::shared_ptr<ProcessGroup> group);

  /// The start of training step `step` (0-based: steps done before it); `empty`: its Z is 0.
  void begin(int64_t step, bool empty);
  /// The global batch's loss, once the passes are done: its sum and its value over Z (the message).
  void set_loss(double loss_sum, double loss);
  /// A strategy that stepped itself (FreeAT) met a non-finite loss: the step counts as non-finite.
  void mark_loss_nonfinite();
  /// Decide, clip, update, zero the gradients (the engine's optimizer_step()).
  void run();

  struct Report {
    bool nonfinite = false;  // the update was not taken for a non-finite loss or gradients
    std::string what;        // what was not finite, for the message
  };
  const Report& report() const { return report_; }
  /// The learning rate of step `step` (the one run() uses).
  double lr() const;

 private:
  Optimizer& optimizer_;
  const Schedule& schedule_;
  double base_lr_, max_grad_norm_;
  LossScaler* scaler_;
  std::shared_ptr<ProcessGroup> group_;
  int64_t step_ = 0;
  bool empty_ = false;
  bool loss_nonfinite_ = false;
  double loss_ = 0.0;
  Report report_;
};

}  // namespace unif::framework
