// DataParallelEngine: the GradientEngine of N replicas of one TaskModel inside one process, one
// persistent worker thread per replica (SPEC §5-§6). A pass cuts the global batch into contiguous
// shards (the first B mod N one example larger; replicas with an empty shard sit out), runs forward
// + backward of scale * sum_b l_b on every shard at once, and reduces onto the master model: dense
// gradients summed, sparse word-embedding gradients concatenated (every replica's rows) and
// coalesced, delta gradients and outputs concatenated in batch order. Gradients accumulate on the
// master across passes; optimizer_step() steps the master and copies its parameters back into the
// replicas in place. Replica 0 is the master itself when it sits on the master's device. Dropout
// (models::Dropout) on every replica, CPU or GPU, draws from per-replica generators seeded every
// pass from the global CPU generator (dropout_streams.h), so multi-replica runs with dropout repeat
// and resume exactly.
//
// It is not a process group: ranks across processes (c10d, torchrun) are DistributedEngine
// (distributed_engine.h), which wraps this engine or the one-device one.
//
// Example:
//   DataParallelOptions o;
//   o.devices = {torch::kCPU, torch::kCPU, torch::kCPU};
//   DataParallelEngine engine(model, [&] { optimizer.step(); optimizer.zero_grad(); }, o);
//   auto r = engine.run(batch, /*delta=*/{}, 1.0 / z, /*want_delta_grad=*/false);
//   engine.optimizer_step();   // master stepped, replicas refreshed
#pragma once
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include "framework/engines/gradient_cache.h"
#include "framework/engines/gradient_engine.h"
#include "framework/common/precision.h"
#include "framework/common/runtime.h"
#include "framework/parallel/device_transfer.h"
#include "framework/parallel/dropout_streams.h"
#include "framework/parallel/worker_pool.h"
#include "models/task_model.h"

namespace unif::framework {

/// A contiguous slice [begin, begin + size) of the global batch.
struct Shard {
  int64_t begin = 0;
  int64_t size = 0;
};

/// SPEC §5 sharding: `replicas` contiguous shards of `batch` examples, sizes as even as possible,
/// the first batch % replicas shards one larger (trailing shards are empty when batch < replicas).
std::vector<Shard> shard_batch(int64_t batch, int64_t replicas);

/// The rows [begin, begin + size) of every defined tensor of `batch`.
models::Batch slice_batch(const models::Batch& batch, const Shard& shard);

/// Sum of sparse COO gradients of one (V, H) table: every input's indices and values concatenated,
/// then coalesced (duplicate rows summed). Undefined inputs are skipped; undefined when all are.
torch::Tensor combine_sparse(const std::vector<torch::Tensor>& grads);

struct DataParallelOptions {
  std::vector<torch::Device> devices{torch::kCPU, torch::kCPU};  // one per replica
  /// Intra-op (OpenMP) threads of each replica's worker; 0 = available cores / replicas (>= 1).
  int64_t threads_per_replica = 0;
  /// Which family of dropout streams the replicas draw from: replica i of stream family f is
  /// seeded from (global generator draw, f, i). A multi-process job passes the rank, so that the
  /// ranks (which share the seed and hence the global generator) draw different masks.
  uint64_t dropout_family = 0;
  /// Each replica's forward passes run under autocast to this precision on its device.
  Precision precision = Precision::FP32;
};

/// Wall-clock split of the last run(): the replicas' forward/backward (slowest replica) and the
/// reduction onto the master (gradients, delta gradients, outputs).
struct PassTiming {
  double compute_s = 0.0;
  double reduce_s = 0.0;
};

class DataParallelEngine final : public GradientEngine {
 public:
  /// `optimizer_step` clips, steps and zeroes the master's gradients (owned by the trainer).
  DataParallelEngine(std::shared_ptr<models::TaskModel> master, std::function<void()> optimizer_step,
                     DataParallelOptions options);
  ~DataParallelEngine() override;
  DataParallelEngine(const DataParallelEngine&) = delete;
  DataParallelEngine& operator=(const DataParallelEngine&) = delete;

