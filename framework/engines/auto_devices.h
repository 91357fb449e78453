// `parallel.devices: auto` (the default, SPEC §7): which devices a run trains on when the user does
// not say. GPUs when any is visible; on CPU the set-up that measured fastest for the model's size on
// the 2-core development machine (docs/performance.md, "Choosing the devices: auto"):
//   - hidden <= kAutoReplicaMaxHidden: one replica per physical core (capped by the batch), each
//     with single-threaded BLAS (the data-parallel engine sets it). Small and medium GEMMs do not
//     scale across cores inside one product; several replicas multiplying at once do.
//     Measured up to BERT-base (hidden 768: 2 replicas 1.24x one, same peak memory, as CPU replicas
//     read the master's parameters).
//   - larger hidden sizes (not measured): one replica on every core (OpenBLAS's own pool).
// choose_devices is the rule as a pure function (unit-tested); resolve_devices reads the machine and
// makes a parsed DeviceSet (devices.h) concrete for a training run, eval_device and
// cpu_eval_workers for `unif eval` and `unif predict`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

#include "framework/engines/devices.h"
#include "framework/parallel/process_group.h"

namespace unif::framework {

/// Largest hidden size for which `auto` runs one CPU replica per physical core (measured; see above).
constexpr int64_t kAutoReplicaMaxHidden = 768;

/// What the rule looks at.
struct AutoDevicesInput {
  int64_t gpus = 0;             ///< visible CUDA devices
  int64_t physical_cores = 1;   ///< physical cores this process may run on (SMT siblings count once)
  int64_t hidden_size = 768;    ///< the model's hidden size (its word-embedding width)
  int64_t batch_size = 1;       ///< training.batch_size (a replica never gets an empty shard)
  int64_t local_processes = 1;  ///< processes of this job on this machine (LOCAL_WORLD_SIZE)
  int64_t local_rank = 0;       ///< this process among them (LOCAL_RANK)
};

/// What it chose.
struct AutoDevices {
  std::vector<torch::Device> devices;  ///< the CPU x N, or cuda:i
  std::string reason;                  ///< why, for the log line
};

/// The rule (pure). GPUs > 0: every GPU, or in a job of several processes per machine the GPU of
/// this local rank (cuda:(local_rank mod gpus)). Else cores = max(1, physical_cores /
/// local_processes) per process; hidden_size <= kAutoReplicaMaxHidden: min(cores, batch_size)
/// CPU replicas (at least 1); otherwise one CPU replica.
AutoDevices choose_devices(const AutoDevicesInput& in);

/// Threads for evaluating or predicting with a model on the CPU (evaluate()'s cpu_workers):
/// the CPU replicas of `devices` when it is an explicit list (at least 1), else the `auto` rule's
/// CPU replicas for this machine and `hidden_size` (one per physical core up to
/// kAutoReplicaMaxHidden, else 1).
int64_t cpu_eval_workers(const DeviceSet& devices, int64_t hidden_size);

/// The device `unif eval` runs the model on: an explicit list's first entry (check_present: it must
/// be on this machine); `auto`: the first GPU when one is visible, else the CPU.
torch::Device eval_device(const DeviceSet& devices);

/// Physical cores among the CPUs this process may run on (sched affinity, grouped by
/// /sys/devices/system/cpu/cpuN/topology package and core ids); the affinity count when the
/// topology cannot be read.
int64_t physical_cores();

/// The devices of one rank of a multi-process job for an explicit parallel.devices list
/// (torchrun's convention: LOCAL_RANK picks the GPUs). CPU entries stay. When every rank sees the
/// machine's GPUs (visible >= local_world x n for n cuda entries), rank r's cuda entries are
/// shifted by r x n, so that `[cuda:0]` under `torchrun --nproc_per_node=G` gives rank r GPU r.
/// When each rank sees only its own share (visible < local_world x n, e.g. one GPU per rank through
/// CUDA_VISIBLE_DEVICES), the entries stay as given. UserError when an entry is past the visible GPUs.
/// (`auto` needs none of this: choose_devices already picks the local rank's GPU.)
std::vector<torch::Device> rank_devices(std::vector<torch::Device> devices, int64_t local_rank, int64_t local_world,
                                        int64_t visible_gpus);

/// The devices this process trains on, one replica each, the master on the first: `auto` replaced
/// by the rule's choice for this machine and model (GPUs from torch::cuda, physical_cores(), and
/// with a process `group` (null: one process) its size, LOCAL_WORLD_SIZE and LOCAL_RANK), with the log line saying what
/// was chosen and why ("" when the devices were given explicitly). In a multi-process job an explicit list becomes this
/// rank's (rank_devices): the one place where devices are mapped to ranks. Explicit devices must be on this machine
/// (check_present).
struct ResolvedDevices {
  std::vector<torch::Device> devices;
  std::string note;
};
ResolvedDevices resolve_devices(const DeviceSet& set, const ProcessGroup* group, int64_t hidden_size,
                                int64_t batch_size);

}  // namespace unif::framework
