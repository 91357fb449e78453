// ParameterSwap: puts other values (a parameter snapshot, e.g. SMART's teacher) into a model's live
// parameter tensors for the lifetime of the object and restores the original values bit for bit when
// it goes away, exceptions included. The tensors keep their storage and their .grad; nothing is
// recorded by autograd. Used by the engines' GradientEngine::forward_with.
#pragma once
#include <stdexcept>
#include <vector>

#include <torch/types.h>

namespace unif::framework {

class ParameterSwap {
 public:
  ParameterSwap(std::vector<torch::Tensor> live, const std::vector<torch::Tensor>& values) : live_(std::move(live)) {
    if (values.size() != live_.size())
      throw std::logic_error("ParameterSwap: " + std::to_string(values.size()) + " values for " +
                             std::to_string(live_.size()) + " parameters");
    torch::NoGradGuard no_grad;
    saved_.reserve(live_.size());
    for (size_t i = 0; i < live_.size(); ++i) {
      if (!values[i].sizes().equals(live_[i].sizes()))
        throw std::logic_error("ParameterSwap: parameter " + std::to_string(i) + " has another shape");
      saved_.push_back(live_[i].detach().clone());
    }
    for (size_t i = 0; i < live_.size(); ++i) live_[i].detach().copy_(values[i]);
  }
  ~ParameterSwap() {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < saved_.size(); ++i) live_[i].detach().copy_(saved_[i]);
  }
  ParameterSwap(const ParameterSwap&) = delete;
  ParameterSwap& operator=(const ParameterSwap&) = delete;

 private:
  std::vector<torch::Tensor> live_, saved_;
};

}  // namespace unif::framework
