// make_engine: the gradient engine of a run — one device (LocalEngine), replicas on threads
// (DataParallelEngine), and around either the ranks of a multi-process job (DistributedEngine) —
// from typed devices (resolve_devices, auto_devices.h), never from config strings.
//
// Example:
//   EngineOptions o;
//   o.devices = resolve_devices(parse_devices(cfg.parallel.devices), hidden, batch).devices;
//   auto engine = make_engine(model, [&step] { step.run(); }, o);
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <torch/types.h>

#include "framework/common/precision.h"
#include "framework/engines/gradient_engine.h"
#include "framework/parallel/process_group.h"
#include "models/task_model.h"

namespace unif::framework {

struct EngineOptions {
  /// This process's replicas, one per entry, the master model on the first (resolve_devices:
  /// `auto` chosen, a rank's share taken, every device present).
  std::vector<torch::Device> devices{torch::kCPU};
  /// Intra-op threads per replica (parallel.threads_per_replica); 0 = available cores / replicas.
  int64_t threads_per_replica = 0;
  /// Forward passes run under autocast to this (training.precision); fp16 on a CPU is a UserError.
  Precision precision = Precision::FP32;
  /// The ranks of a multi-process job (WORLD_SIZE > 1), joined where the run started; null in one
  /// process.
  std::shared_ptr<ProcessGroup> group;
};

/// The engine for `options.devices`. Its optimizer_step() runs `optimizer_step` on the master model,
/// then brings replicas up to date. The master moves to the first device when that is a GPU. With a
/// process group (options.group), that engine runs this rank's slices inside a DistributedEngine
/// (collective: every rank calls it).
std::unique_ptr<GradientEngine> make_engine(std::shared_ptr<models::TaskModel> model,
                                            std::function<void()> optimizer_step, const EngineOptions& options);

}  // namespace unif::framework
