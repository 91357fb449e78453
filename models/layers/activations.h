// hidden_act functions of HF BERT: gelu (erf form), gelu_new (tanh approximation), relu.
#pragma once
#include <functional>
#include <string>
#include <torch/types.h>

namespace unif::models {

/// Returns the activation named by HF's `hidden_act`; throws std::invalid_argument otherwise.
std::function<torch::Tensor(const torch::Tensor&)> activation(const std::string& name);

}  // namespace unif::models
