// A Linear layer's forward through ATen's at::linear rather than the C++ frontend's
// torch::nn::functional::linear. For a 3-D contiguous input (batch, length, features) at::linear
// folds it to 2-D and adds the bias inside the GEMM (one addmm), as HF's F.linear does; the C++
// frontend (LibTorch 1.13) runs matmul and then a separate bias add, and its weight gradients come
// out transposed (copied again when accumulated). Same parameters, same module names. Every Linear
// forward of the encoder, pooler and heads goes through here (the MLM's tied decoder calls
// at::linear on the word embeddings itself), and so does int8 inference (models/quantize.h).
#pragma once
#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>

#include "models/quantize.h"

namespace unif::models {

inline torch::Tensor linear(const torch::nn::Linear& layer, const torch::Tensor& x) {
  // A layer packed for int8 inference (models/quantize.h) computes there.
  if (detail::g_int8_layers.load(std::memory_order_relaxed) > 0)
    if (auto y = detail::int8_linear(layer.get(), x)) return *std::move(y);
  return at::linear(x, layer->weight, layer->bias);
}

}  // namespace unif::models
