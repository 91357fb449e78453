// What flows between the data pipeline, the models and the trainer: a Batch of model inputs
// (plus labels) and a ModelOutput. Shapes: B examples, L positions (padded), C classes.
#pragma once
#include <torch/types.h>

namespace unif::models {

/// A batch of encoded examples, all tensors on the same device.
struct Batch {
  torch::Tensor input_ids;       // (B, L) int64
  torch::Tensor token_type_ids;  // (B, L) int64
  torch::Tensor attention_mask;  // (B, L) int64, 1 = real token, 0 = padding
  /// Task targets, undefined at prediction time:
  ///   classification (B) int64; multilabel (B, C) float; regression (B) float;
  ///   token_classification (B, L) int64 with -100 = ignored; span_extraction (B, 2) int64 (start, end).
  torch::Tensor labels;
  torch::Tensor sample_weights;  // (B) float, optional (undefined = all 1)
  /// (B, L) float64 in [0, 1), optional: what a model that samples draws from (replaced-token
  /// detection's generator, one uniform per position), drawn by the data pipeline as a function of
  /// (seed, epoch, example), so that every split of a batch over replicas samples alike.
  torch::Tensor uniforms;
  /// Replaced-token detection: the global batch's masked tokens over its real tokens, M / T, which
  /// scales the discriminator's share of l_b so that sum_b l_b / M = MLM + λ·RTD with both terms
  /// means over the global batch (Z = M, SPEC §5). 0: this batch's own ratio.
  double token_ratio = 0;

  int64_t size() const { return input_ids.defined() ? input_ids.size(0) : 0; }
};

/// The output of a task model on a Batch.
struct ModelOutput {
  torch::Tensor logits;  // (B, C); token tasks (B, L, C); span extraction (B, L, 2) start/end
  /// Per-example summed loss l_b (B), defined when the batch has labels. The training loss of a
  /// global batch is sum_b l_b / Z (SPEC §5); loss_count is this batch's share of Z
  /// (examples, or labeled tokens for token tasks).
  torch::Tensor example_losses;
  int64_t loss_count = 0;
  /// Early-exit models answering with an exit threshold: per row (B) int64 the layer (1-based) whose
  /// classifier answered (the last layer: the model's own head). Undefined otherwise.
  torch::Tensor exit_layers;
};

}  // namespace unif::models