  /// Forward at E + delta and backward of scale * sum_b l_b on every shard; the reduced gradient is
  /// ADDED to the master's. An exception in a replica is re-thrown here as the same class
  /// (UserError and StrategyError keep their class, anything else becomes std::runtime_error) naming the replica; the
  /// other replicas' gradients of that pass are dropped (they never reach a later reduction), but the master's may hold
  /// part of the pass: zero them (or stop) rather than step on them.
  PassResult run(const models::Batch& batch, const torch::Tensor& delta, double scale, bool want_delta_grad) override;
  /// The general pass (gradient_engine.h PassRequest) on every shard: request.loss_fn is called
  /// on each replica's output with `first` = the shard's offset, concurrently from the worker
  /// threads (it must only read shared state); its values are summed into custom_loss. Parameter
  /// gradients are reduced onto the master only when request.param_grads.
  PassResult run_custom(const models::Batch& batch, const PassRequest& request) override;
  int64_t embedding_dim() const override;
  /// The master's parameters.
  std::vector<torch::Tensor> parameters() override { return master_params_; }
  /// A forward-only pass over the replicas (sharded as run_custom) with `params` copied into the
  /// master and every replica; afterwards the master's values are restored and copied back out,
  /// also when the pass throws.
  models::ModelOutput forward_with(const models::Batch& batch, const std::vector<torch::Tensor>& params) override;
  /// Every replica's forward on its shard, graphs kept (or, with cache_rows, its pieces for a
  /// gradient cache); the logits gathered in batch order.
  models::ModelOutput forward_kept(const models::Batch& batch, int64_t cache_rows) override;
  /// Every replica's backward of its shard's rows of `logits_grad`, then the gradients reduced onto
  /// the master as after run().
  void backward_kept(const torch::Tensor& logits_grad) override;
  /// The given optimizer_step on the master, then every replica's parameters and buffers copied
  /// from the master in place and the replicas' gradients reset (undefined).
  void optimizer_step() override;
  /// The master's parameters and buffers copied into every replica (after a resume).
  void parameters_loaded() override { sync_replicas(); }

  int64_t replicas() const { return static_cast<int64_t>(replicas_.size()); }
  /// Intra-op threads each worker runs with.
  int64_t threads_per_replica() const { return threads_; }
  /// Replica i's model (replica 0 is the master when it shares its device).
  std::shared_ptr<models::TaskModel> replica(int64_t i) const { return replicas_.at(static_cast<size_t>(i)); }
  PassTiming last_timing() const { return timing_; }

 private:
  /// Runs job(i) on worker i for every i with active[i]; waits for all; re-throws the first
  /// failure (lowest replica index) with the replica named.
  void on_workers(const std::function<void(int64_t)>& job, const std::vector<bool>& active);
  /// Adds every replica's gradients (except the master's own) into the master's; resets them.
  void reduce_gradients(const std::vector<bool>& active);
  /// The same with GPU replicas, on the calling thread: dense gradients by NCCL reduce when
  /// nccl_serves(devices), else copied and added; sparse ones concatenated and coalesced on the
  /// master's device.
  void reduce_gradients_cuda(const std::vector<bool>& active);
  void sync_replicas();
  /// Resets the gradients of every replica but the master (after a pass that threw).
  void drop_replica_gradients();

  std::shared_ptr<models::TaskModel> master_;
  std::function<void()> optimizer_step_;
  std::vector<torch::Device> devices_;
  std::vector<std::shared_ptr<models::TaskModel>> replicas_;
  bool master_is_replica0_ = false;
  int64_t threads_ = 1;
  // Parameters / buffers in named_parameters() order: params_[r][j] is replica r's tensor j.
  std::vector<torch::Tensor> master_params_, master_buffers_;
  std::vector<std::vector<torch::Tensor>> params_, buffers_;
  DropoutStreams dropout_streams_;  // every replica's dropout generator
  bool cuda_ = false;               // some replica is on a GPU: reductions and copies run on the calling thread
  bool nccl_ = false;               // every replica on its own GPU, the master replica 0: NCCL reduce and broadcast
  std::unique_ptr<ReplicaStreams> streams_;  // one CUDA stream per GPU replica, created once
  uint64_t dropout_family_ = 0;
  Precision precision_ = Precision::FP32;
  std::vector<std::vector<size_t>> reduce_plan_;  // parameter indices each worker reduces / copies

  std::unique_ptr<WorkerPool> workers_;  // worker i runs replica i's part of a job

  PassTiming timing_;
  // forward_kept's pass until backward_kept: each replica's logits with their graph, its shard.
  std::vector<torch::Tensor> kept_;
  std::vector<GradientCache> caches_;                 // with cache_rows: each replica's pieces instead of its graph
  GradientCache::Forward replica_forward(int64_t i);  // replica i's forward (autocast on its device)
  std::vector<Shard> kept_shards_;
  std::vector<bool> kept_active_;
  std::optional<ScopedBlasThreads> blas_threads_;  // 1 with several CPU replicas, until destruction
};

}  // namespace unif::framework
