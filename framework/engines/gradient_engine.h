// GradientEngine: the contract between a gradient strategy (adversarial/strategy.h) and the code
// that runs the model — forward at a perturbation delta of the word-embedding output E, backward
// into the parameters and/or delta. The engines implementing it live beside this header:
// LocalEngine (one model on one device), DataParallelEngine (replicas on threads, one process),
// DistributedEngine (ranks of a c10d job around either); make_engine picks one for a run. A
// strategy sees only this header: not the devices, not the ranks, not BERT.
//
// Header-only, its own CMake target (unif::gradient_engine, needing models/io.h and Torch), so that
// unif::adversarial links the contract and not the engines.
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include <torch/types.h>

#include "models/io.h"

namespace unif::framework {

/// A strategy, or a loss function of its inside a pass, cannot work with what it was given: a batch
/// without labels, a task without a probability output (SMART's KL term), a saved state that does not
/// fit the model. The input's fault, not the program's. Engines pass it on with its class (a
/// replica's naming the replica); the trainer reports it as unif::UserError, so `unif` prints one
/// `error:` line (exit 2). The adversarial library throws this, never the framework's own types.
struct StrategyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What one forward/backward pass returns.
struct PassResult {
  double loss_sum = 0.0;       // sum_b l_b over the batch (not normalized), the task loss
  double custom_loss = 0.0;    // run_custom with a loss_fn: its value (not scaled)
  torch::Tensor delta_grad;    // (B, L, H) d(scale * loss)/d delta, when asked for
  models::ModelOutput output;  // logits etc., gathered in batch order
};

/// A loss computed from a model output, summed over the examples of `out`. `first` is the index in
/// the strategy's batch of out's first example (0 on one device; a replica's shard offset), so that
/// per-example targets held by the strategy can be sliced: rows [first, first + out.logits.size(0)).
using LossFn = std::function<torch::Tensor(const models::ModelOutput& out, int64_t first)>;

/// A loss from the outputs of two forward passes on the same inputs (R-Drop), summed over the
/// examples; `first` as in LossFn.
using PairLossFn =
    std::function<torch::Tensor(const models::ModelOutput& a, const models::ModelOutput& b, int64_t first)>;

/// What run_custom does: forward at E + delta; loss = loss_fn(output) (empty: the task loss
/// sum_b l_b); backward of scale * loss into the parameters' gradients when `param_grads`, and/or
/// into delta when `want_delta_grad`. With neither it is a forward pass only.
struct PassRequest {
  torch::Tensor delta;  // (B, L, H) or undefined = 0
  double scale = 1.0;
  bool want_delta_grad = false;
  bool param_grads = true;  // false: the parameters' .grad are left untouched
  LossFn loss_fn;           // empty: the task loss
  /// Set: a twin pass. The model runs forward TWICE on the same inputs (each forward draws its own
  /// dropout masks) and the loss is pair_loss_fn(first output, second output); loss_sum is the mean
  /// of the two forwards' task losses and `output` the first forward's. loss_fn is then unused.
  PairLossFn pair_loss_fn;
};

/// The request run(batch, delta, scale, want_delta_grad) stands for: the task loss with parameter
/// gradients (engines that implement run_custom fully serve run() through it).
inline PassRequest task_pass(const torch::Tensor& delta, double scale, bool want_delta_grad) {
  PassRequest request;
  request.delta = delta;
  request.scale = scale;
  request.want_delta_grad = want_delta_grad;
  return request;
}

/// Runs forward+backward at a perturbation of the word-embedding output; implemented by the
/// framework on one device or many replicas (the strategy cannot tell which).
class GradientEngine {
 public:
  virtual ~GradientEngine() = default;
  /// Forward on `batch` with E + delta (delta undefined = 0), then backward of
  /// `scale * sum_b l_b`, ACCUMULATING into the parameters' gradients.
  virtual PassResult run(const models::Batch& batch, const torch::Tensor& delta, double scale,
                         bool want_delta_grad) = 0;
  /// A pass with a loss of the strategy's own (SMART) or without parameter gradients (the ascent
  /// passes of PGD and SMART). See PassRequest. The default serves only what run() can (task loss,
  /// parameter gradients); engines that support every strategy override it.
  virtual PassResult run_custom(const models::Batch& batch, const PassRequest& request);
  /// Hidden size H of the word-embedding output.
  virtual int64_t embedding_dim() const = 0;
  /// The model's parameters (the master's, in named_parameters() order), live: a strategy that keeps
  /// a parameter snapshot (SMART's teacher) copies them and must not modify them. Opaque tensors to
  /// the strategy. The default throws std::logic_error (an engine without snapshot support).
  virtual std::vector<torch::Tensor> parameters();
  /// A forward pass only (no gradients anywhere) on `batch` at delta = 0 with the model's parameters
  /// temporarily replaced by `params` (same order and shapes as parameters()); the model's own values
  /// are restored bit for bit afterwards. Returns the outputs in batch order. Used by SMART for the
  /// teacher's distribution. The default throws std::logic_error.
  virtual models::ModelOutput forward_with(const models::Batch& batch, const std::vector<torch::Tensor>& params);
  /// A loss that couples the batch's examples (TaskModel::couples_examples), in two halves around
  /// the caller's loss (coupled_pass.h). forward_kept: forward on `batch` at delta 0, recording
  /// gradients, the graph kept until backward_kept; returns the outputs of the whole batch in batch
  /// order (detached; a multi-process engine's gathered from every rank). cache_rows > 0: each
  /// replica forwards its shard in pieces of that many examples without keeping their graphs, and
  /// backward_kept forwards each again (gradient caching, gradient_cache.h). The default throws.
  virtual models::ModelOutput forward_kept(const models::Batch& batch, int64_t cache_rows);
  /// backward_kept: the kept outputs' backward with `logits_grad` (the rows forward_kept returned,
  /// d scaled loss / d logits), ACCUMULATING into the parameters' gradients as run() does; the
  /// graph is then released. The default throws.
  virtual void backward_kept(const torch::Tensor& logits_grad);
  /// Clip, step the optimizer and zero the gradients (used by FreeAT, which steps per replay).
  virtual void optimizer_step() = 0;
  /// The model's parameters were set from outside the engine (a resumed checkpoint): engines with
  /// copies of them (replicas, other processes) bring those in line. Nothing to do on one device.
  virtual void parameters_loaded() {}
};

inline PassResult GradientEngine::run_custom(const models::Batch& batch, const PassRequest& request) {
  if (request.loss_fn || request.pair_loss_fn || !request.param_grads)
    throw std::logic_error(
        "GradientEngine::run_custom: this engine supports only the task loss with parameter "
        "gradients (needed by pgd, smart and rdrop: custom losses, delta-only and twin passes)");
  return run(batch, request.delta, request.scale, request.want_delta_grad);
}

inline models::ModelOutput GradientEngine::forward_kept(const models::Batch&, int64_t) {
  throw std::logic_error("GradientEngine::forward_kept: this engine cannot run a loss over the whole batch");
}

inline void GradientEngine::backward_kept(const torch::Tensor&) {
  throw std::logic_error("GradientEngine::backward_kept: this engine cannot run a loss over the whole batch");
}

inline std::vector<torch::Tensor> GradientEngine::parameters() {
  throw std::logic_error(
      "GradientEngine::parameters: this engine cannot expose parameters (needed by smart's teacher)");
}

inline models::ModelOutput GradientEngine::forward_with(const models::Batch&, const std::vector<torch::Tensor>&) {
  throw std::logic_error(
      "GradientEngine::forward_with: this engine cannot evaluate a parameter snapshot "
      "(needed by smart's teacher)");
}

}  // namespace unif::framework
