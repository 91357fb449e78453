// TrainerState: the position and bookkeeping of a run that a checkpoint holds in
// trainer_state.json, with one to_json / from_json pair used for both writing and reading
// (docs/spec.md, "Resume"). The tensors of a checkpoint (optimizer, RNG, strategy) are
// framework/train/checkpoints.h's.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace unif::framework {

/// training.early_stopping's counters: the best value of its metric so far (NaN: none yet),
/// evaluations since the last improvement by more than min_delta, and whether the run stopped.
struct EarlyStoppingState {
  double best = std::numeric_limits<double>::quiet_NaN();
  int64_t wait = 0;
  bool stopped = false;
};

/// fp16's dynamic loss scale (framework/train/loss_scaler.h).
struct LossScaleState {
  double scale = 65536.0;
  int64_t good_steps = 0;
  int64_t skipped_steps = 0;
};

struct TrainerState {
  // Position: `step` optimizer steps done; the next batch is batch `batch_in_epoch` of `epoch`.
  int64_t step = 0, epoch = 0, batch_in_epoch = 0;
  double best_metric = std::numeric_limits<double>::quiet_NaN();  // NaN: no evaluation yet
  int64_t best_step = -1;
  int64_t seed = 0;
  int64_t skipped_steps = 0;  // training.nonfinite: skip, over the whole run
  nlohmann::json identity;    // run_identity.h; null in checkpoints of older versions
  std::string config;         // the run's resolved config (YAML); "" in older checkpoints
  EarlyStoppingState early_stopping;
  std::optional<LossScaleState> loss_scale;  // fp16 runs only

  nlohmann::json to_json() const;
  /// Throws nlohmann::json::exception on a missing or mistyped field (older optional fields are
  /// optional here too).
  static TrainerState from_json(const nlohmann::json& j);
};

}  // namespace unif::framework
