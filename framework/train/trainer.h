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

#include "adversarial/strategy.h"
#include "framework/config/run_config.h"
#include "framework/data/dataset.h"
#include "framework/data/mlm.h"
#include "framework/data/span_decoding.h"
#include "framework/metrics/metric_set.h"
#include "framework/parallel/worker_pool.h"
#include "framework/train/optimizer.h"
#include "framework/train/schedule.h"
#include "models/task_model.h"

namespace unif::framework {

/// A task's data, encoded: examples, their encodings and the label set.
struct TaskData {
  std::filesystem::path file;
  std::vector<Example> examples;
  std::vector<EncodedExample> encoded;  // one per example; span extraction: one per context window
  SpanConfig span;                      // span extraction: decoding (max_answer_length, n_best_size, metric)
  MlmMasking mlm;                       // masked_lm: how masks are drawn (training: per epoch; eval: fixed)
};

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
  std::function<void(const std::filesystem::path& dir,
                     const std::function<void(const std::filesystem::path&)>& extra)> save_model;
  /// Loads a checkpoint's model weights (resume).
  std::function<void(const std::filesystem::path& dir)> load_model;
  /// Lines for the training log (e.g. which weights were freshly initialised).
  std::vector<std::string> notes;
  /// training.loss class weights (C), undefined = none: the loss normaliser Z of a batch is then the
  /// sum of its targets' weights (torch's weighted mean), not their count.
  torch::Tensor class_weights;
};

/// Outputs of a model on a dataset, in example order.
struct Evaluation {
  MetricSet metrics;  // includes "loss" when labels are present
  /// Per encoded entry (= per example except span extraction, where per window): (C), or (L_b, C)
  /// for token tasks and (L_b, 2) for span extraction (real positions only).
  std::vector<torch::Tensor> logits;
  /// Span extraction: per example its best answer (empty text, start = end = 0 when no window has a
  /// valid span).
  std::vector<SpanCandidate> answers;
};

/// Runs `model` (eval mode, no gradients) over `data` in batches and computes the task's metrics.
/// With `sort_by_length` the batches hold entries of similar lengths (less padding; the outputs
/// are the same to float rounding and still in example order).
/// "loss" is sum_b l_b / Z with Z the labelled count, or the sum of the targets' `class_weights`
/// when given. masked_lm: "loss" (mean cross-entropy over the masked tokens of data.mlm's fixed
/// evaluation masks) and "perplexity" = exp(loss).
/// `workers` with more than one thread (a model on the CPU): its threads run the batches at once,
/// each with one intra-op thread and single-threaded BLAS, all on the one model (a forward pass in
/// eval mode only reads it): as the training replicas, for small and medium models this is faster
/// than one pass at a time on every core. Batch b goes to worker b mod size and the loss is summed
/// in batch order, so results do not depend on the timing; logits agree with one thread to float
/// rounding. Keep one pool for many calls (predict's chunks, the trainer's evaluations).
Evaluation evaluate(models::TaskModel& model, Task task, const TaskData& data, const LabelSet& labels,
                    int64_t batch_size, const torch::Tensor& class_weights = {}, bool sort_by_length = true,
                    WorkerPool* workers = nullptr);

/// The loss normaliser Z of a batch (SPEC §5): examples; labelled tokens for token tasks and
/// masked_lm; with `class_weights`, the sum of the weights of the targets.
double loss_normalizer(Task task, const models::Batch& batch, const torch::Tensor& class_weights = {});

/// Per-word tag ids of a token-task example from its logits (L, C): argmax at each word's first
/// piece; words without a piece (truncated) get `fallback`.
std::vector<int64_t> word_predictions(const EncodedExample& e, const Example& ex, const torch::Tensor& logits,
                                      int64_t fallback);

class Trainer {
 public:
  /// Builds the BERT model, tokenizer and data from the config (see framework/train/build.h).
  explicit Trainer(RunConfig cfg);
  /// Trains any TaskModel (the C++ API).
  Trainer(RunConfig cfg, TrainerParts parts);
  ~Trainer();

  /// Trains to the end (or until SIGINT/SIGTERM); returns the process exit code (see above). With
  /// training.nonfinite: error a non-finite step prints `error: ... step N ...` and returns 3 with
  /// no checkpoint of that step and no final/. Writes output_dir/config.yaml (the resolved config) once the run is known to start or resume.
  /// Resuming checks the checkpoint's run identity (run_identity) against this run's: UserError
  /// naming the keys that differ.
  int fit();
  /// Requests a clean stop after the current step (what SIGINT does).
  static void request_stop();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace unif::framework
