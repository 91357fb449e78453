// Device transfers, replica streams and NCCL among in-process replicas: see device_transfer.h. The
// CUDA parts compile only with UNIF_WITH_CUDA (the pypi toolchain), NCCL's with UNIF_WITH_NCCL.
#include "framework/parallel/device_transfer.h"

#include <optional>
#include <stdexcept>

#ifdef UNIF_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/csrc/cuda/comm.h>
#include <torch/cuda.h>
#endif
#ifdef UNIF_WITH_NCCL
#include <torch/csrc/cuda/nccl.h>
#endif

namespace unif::framework {

torch::Tensor to_device(const torch::Tensor& t, const torch::Device& device) {
  if (!t.defined() || t.device() == device) return t;
#ifdef UNIF_WITH_CUDA
  if (device.is_cuda() && t.device().is_cpu())
    return t.pin_memory().to(device, /*non_blocking=*/true);  // the host allocator keeps the page alive
#endif
  return t.to(device);
}

models::Batch to_device(const models::Batch& b, const torch::Device& device) {
  models::Batch out;
  out.input_ids = to_device(b.input_ids, device);
  out.token_type_ids = to_device(b.token_type_ids, device);
  out.attention_mask = to_device(b.attention_mask, device);
  out.labels = to_device(b.labels, device);
  out.sample_weights = to_device(b.sample_weights, device);
  out.uniforms = to_device(b.uniforms, device);
  out.token_ratio = b.token_ratio;
  return out;
}

void synchronize_device(const torch::Device& device) {
#ifdef UNIF_WITH_CUDA
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
#else
  (void)device;
#endif
}

struct ReplicaStreams::Impl {
#ifdef UNIF_WITH_CUDA
  std::vector<std::optional<c10::cuda::CUDAStream>> streams;
#endif
};

ReplicaStreams::ReplicaStreams(const std::vector<torch::Device>& devices) : impl_(std::make_unique<Impl>()) {
#ifdef UNIF_WITH_CUDA
  for (const auto& d : devices) {
    if (d.is_cuda())
      impl_->streams.emplace_back(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, d.index()));
    else
      impl_->streams.emplace_back(std::nullopt);
  }
#else
  (void)devices;
#endif
}

ReplicaStreams::~ReplicaStreams() = default;

void ReplicaStreams::run_on(size_t i, const std::function<void()>& f) const {
#ifdef UNIF_WITH_CUDA
  if (i < impl_->streams.size() && impl_->streams[i]) {
    const auto& stream = *impl_->streams[i];
    {
      c10::cuda::CUDAStreamGuard guard(stream);  // this thread's current device and stream
      f();
    }
    stream.synchronize();
    return;
  }
#endif
  (void)i;
  f();
}

bool nccl_serves(const std::vector<torch::Device>& devices) {
#ifdef UNIF_WITH_NCCL
  if (devices.size() < 2) return false;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i].is_cuda()) return false;
    for (size_t j = 0; j < i; ++j)
      if (devices[j] == devices[i]) return false;
  }
  return true;
#else
  (void)devices;
  return false;
#endif
}

std::vector<torch::Tensor> nccl_reduce_sum(const std::vector<std::vector<torch::Tensor>>& grads,
                                           const std::vector<torch::Device>& devices) {
#ifdef UNIF_WITH_NCCL
  if (!nccl_serves(devices) || grads.size() != devices.size())
    throw std::logic_error("nccl_reduce_sum: one gradient list per distinct GPU is needed");
  const auto& first = grads[0];
  // Shapes and dtype from the first replica that has each gradient.
  std::vector<torch::Tensor> like(first.size());
  for (size_t j = 0; j < first.size(); ++j)
    for (const auto& g : grads)
      if (j < g.size() && g[j].defined()) {
        like[j] = g[j];
        break;
      }
  std::vector<torch::Tensor> flats;
  for (size_t r = 0; r < grads.size(); ++r) {
    c10::cuda::CUDAGuard guard(devices[r].index());
    std::vector<torch::Tensor> parts;
    for (size_t j = 0; j < like.size(); ++j) {
      if (!like[j].defined()) continue;
      const auto& g = grads[r].at(j);
      parts.push_back(g.defined() ? g.reshape({-1})
                                  : torch::zeros({like[j].numel()}, like[j].options().device(devices[r])));
    }
    flats.push_back(parts.empty() ? torch::Tensor() : torch::cat(parts));
  }
  std::vector<torch::Tensor> out(like.size());
  if (!flats[0].defined()) return out;
  torch::Tensor sum = flats[0];
  torch::cuda::nccl::reduce(flats, sum, /*root=*/0);  // in place on devices[0]
  int64_t offset = 0;
  for (size_t j = 0; j < like.size(); ++j) {
    if (!like[j].defined()) continue;
    out[j] = sum.narrow(0, offset, like[j].numel()).view(like[j].sizes());
    offset += like[j].numel();
  }
  return out;
#else
  (void)grads;
  (void)devices;
  throw std::logic_error("nccl_reduce_sum: this LibTorch has no NCCL");
#endif
}

void broadcast_into(const std::vector<torch::Tensor>& master, std::vector<std::vector<torch::Tensor>*> replicas,
                    const std::vector<torch::Device>& devices) {
#ifdef UNIF_WITH_CUDA
  if (!nccl_serves(devices) || replicas.size() + 1 != devices.size())
    throw std::logic_error("broadcast_into: one parameter list per distinct GPU is needed");
  torch::NoGradGuard no_grad;
  std::vector<int64_t> indices;
  for (const auto& d : devices) indices.push_back(d.index());
  std::vector<torch::Tensor> sources;
  for (const auto& t : master) sources.push_back(t.detach());
  const auto copies = torch::cuda::broadcast_coalesced(sources, indices, /*buffer_size=*/size_t{32} << 20);
  for (size_t r = 1; r < devices.size(); ++r) {
    c10::cuda::CUDAGuard guard(devices[r].index());
    auto& dst = *replicas[r - 1];
    for (size_t j = 0; j < dst.size(); ++j) dst[j].copy_(copies[r][j]);
  }
#else
  (void)master;
  (void)replicas;
  (void)devices;
  throw std::logic_error("broadcast_into: this LibTorch has no CUDA");
#endif
}

}  // namespace unif::framework
