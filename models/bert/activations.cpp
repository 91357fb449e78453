#include "models/bert/activations.h"

#include <cmath>
#include <stdexcept>
#include <torch/nn/functional/activation.h>

namespace unif::models {

std::function<torch::Tensor(const torch::Tensor&)> activation(const std::string& name) {
  if (name == "gelu") return [](const torch::Tensor& x) { return torch::gelu(x); };
  if (name == "gelu_new")  // HF NewGELUActivation: 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))
    return [](const torch::Tensor& x) {
      return 0.5 * x * (1.0 + torch::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * torch::pow(x, 3.0))));
    };
  if (name == "relu") return [](const torch::Tensor& x) { return torch::relu(x); };
  throw std::invalid_argument("hidden_act must be gelu, gelu_new or relu, got '" + name + "'");
}

}  // namespace unif::models
