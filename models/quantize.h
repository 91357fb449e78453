// Dynamic int8 inference on the CPU: every torch::nn::Linear of a model computes with int8 weights
// (quantized per output channel, symmetric) and activations quantized on the fly per batch, through
// LibTorch's quantized engines (`quantized::linear_prepack` / `apply_dynamic`: fbgemm / x86 where the
// build has them, else oneDNN, else QNNPACK), as PyTorch's torch.ao.quantization.quantize_dynamic
// does for nn.Linear. Embeddings, LayerNorms, attention products and the tied MLM decoder stay fp32.
// The model's float weights stay as they are (an inference copy is packed beside them): a quantized
// model is for inference only, not for training or saving.
//
//   auto model = ...;                                    // on the CPU, eval mode
//   const auto q = models::quantize_dynamic_int8(*model);  // q.layers, q.engine
//   model->forward(...);                                 // every Linear now runs in int8
//
// models/layers/linear.h's linear() (every Linear forward of the encoders and heads) asks
// int8_linear() for a packed weight first; a model that was never quantized pays one relaxed atomic
// load per Linear.
#pragma once
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

namespace unif::models {

struct QuantizeReport {
  int64_t layers = 0;       // Linear modules now int8
  int64_t float_bytes = 0;  // their fp32 weights
  int64_t int8_bytes = 0;   // the int8 weights (+ one fp32 scale per output channel)
  std::string engine;       // "fbgemm", "x86", "onednn" or "qnnpack"
  /// "int8: N Linear layers on ENGINE, weights X MB -> Y MB" (what predict, serve and eval print).
  std::string summary() const;
};

/// The quantized engines this LibTorch has, in the order int8 prefers them.
std::vector<std::string> int8_engines();

/// Packs every Linear of `model` for int8 (model on the CPU). std::runtime_error naming the
/// engines when this LibTorch has none, or when the model is not on the CPU.
QuantizeReport quantize_dynamic_int8(torch::nn::Module& model);

namespace detail {
extern std::atomic<int64_t> g_int8_layers;  // Linear modules packed for int8 (all models)
/// `layer`'s int8 forward of `x` when it was packed, else nullopt.
std::optional<torch::Tensor> int8_linear(const torch::nn::LinearImpl* layer, const torch::Tensor& x);
}  // namespace detail

}  // namespace unif::models
