#include "models/layers/activations.h"

#include <stdexcept>
#include <torch/nn/functional/activation.h>

namespace unif::models {

std::function<torch::Tensor(const torch::Tensor&)> activation(const std::string& name) {
  if (name == "gelu") return [](const torch::Tensor& x) { return torch::gelu(x); };
  // HF NewGELUActivation, 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), is Torch's tanh-approximate
  // GELU: one fused kernel instead of eight elementwise passes (and their saved tensors).
  if (name == "gelu_new") return [](const torch::Tensor& x) { return torch::gelu(x, "tanh"); };
  if (name == "relu") return [](const torch::Tensor& x) { return torch::relu(x); };
  throw std::invalid_argument("hidden_act must be gelu, gelu_new or relu, got '" + name + "'");
}

}  // namespace unif::models
