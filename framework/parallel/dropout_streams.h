// DropoutStreams: the dropout generators of a model's replicas, one per replica, reseeded before
// every pass from one draw of the global CPU generator (on the calling thread), as
//   seed(replica i, family f) = draw + 0x9E3779B97F4A7C15 * (i + 1) + 0xD1B54A32D192ED03 * f.
// So masks depend only on the global CPU generator's state (saved in every checkpoint), never on
// the order in which threads run or on a device generator's state: runs repeat and resume exactly
// with dropout on, on CPU replicas and GPU replicas alike (a GPU replica gets a CUDA generator of
// its own; two replicas sharing one GPU no longer draw from that GPU's one default generator).
// Used by the data-parallel engine (every replica) and the single-device engine (a model on a GPU;
// a single CPU model keeps drawing from the global generator itself).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/core/Generator.h>
#include <torch/nn/module.h>
#include <torch/types.h>

namespace unif::framework {

class DropoutStreams {
 public:
  /// Gives every models::Dropout of `model` a generator of its own for `device` (CPU or CUDA),
  /// known as replica `replica`. Throws std::invalid_argument for a CUDA device in a build without CUDA.
  void attach(torch::nn::Module& model, size_t replica, const torch::Device& device);
  /// Reseeds every attached generator from one draw of the global CPU generator (see above).
  void reseed(uint64_t family);
  bool empty() const { return generators_.empty(); }
  /// The generators attached as replica `replica` (a gradient cache notes and replays their states).
  std::vector<at::Generator> generators(size_t replica) const;

 private:
  std::vector<std::pair<size_t, at::Generator>> generators_;  // (replica, its generator)
};

}  // namespace unif::framework
