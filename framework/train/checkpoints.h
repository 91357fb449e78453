// Checkpoints of a run (docs/spec.md, "Resume"): output_dir/checkpoints/step-N/ holds the model
// directory (the TrainerParts' save_model) plus optimizer.safetensors, rng.safetensors (the global
// CPU generator; every dropout stream is reseeded from it, dropout_streams.h),
// strategy.safetensors (strategies with state, e.g. SMART's teacher) and trainer_state.json
// (TrainerState). Discovery, rotation, reading and writing live here; when to save is the
// trainer's.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "framework/train/trainer_state.h"

namespace unif::framework {

/// The step of a checkpoint directory named exactly "step-<digits>", else -1 (temporary
/// "step-N.tmp-PID" directories of an interrupted save never count).
int64_t checkpoint_step(const std::filesystem::path& dir);

/// Complete checkpoints under `root`, oldest first.
std::vector<std::pair<int64_t, std::filesystem::path>> complete_checkpoints(const std::filesystem::path& root);

/// The newest complete checkpoint under `root`, or an empty path.
std::filesystem::path newest_complete_checkpoint(const std::filesystem::path& root);

/// Removes the oldest complete checkpoints under `root` until `keep` remain.
void prune_checkpoints(const std::filesystem::path& root, int64_t keep);

/// UserError unless `dir` is complete after a save of `what` (a custom save_model that wrote nothing,
/// or forgot the COMPLETE marker, must not be reported as saved).
void require_complete(const std::filesystem::path& dir, const char* what);

/// A resumed run repeats the steps after its checkpoint: metrics.jsonl keeps only the lines of
/// steps up to `step` (lines a killed run wrote later, and a torn last line, are dropped) and no
/// "test" line (the resumed run scores the test set at its end), so the file reads as if the run
/// had never stopped. Returns how many lines were dropped.
int64_t trim_metrics(const std::filesystem::path& file, int64_t step);

/// What a checkpoint holds besides the model.
struct CheckpointContent {
  TrainerState state;
  std::map<std::string, torch::Tensor> optimizer;  // Optimizer::state()
  torch::Tensor rng;                               // the global CPU generator's state
  std::map<std::string, torch::Tensor> strategy;   // empty: none (file not written)
};

/// Writes the files of `content` into the checkpoint being saved at `tmp` (save_model's `extra`).
void write_checkpoint_files(const std::filesystem::path& tmp, const CheckpointContent& content);

/// Reads them back from checkpoint `dir` (the model weights are TrainerParts::load_model's). UserError
/// naming the file on anything missing or invalid. `state_only`: trainer_state.json alone.
CheckpointContent read_checkpoint_files(const std::filesystem::path& dir, bool state_only = false);

/// The global CPU generator's state now / set it (checkpoints and resume).
torch::Tensor cpu_rng_state();
void set_cpu_rng_state(const torch::Tensor& state);

}  // namespace unif::framework
