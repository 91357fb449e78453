// evaluate: a model's outputs and the task's metrics on a dataset (dev evaluations, `unif eval`,
// `unif predict`, data.test), on the model's device, in length-sorted batches, optionally on
// several worker threads; and the loss normaliser Z of SPEC §5 shared with training.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include <torch/types.h>

#include "framework/config/run_config.h"
#include "framework/data/dataset.h"
#include "framework/data/span_decoding.h"
#include "framework/data/task_data.h"
#include "framework/data/word_windows.h"
#include "framework/metrics/metric_set.h"
#include "framework/metrics/report.h"
#include "framework/parallel/worker_pool.h"
#include "models/task_model.h"

namespace unif::framework {

/// Outputs of a model on a dataset, in example order.
struct Evaluation {
  MetricSet metrics;  // includes "loss" when labels are present
  /// Per encoded entry (= per example except span extraction, where per window): (C), or (L_b, C)
  /// for token tasks and (L_b, 2) for span extraction (real positions only).
  std::vector<torch::Tensor> logits;
  /// Span extraction: per example its best answer (empty text, start = end = 0 when no window has a
  /// valid span; no_answer set when a model trained with unanswerable questions judges it so).
  std::vector<SpanCandidate> answers;
  /// Span extraction with unanswerable questions (data.span.unanswerable): per example its null
  /// odds, null_score - the best span's score (+infinity without a span).
  std::vector<double> null_odds;
  /// Token classification: per example its words' tag ids (word_predictions with the model's
  /// decode_tags: argmax, or a CRF's Viterbi path).
  std::vector<std::vector<int64_t>> word_tags;
  /// Early-exit models with an exit threshold: per encoded entry the layer that answered (1-based;
  /// ModelOutput::exit_layers), and the metric "exit_layer", their mean. Empty otherwise.
  std::vector<int64_t> exit_layers;
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

/// Where evaluate()'s batches begin and end in `order` (entries' indices; batch k is
/// order[bounds[k], bounds[k+1])): `batch_size` entries each; but when there are `workers` > 1 and
/// no more batches than workers (a server's batch split over the CPU workers), the length-sorted
/// order is cut where each batch gets an equal share of the tokens (the shorter texts' batch holds
/// more of them, possibly over batch_size), so that the workers finish together.
std::vector<int64_t> batch_bounds(const std::vector<EncodedExample>& encoded, const std::vector<int64_t>& order,
                                  int64_t batch_size, int64_t workers);

/// The per-class table of an evaluation with labels (`unif eval --report`): classification per class
/// with the confusion matrix, multilabel per label, token classification per entity type (seqeval);
/// nullopt for the other tasks (regression, span extraction, masked_lm have no classes).
std::optional<Report> evaluation_report(Task task, const TaskData& data, const LabelSet& labels, const Evaluation& ev);

/// The loss normaliser Z of a batch (SPEC §5): examples; labelled tokens for token tasks and
/// masked_lm; with `class_weights`, the sum of the weights of the targets.
double loss_normalizer(Task task, const models::Batch& batch, const torch::Tensor& class_weights = {});

/// Per-word tag ids of a token-task example from its logits (L, C): the tags of the words' first
/// pieces (`decode`, default argmax: decode_word_starts); words without a piece (truncated) get
/// `fallback`.
std::vector<int64_t> word_predictions(const EncodedExample& e, const Example& ex, const torch::Tensor& logits,
                                      int64_t fallback, const TagDecoder& decode = {});

}  // namespace unif::framework
