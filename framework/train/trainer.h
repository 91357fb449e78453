// Trainer: fine-tunes a TaskModel from a RunConfig (SPEC §3-§5). It owns the loop — batches,
// gradient strategy, clipping, optimizer and schedule, evaluation, logging, checkpoints and exact
// resume — and sees the model only through models::TaskModel and the adversarial::Strategy /
// GradientEngine interfaces.
//
//   auto cfg = load_config("configs/demo.yaml", {}, Purpose::Train);
//   Trainer trainer(cfg);
//   int code = trainer.fit();   // 0; 130 when interrupted (a checkpoint was saved); 3 when a step's
//                               // loss or gradient norm was not finite (training.nonfinite: error)
#pragma once
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "framework/config/run_config.h"
#include "framework/model/evaluate.h"
#include "framework/train/parts.h"

namespace unif::framework {

class ProcessGroup;

class Trainer {
 public:
  /// Builds the BERT model, tokenizer and data from the config (see framework/train/build.h).
  /// `group`: the ranks of a multi-process run (ProcessGroup::join, SPEC §6), joined by the caller
  /// where the run starts; null (the default) trains in one process.
  explicit Trainer(RunConfig cfg, std::shared_ptr<ProcessGroup> group = nullptr);
  /// Trains any TaskModel (the C++ API).
  Trainer(RunConfig cfg, TrainerParts parts, std::shared_ptr<ProcessGroup> group = nullptr);
  ~Trainer();

  /// Trains to the end (or until SIGINT/SIGTERM); returns the process exit code (see above). With
  /// training.nonfinite: error a non-finite step prints `error: ... step N ...` and returns 3 with
  /// no checkpoint of that step and no final/. Writes output_dir/config.yaml (the resolved config) once the run is
  /// known to start or resume. Resuming checks the checkpoint's run identity (run_identity) against this run's:
  /// UserError naming the keys that differ.
  int fit();
  /// Requests a clean stop after the current step (what SIGINT does).
  static void request_stop();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace unif::framework
