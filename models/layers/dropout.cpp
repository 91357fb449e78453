#include "models/layers/dropout.h"

#include <mutex>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

namespace unif::models {
namespace {

// One 64-bit draw from `gen` (Torch's CPU generators are shared: take their lock).
uint64_t draw_seed(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get<at::CPUGeneratorImpl>()->random64();
}

// keep[i] = 1/(1-p) with probability 1-p, else 0, for a float32 CPU tensor shaped like `x`. The
// random number of element i is SplitMix64's output for counter i (Steele et al. 2014, a
// counter-based generator that passes BigCrush): elements are independent of each other and of
// how at::parallel_for splits the range, so masks are the same on any thread count, and the whole
// mask costs one seed from the generator instead of one Bernoulli draw per element (Torch 1.13's
// CPU bernoulli_ without MKL draws them one by one on one thread, the dearest part of a BERT step's
// non-GEMM work in bench_train_step's profile).
torch::Tensor keep_mask(const torch::Tensor& x, double p, uint64_t seed) {
  auto mask = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
  float* out = mask.data_ptr<float>();
  const auto threshold = static_cast<uint64_t>((1.0 - p) * 16777216.0);  // keep when the top 24 bits are below
  const float scale = static_cast<float>(1.0 / (1.0 - p));
  at::parallel_for(0, mask.numel(), 65536, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      uint64_t z = seed + static_cast<uint64_t>(i + 1) * 0x9E3779B97F4A7C15ULL;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      z ^= z >> 31;
      out[i] = (z >> 40) < threshold ? scale : 0.0f;
    }
  });
  return mask;
}

}  // namespace

torch::Tensor DropoutImpl::forward(const torch::Tensor& x) {
  if (!is_training() || p_ == 0.0) return x;
  if (p_ == 1.0) return x * 0.0;
  const bool fast = x.device().is_cpu() && x.scalar_type() == torch::kFloat;
  if (!fast) {  // CUDA and other dtypes: Torch's own kernels
    if (!generator_) return at::dropout(x, p_, /*train=*/true);
    auto keep = at::empty_like(x).bernoulli_(1.0 - p_, *generator_);
    return x * keep * (1.0 / (1.0 - p_));
  }
  const uint64_t seed = draw_seed(generator_ ? *generator_ : at::detail::getDefaultCPUGenerator());
  return x * keep_mask(x, p_, seed);
}

}  // namespace unif::models
