// Cadence: when a training run logs, evaluates and saves, answered in one place from
// training.log_every / eval_every / save_every (0: at each epoch's end) and the run's last step.
//
//   const Cadence cadence(cfg.training);
//   if (cadence.log_due(step, last, nonfinite)) ...
//   if (cadence.eval_due(step, epoch_end, last)) ...
//   if (cadence.save_due(step, epoch_end, last) || stopped_unsaved) ...
#pragma once
#include <cstdint>

#include "framework/config/run_config.h"

namespace unif::framework {

class Cadence {
 public:
  explicit Cadence(const TrainingConfig& t)
      : log_every_(t.log_every), eval_every_(t.eval_every), save_every_(t.save_every) {}

  /// A `train` line after step `step` (1-based: steps done): every log_every steps, at the last
  /// step, and after a step whose update was not taken for non-finite values.
  bool log_due(int64_t step, bool last, bool nonfinite) const {
    return (log_every_ > 0 && step % log_every_ == 0) || last || nonfinite;
  }
  /// A dev evaluation: every eval_every steps (0: at each epoch's end), and at the last step.
  bool eval_due(int64_t step, bool epoch_end, bool last) const { return due(eval_every_, step, epoch_end) || last; }
  /// A checkpoint: every save_every steps (0: at each epoch's end), and at the last step.
  bool save_due(int64_t step, bool epoch_end, bool last) const { return due(save_every_, step, epoch_end) || last; }

 private:
  static bool due(int64_t every, int64_t step, bool epoch_end) { return every > 0 ? step % every == 0 : epoch_end; }
  int64_t log_every_, eval_every_, save_every_;
};

}  // namespace unif::framework
