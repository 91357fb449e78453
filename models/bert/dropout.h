// Dropout that can draw its masks from a generator of its own. Torch's dropout draws from the one
// global CPU generator; replicas running on several threads would then take masks in whatever
// order the threads run, and a multi-replica run would not repeat. The data-parallel engine gives
// each replica's Dropout modules a generator seeded per pass (framework/parallel); without one
// (a single device) this is exactly torch::nn::Dropout. Custom models get the same behaviour by
// using models::Dropout.
#pragma once
#include <optional>

#include <ATen/core/Generator.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

namespace unif::models {

class DropoutImpl : public torch::nn::Cloneable<DropoutImpl> {
 public:
  explicit DropoutImpl(double p = 0.5) : p_(p) {}
  void reset() override {}
  torch::Tensor forward(const torch::Tensor& x);
  /// Masks from `generator` from now on (nullopt: the global generator again).
  void set_generator(std::optional<at::Generator> generator) { generator_ = std::move(generator); }
  double p() const { return p_; }

 private:
  double p_;
  std::optional<at::Generator> generator_;
};
TORCH_MODULE(Dropout);

}  // namespace unif::models
