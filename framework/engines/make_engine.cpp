#include "framework/engines/make_engine.h"

#include <ATen/Parallel.h>

#include "framework/common/error.h"
#include "framework/engines/data_parallel.h"
#include "framework/engines/distributed_engine.h"
#include "framework/engines/local_engine.h"

namespace unif::framework {

std::unique_ptr<GradientEngine> make_engine(std::shared_ptr<models::TaskModel> model,
                                            std::function<void()> optimizer_step, const EngineOptions& options) {
  // One replica on the model's own device: the plain engine. Anything else: replicas on threads.
  auto devices = options.devices;
  if (devices.empty()) throw UserError("parallel.devices: expected at least one device, e.g. [cpu]");
  const Precision precision = options.precision;
  if (precision == Precision::FP16)
    for (const auto& d : devices)
      if (d.is_cpu())
        throw UserError(
            "training.precision: fp16 needs CUDA devices (LibTorch's CPU autocast has no float16), but "
            "parallel.devices gives cpu here (no GPU visible?); use bf16 or fp32 on CPUs");
  auto group = options.group;
  // A rank's own devices were chosen by resolve_devices (auto_devices.h: auto and rank_devices).
  torch::Device model_device = torch::kCPU;
  for (const auto& p : model->parameters()) {
    model_device = p.device();
    break;
  }
  // The master lives on the first device when that is a GPU (in place: the optimizer's references to
  // the parameters stay valid); replicas on other devices are copies of it.
  if (devices[0].is_cuda() && model_device != devices[0]) {
    model->to(devices[0]);
    model_device = devices[0];
  }
  // A rank whose devices are GPUs exchanges gradients over NCCL (Gloo stays for CPU tensors).
  if (group && devices[0].is_cuda()) group->use_nccl(devices[0]);
  std::unique_ptr<GradientEngine> local;
  if (!group && devices.size() == 1 && devices[0] == model_device) {
    local = std::make_unique<LocalEngine>(model, std::move(optimizer_step), precision);
  } else {
    // Replicas on threads. In a multi-process job even one replica goes through DataParallelEngine:
    // its dropout streams are keyed by the rank, so ranks (same seed) draw different masks.
    DataParallelOptions dp;
    const bool single = devices.size() == 1 && devices[0] == model_device;
    dp.devices = std::move(devices);
    dp.threads_per_replica =
        single && options.threads_per_replica == 0 ? at::get_num_threads() : options.threads_per_replica;
    if (group) dp.dropout_family = static_cast<uint64_t>(group->rank());
    dp.precision = precision;
    local = std::make_unique<DataParallelEngine>(model, std::move(optimizer_step), std::move(dp));
  }
  if (group) return std::make_unique<DistributedEngine>(std::move(group), std::move(model), std::move(local));
  return local;
}

}  // namespace unif::framework
