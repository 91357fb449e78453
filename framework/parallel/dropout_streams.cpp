// DropoutStreams: see dropout_streams.h.
#include "framework/parallel/dropout_streams.h"

#include <mutex>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#ifdef UNIF_WITH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include "models/layers/dropout.h"

namespace unif::framework {

void DropoutStreams::attach(torch::nn::Module& model, size_t replica, const torch::Device& device) {
  at::Generator gen;
  if (device.is_cpu()) {
    gen = at::make_generator<at::CPUGeneratorImpl>(0);
  } else if (device.is_cuda()) {
#ifdef UNIF_WITH_CUDA
    gen = at::cuda::detail::createCUDAGenerator(device.index());
#else
    throw std::invalid_argument("DropoutStreams: a CUDA device in a build without CUDA");
#endif
  } else {
    throw std::invalid_argument("DropoutStreams: only CPU and CUDA devices");
  }
  generators_.emplace_back(replica, gen);
  for (const auto& m : model.modules(/*include_self=*/false))
    if (auto* d = dynamic_cast<models::DropoutImpl*>(m.get())) d->set_generator(gen);
}

std::vector<at::Generator> DropoutStreams::generators(size_t replica) const {
  std::vector<at::Generator> out;
  for (const auto& [r, gen] : generators_)
    if (r == replica) out.push_back(gen);
  return out;
}

void DropoutStreams::reseed(uint64_t family) {
  if (generators_.empty()) return;
  uint64_t base = 0;
  {
    auto global = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(global.mutex());
    base = global.get<at::CPUGeneratorImpl>()->random64();
  }
  for (auto& [replica, gen] : generators_) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_current_seed(base + 0x9E3779B97F4A7C15ULL * (replica + 1) + 0xD1B54A32D192ED03ULL * family);
  }
}

}  // namespace unif::framework
