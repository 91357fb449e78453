// LayerNorm over the last dimension, as the families' configs give it (width, epsilon).
#pragma once
#include <cstdint>

#include <torch/nn/modules/normalization.h>

namespace unif::models {

inline torch::nn::LayerNorm layer_norm(int64_t width, double eps) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).eps(eps));
}

}  // namespace unif::models
