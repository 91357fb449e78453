// TrainerParts: what the trainer trains — a model, its label set, the encoded train / dev / test
// data and how to save and load model directories. build_trainer_parts (build.h) makes them from a
// config for BERT; a C++ user makes them for any TaskModel (docs/cpp-api.md).
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/types.h>

#include "framework/config/run_config.h"
#include "framework/data/task_data.h"
#include "framework/metrics/metric_set.h"
#include "models/task_model.h"

namespace unif::framework {

/// What a custom model needs besides the config to be trained (docs/cpp-api.md): the model, the
/// label set, encoded train/dev(/test) data, and how to save a model directory at `final/`, `best/`
/// and in checkpoints (the trainer adds optimizer and trainer state to checkpoints itself).
/// save_model must leave `dir` complete (its COMPLETE marker written last, SPEC §4): the trainer
/// checks after every save and stops with an error otherwise.
struct TrainerParts {
  std::shared_ptr<models::TaskModel> model;
  LabelSet labels;
  TaskData train, dev;
  TaskData test;  // data.test: scored once with the final model at the end of training (SPEC §7)
  std::function<void(const std::filesystem::path& dir, const std::function<void(const std::filesystem::path&)>& extra)>
      save_model;
  /// Loads a checkpoint's model weights (resume).
  std::function<void(const std::filesystem::path& dir)> load_model;
  /// Lines for the training log (e.g. which weights were freshly initialised).
  std::vector<std::string> notes;
  /// training.loss class weights (C), undefined = none: the loss normaliser Z of a batch is then the
  /// sum of its targets' weights (torch's weighted mean), not their count.
  torch::Tensor class_weights;
  /// data.retrieval (task embedding): the retrieval metrics of the model as it is (eval mode, no
  /// gradients), added to every dev evaluation's; empty when not given.
  std::function<MetricSet()> score_retrieval;
};

}  // namespace unif::framework
