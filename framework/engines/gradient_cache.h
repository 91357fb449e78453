// GradientCache: the two halves of a loss over the whole batch (coupled_pass.h) with memory bounded
// by a piece of the batch rather than the batch: gradient caching (GradCache, Gao et al. 2021, as
// sentence-transformers' CachedMultipleNegativesRankingLoss does it).
//
//   forward():  the shard in pieces of `rows` examples, each forwarded WITHOUT recording gradients
//               (no activations kept), the dropout generators' states noted before each piece;
//   (the caller's loss on every piece's outputs gives d loss / d outputs: the cache)
//   backward(): each piece forwarded again from its noted generator states (the same dropout masks,
//               so the same outputs), recording gradients, and backpropagated with its rows of the
//               cache at once; only one piece's activations are alive at a time.
//
// The parameters' gradients are those of the pass that keeps the whole shard's graph, up to float
// summation order (pieces accumulate into .grad one after another); the generators end where the
// first forward left them, so the steps after draw what they would have drawn.
//
// Example (an engine's forward_kept / backward_kept):
//   models::ModelOutput out = cache_.forward(shard, rows, {generator}, forward);
//   ...                                        // the loss on `out.logits` (gathered), its gradient
//   cache_.backward(grad_rows, forward);       // grad_rows: d scaled loss / d out.logits
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include "models/task_model.h"

namespace unif::framework {

class GradientCache {
 public:
  /// The model's forward on one piece (the engine's: its autocast and device).
  using Forward = std::function<models::ModelOutput(const models::Batch&)>;

  /// `batch` (on the model's device) in pieces of `rows` examples (rows >= 1), each forwarded with
  /// gradients off; `generators` are the dropout generators the forward draws from (their states
  /// are noted before each piece). Returns the pieces' logits concatenated (detached) and their
  /// loss_count summed; the pieces are remembered for backward().
  models::ModelOutput forward(const models::Batch& batch, int64_t rows, std::vector<at::Generator> generators,
                              const Forward& forward);
  /// Each remembered piece forwarded again with gradients, from its generator states, and its
  /// backward with its rows of `logits_grad` (d scaled loss / d the logits forward() returned),
  /// accumulating into the parameters' gradients. std::logic_error when a piece's outputs differ
  /// from the first forward's (its dropout masks were not replayed). Forgets the pieces.
  void backward(const torch::Tensor& logits_grad, const Forward& forward);
  /// Whether forward() remembers pieces that backward() has not run yet.
  bool active() const { return !pieces_.empty(); }
  void clear();

 private:
  struct Piece {
    int64_t begin = 0, size = 0;
    std::vector<torch::Tensor> states;  // each generator's state before the piece's forward
    torch::Tensor logits;               // the first forward's outputs (detached)
  };
  models::Batch batch_;
  std::vector<at::Generator> generators_;
  std::vector<Piece> pieces_;
  std::vector<torch::Tensor> after_;  // the generators' states after the last piece's first forward
};

}  // namespace unif::framework
