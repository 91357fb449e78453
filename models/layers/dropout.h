// Dropout that can draw its masks from a generator of its own. Torch's dropout draws from the one
// global CPU generator; replicas running on several threads would then take masks in whatever
// order the threads run, and a multi-replica run would not repeat. The data-parallel engine gives
// each replica's Dropout modules a generator seeded per pass (framework/parallel); without one
// (a single device) masks come from Torch's global generator. Custom models get the same behaviour
// by using models::Dropout.
//
// On CPU float32 a forward pass takes one 64-bit seed from the generator and builds the mask with a
// counter-based generator (SplitMix64 of the element index) in parallel: the same distribution as
// torch::nn::Dropout (keep with probability 1-p, kept values scaled by 1/(1-p)) but not Torch's
// masks, identical on any thread count, and much cheaper than Torch 1.13's one-by-one CPU
// bernoulli_. Other devices and dtypes use Torch's kernels.
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
  /// The generator the masks come from; nullopt: the global one.
  const std::optional<at::Generator>& generator() const { return generator_; }

 private:
  double p_;
  std::optional<at::Generator> generator_;
};
TORCH_MODULE(Dropout);

}  // namespace unif::models
