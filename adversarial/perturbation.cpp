// perturbation: per-example norms, normalization and projection of δ (B, L, H) with padding masked;
// the seeded noise generator. See perturbation.h.
#include "adversarial/perturbation.h"

#include <ATen/CPUGeneratorImpl.h>

namespace unif::adversarial {

namespace {
constexpr double kMinNorm = 1e-8;  // SPEC §5: normalize divides by max(‖d‖, 1e-8)
}

torch::Tensor padding_mask(const models::Batch& batch) {
  return batch.attention_mask.to(torch::kFloat32).unsqueeze(-1);  // (B, L, 1)
}

torch::Tensor apply_mask(const torch::Tensor& x, const torch::Tensor& mask) { return x * mask.to(x.dtype()); }

torch::Tensor example_norms(const torch::Tensor& x, const torch::Tensor& mask) {
  return apply_mask(x, mask).flatten(1).norm(2, {1});  // (B)
}

torch::Tensor normalize(const torch::Tensor& d, const torch::Tensor& mask) {
  const auto masked = apply_mask(d, mask);
  const auto norms = masked.flatten(1).norm(2, {1}).clamp_min(kMinNorm);  // (B)
  return masked / norms.view({-1, 1, 1});
}

torch::Tensor project(const torch::Tensor& x, double epsilon, const torch::Tensor& mask) {
  const auto masked = apply_mask(x, mask);
  const auto norms = masked.flatten(1).norm(2, {1});  // (B)
  // min(1, ε/‖x‖): examples inside the ball (and ‖x‖ = 0) keep their δ untouched.
  const auto factor = torch::where(norms > epsilon, epsilon / norms.clamp_min(kMinNorm), torch::ones_like(norms));
  return masked * factor.view({-1, 1, 1});
}

int64_t count_outside(const torch::Tensor& x, double epsilon, const torch::Tensor& mask) {
  return (example_norms(x, mask) > epsilon).sum().item<int64_t>();
}

at::Generator noise_generator(int64_t seed, int64_t step, int64_t micro) {
  const auto s = static_cast<uint64_t>(seed) * 1000003ULL + static_cast<uint64_t>(step) +
                 static_cast<uint64_t>(micro) * 0x9E3779B97F4A7C15ULL;
  return at::detail::createCPUGenerator(s);
}

}  // namespace unif::adversarial
