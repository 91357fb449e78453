// Moving work between devices for the data-parallel engine and the trainer: batches to a GPU through
// pinned memory without blocking, one CUDA stream per replica, and the in-process collectives of
// CUDA replicas (NCCL reduce of dense gradients onto the master, coalesced broadcast of the
// parameters back). Everything degrades to plain copies on CPU devices, and compiles to them on a
// LibTorch without CUDA (UNIF_WITH_CUDA unset); NCCL is used only where LibTorch has it
// (UNIF_WITH_NCCL) and the replicas sit on distinct GPUs.
//
// Example:
//   auto batch = to_device(collate(...), torch::Device("cuda:0"));   // pinned, non-blocking
//   ReplicaStreams streams(devices);
//   streams.run_on(i, [&] { forward_and_backward(i); });           // on replica i's stream, then waited for
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "models/io.h"

namespace unif::framework {

/// `t` on `device`: a CPU tensor going to a GPU is staged in pinned (page-locked) memory and copied
/// without blocking on the current stream; anything else is a plain `to`. Undefined stays undefined.
torch::Tensor to_device(const torch::Tensor& t, const torch::Device& device);
/// Every defined tensor of `batch` on `device` (as above).
models::Batch to_device(const models::Batch& batch, const torch::Device& device);

/// Waits until every queued operation on a CUDA device has finished; nothing for a CPU device.
void synchronize_device(const torch::Device& device);

/// One CUDA stream per CUDA replica (from LibTorch's pool), created once.
class ReplicaStreams {
 public:
  explicit ReplicaStreams(const std::vector<torch::Device>& devices);
  ~ReplicaStreams();
  /// Runs `f` on this thread with replica i's device and stream current, then waits for that stream,
  /// so that what `f` queued is complete for every other thread and stream. For a CPU replica: f().
  void run_on(size_t i, const std::function<void()>& f) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Whether the in-process NCCL collectives below serve `devices`: LibTorch has NCCL, there are at
/// least two, all are GPUs and no GPU is listed twice.
bool nccl_serves(const std::vector<torch::Device>& devices);

/// grads[r] is replica r's list of dense gradients (the same shapes and dtype in the same order on
/// every replica; replica r's on devices[r]; undefined = zero). Returns the sums on devices[0], one
/// tensor per position, reduced with one NCCL reduce over a flat buffer per replica. Needs
/// nccl_serves(devices).
std::vector<torch::Tensor> nccl_reduce_sum(const std::vector<std::vector<torch::Tensor>>& grads,
                                           const std::vector<torch::Device>& devices);

/// Copies `master` (on devices[0]) into replicas[r - 1] (on devices[r], same shapes) for r >= 1,
/// in place, with LibTorch's coalesced broadcast (NCCL where it has it). Needs nccl_serves(devices).
void broadcast_into(const std::vector<torch::Tensor>& master, std::vector<std::vector<torch::Tensor>*> replicas,
                    const std::vector<torch::Device>& devices);

}  // namespace unif::framework
