// DistributedEngine: the GradientEngine of one rank of a multi-process job (SPEC §5-§6). Every rank
// holds the whole global batch (same data, same order); a pass runs the wrapped local engine (one
// device, or DataParallelEngine replicas, which may shard further) on this rank's contiguous slice
// shard_batch(B, world_size)[rank], with `first` of a custom loss shifted to the slice's global
// offset, and then makes the result global again. A rank whose slice is empty (a batch smaller than
// the number of ranks) still runs the local engine on it: nothing is computed, but the engine takes
// the same per-pass generator draws (dropout seeds) as on every other rank, so the ranks' generators
// stay equal and a checkpoint's (rank 0's) state resumes every rank exactly.
//   - loss_sum, custom_loss, loss_count: summed over ranks;
//   - delta_grad (B, L, H), logits, example_losses: all-gathered back into global batch order, so
//     strategies see the global batch and work unchanged.
// Parameter gradients accumulate locally over the passes of a step and are combined once, in
// optimizer_step(), before the local optimizer step: dense gradients all-reduced (SUM) in flat
// buckets, sparse (embedding) gradients all-gathered (every rank's indices and values, padded to the
// largest row count) and coalesced, never one rank's rows. A gradient undefined on every rank stays
// undefined (so the optimizer skips it exactly as on one process). Every rank then steps the same
// optimizer on the same gradients and keeps the same parameters.
//
// Parameters and buffers are broadcast from rank 0 at construction and on parameters_loaded()
// (after a resume), then the local engine refreshes its replicas.
//
// Example:
//   auto local = std::make_unique<LocalEngine>(model, step_fn);
//   DistributedEngine engine(group, model, std::move(local));   // group: ProcessGroup::join(...)
//   strategy.accumulate(engine, global_batch, 1.0 / z_global, seed, step);
//   engine.optimizer_step();
#pragma once
#include <cstdint>
#include <memory>

#include <torch/types.h>

#include "framework/engines/data_parallel.h"
#include "framework/engines/gradient_engine.h"
#include "framework/parallel/process_group.h"
#include "models/task_model.h"

namespace unif::framework {

struct DistributedOptions {
  /// Dense gradients are all-reduced in flat buckets of about this many bytes.
  int64_t bucket_bytes = 25 * 1024 * 1024;
  /// Benchmarks: a barrier before each pass's and step's collectives, timed apart (CommTiming::
  /// wait_s), so that waiting for a slower rank is not counted as communication. Off in training.
  bool separate_waits = false;
};

/// Time spent in collectives since construction (or the last reset): gradients at the optimizer
/// step, and the per-pass gathering of outputs. Both include waiting for the slowest rank unless
/// DistributedOptions::separate_waits, which moves that into wait_s.
struct CommTiming {
  double gradient_s = 0.0;
  double output_s = 0.0;
  double wait_s = 0.0;
  int64_t steps = 0;
};

class DistributedEngine final : public GradientEngine {
 public:
  /// `model` is the model `local` trains (its master); `local` runs this rank's slices.
  DistributedEngine(std::shared_ptr<ProcessGroup> group, std::shared_ptr<models::TaskModel> model,
                    std::unique_ptr<GradientEngine> local, DistributedOptions options = {});

  PassResult run(const models::Batch& batch, const torch::Tensor& delta, double scale, bool want_delta_grad) override;
  PassResult run_custom(const models::Batch& batch, const PassRequest& request) override;
  int64_t embedding_dim() const override { return local_->embedding_dim(); }
  /// The local engine's (master's) parameters: the same values on every rank.
  std::vector<torch::Tensor> parameters() override;
  /// The local engine's forward_with on this rank's slice (an empty one too), outputs gathered
  /// back into global batch order as run_custom does (SMART's teacher).
  models::ModelOutput forward_with(const models::Batch& batch, const std::vector<torch::Tensor>& params) override;
  /// The local engine's forward_kept on this rank's slice, the logits all-gathered into global batch
  /// order (every rank then holds every rank's rows: a loss over the whole batch).
  models::ModelOutput forward_kept(const models::Batch& batch, int64_t cache_rows) override;
  /// This rank's rows of `logits_grad` through the local engine's backward_kept; the ranks'
  /// gradients are combined at optimizer_step() as after run().
  void backward_kept(const torch::Tensor& logits_grad) override;
  /// Combines the ranks' accumulated gradients, then the local engine's optimizer step.
  void optimizer_step() override;
  /// Rank 0's parameters and buffers to every rank, then the local engine's parameters_loaded().
  void parameters_loaded() override;

  const ProcessGroup& group() const { return *group_; }
  GradientEngine& local() { return *local_; }
  CommTiming timing() const { return timing_; }
  void reset_timing() { timing_ = {}; }

 private:
  void reduce_gradients();

  std::shared_ptr<ProcessGroup> group_;
  std::shared_ptr<models::TaskModel> model_;
  std::unique_ptr<GradientEngine> local_;
  DistributedOptions options_;
  std::vector<torch::Tensor> params_;  // model_->parameters() order, identical on every rank
  Shard kept_slice_;                   // this rank's rows of the batch forward_kept gathered
  CommTiming timing_;
};

}  // namespace unif::framework
