// EarlyStopping: training.early_stopping as HF's EarlyStoppingCallback. After each dev evaluation
// the wait restarts on an improvement by more than min_delta over the best value so far (any
// improvement updates the best value); after `patience` evaluations without one the run stops —
// never at its last step, which ends the run anyway (docs/spec.md, early_stopping.patience).
// Its counters live in TrainerState, so a resumed run continues them; whether a resumed run stays
// stopped is decided by this run's patience.
#pragma once
#include <optional>
#include <string>

#include "framework/config/run_config.h"
#include "framework/metrics/metric_set.h"
#include "framework/train/trainer_state.h"

namespace unif::framework {

class EarlyStopping {
 public:
  /// `main_metric`: the task's, used when config.metric is empty.
  EarlyStopping(EarlyStoppingConfig config, std::string main_metric, Task task);

  bool enabled() const { return config_.patience > 0; }
  /// A resumed run: the checkpoint's counters, `stopped` re-decided by this run's patience.
  void resume(const EarlyStoppingState& saved);
  /// One dev evaluation at `step`; `last`: the run's final step. Returns the log line when the run
  /// stops here. UserError when the metric is not among `metrics`.
  std::optional<std::string> update(const MetricSet& metrics, int64_t step, bool last);
  /// Another rank stopped (the ranks stop together).
  void force_stop() { state_.stopped = true; }

  const EarlyStoppingState& state() const { return state_; }
  bool stopped() const { return state_.stopped; }

 private:
  EarlyStoppingConfig config_;
  std::string metric_;
  Task task_;
  EarlyStoppingState state_;
};

/// The dev metric that picks best/: training.best_metric, else the task's main metric. Early
/// stopping watches it too unless training.early_stopping.metric names another.
std::string best_metric_name(const RunConfig& cfg);

/// Whether dev value `v` improves on `best` for metric `name` (NaN best: any value does).
bool improves(const std::string& name, double v, double best);

}  // namespace unif::framework
