// ProcessGroup: this process's place in a multi-process (c10d) job, as `torchrun` describes it in
// the environment (SPEC §6): RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT. Joining does
// the rendezvous through a c10d::TCPStore (rank 0 serves it) and opens a c10d::ProcessGroupGloo
// (CPU tensors). The collectives here are the few the distributed engine needs, each blocking and
// bounded by the group's timeout: a peer that died or stalls makes them throw DistributedError
// instead of hanging.
//
// c10d and Gloo headers stay inside process_group.cpp; this header needs only torch::Tensor.
//
// There is no process-wide default group: `unif train` joins once where the run starts and hands
// the group to the trainer, which hands it on (resolve_devices, make_engine, OptimizerStep). A null
// group means one process.
//
// Example:
//   std::shared_ptr<ProcessGroup> pg;
//   if (auto env = read_dist_env()) pg = ProcessGroup::join(*env);   // null when WORLD_SIZE is unset or 1
//   Trainer trainer(cfg, pg);
//   pg->all_reduce_sum(t);
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/types.h>

namespace unif::framework {

/// A collective or the rendezvous failed: a peer exited, the network broke, or the timeout passed.
struct DistributedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The torchrun variables, validated.
struct DistEnv {
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t local_rank = 0;
  std::string master_addr = "127.0.0.1";
  uint16_t master_port = 29500;
  /// Rendezvous and per-collective timeout: UNIF_DIST_TIMEOUT seconds (default 300).
  std::chrono::milliseconds timeout{300000};
  /// torchrun's static rendezvous (TORCHELASTIC_USE_AGENT_STORE=True): the launcher already serves
  /// the store on MASTER_ADDR:MASTER_PORT, so every rank, rank 0 included, connects as a client.
  bool agent_store = false;
  /// TORCHELASTIC_RESTART_COUNT: keys of a restarted worker group do not collide in the store.
  int64_t restart_count = 0;
  /// How long the other ranks wait for rank 0's saves (ProcessGroup::writer_done):
  /// UNIF_DIST_SAVE_TIMEOUT seconds (default 3600).
  std::chrono::milliseconds save_timeout{3600000};
};

/// The environment's process-group settings; nullopt when WORLD_SIZE is unset or 1 (one process).
/// Throws UserError naming the variable for a value that is not a number, out of range
/// (RANK >= WORLD_SIZE, a port outside 1..65535, ...) or missing when WORLD_SIZE > 1 (RANK).
/// MASTER_ADDR defaults to 127.0.0.1 and MASTER_PORT to 29500, as in torchrun. Launched by hand,
/// rank 0 serves the store; under torchrun, its agent does.
std::optional<DistEnv> read_dist_env();

class ProcessGroup {
 public:
  /// Rendezvous with the other WORLD_SIZE - 1 processes (TCPStore on MASTER_ADDR:MASTER_PORT,
  /// served by rank 0) and connect Gloo. Throws DistributedError when the peers do not all arrive
  /// within env.timeout or the port cannot be used.
  static std::shared_ptr<ProcessGroup> join(const DistEnv& env);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int64_t rank() const { return env_.rank; }
  int64_t size() const { return env_.world_size; }
  const DistEnv& env() const { return env_; }
  /// The c10d backends the collectives run on: "gloo", or "nccl (gloo for CPU tensors)".
  std::string backend() const { return nccl_ ? "nccl (gloo for CPU tensors)" : "gloo"; }
  /// Collective (every rank calls it, with its own GPU): opens a c10d ProcessGroupNCCL on the same
  /// store, bound to `device` (this rank's GPU, LOCAL_RANK's). From then on CUDA tensors go through
  /// NCCL and CPU tensors through Gloo; NCCL waits block the caller with UNIF_DIST_TIMEOUT
  /// (TORCH_NCCL_BLOCKING_WAIT, unless the environment sets it), so a dead peer is an error, not a
  /// hang. UserError on a LibTorch without NCCL.
  void use_nccl(const torch::Device& device);

  /// In place: t = sum over ranks of t (contiguous CPU tensor; a CUDA one after use_nccl).
  void all_reduce_sum(torch::Tensor& t);
  /// In place: t = MAX over ranks of t.
  void all_reduce_max(torch::Tensor& t);
  /// Every rank's `t` (same shape and dtype on every rank), in rank order.
  std::vector<torch::Tensor> all_gather(const torch::Tensor& t);
  /// In place: every tensor takes rank `root`'s values.
  void broadcast(std::vector<torch::Tensor>& tensors, int64_t root = 0);
  void barrier();
  /// True on every rank when `mine` is true on any rank (one all-reduce): decisions the ranks must
  /// take together, such as stopping on a signal that reached only some of them.
  bool any(bool mine);
  /// Rank 0 (the only writer) has finished a write that the others do not take part in (a
  /// checkpoint, best/): every rank calls this at the same point; rank 0 posts a key in the store,
  /// the others wait for it with `save_timeout`, not the collectives' timeout, so a slow save (a
  /// large model, a network filesystem) does not fail their next collective. A rank 0 that dies
  /// while saving ends the wait at once when it serves the store. Each other rank then confirms it
  /// read the key, and rank 0 waits for that (within `timeout`) before it goes on, so that it never
  /// closes the store it serves under a rank still waiting.
  void writer_done();
  /// Every rank must hold the same `values` (e.g. resumed step, total steps, data size): throws
  /// UserError on every rank, listing each rank's values, when they differ. `what` names them.
  void check_same(const std::vector<int64_t>& values, const std::string& what);

 private:
  struct Impl;
  ProcessGroup(DistEnv env, std::unique_ptr<Impl> impl);
  DistEnv env_;
  std::unique_ptr<Impl> impl_;
  int64_t writes_ = 0;  // writer_done() calls so far: the key of each
  bool nccl_ = false;
};

}  // namespace unif::framework
