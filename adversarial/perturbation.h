// perturbation: the per-example vector algebra of SPEC §5 on perturbations of the word-embedding
// output, δ of shape (B, L, H). Every norm is per example over (L, H) with padding positions
// masked out, and every result keeps padding positions at exactly 0.
//
//   ‖x‖_b          = sqrt(Σ_{l,h} x[b,l,h]²)                    (real positions only)
//   normalize(d)_b = d_b / max(‖d‖_b, 1e-8)
//   project_ε(x)_b = x_b · min(1, ε/‖x‖_b)
//
// Example:
//   auto mask = padding_mask(batch);                    // (B, L, 1) float, 1 = real token
//   auto step = normalize(delta_grad, mask);            // (B, L, H), unit norm per example
//   delta = project(delta + alpha * step, eps, mask);
#pragma once
#include <cstdint>

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include "models/io.h"

namespace unif::adversarial {

/// (B, L, 1) float32 on the batch's device: 1 at real tokens, 0 at padding (batch.attention_mask).
torch::Tensor padding_mask(const models::Batch& batch);

/// x with padding positions set to 0. x (B, L, H), mask (B, L, 1).
torch::Tensor apply_mask(const torch::Tensor& x, const torch::Tensor& mask);

/// Per-example L2 norms over the real positions: (B).
torch::Tensor example_norms(const torch::Tensor& x, const torch::Tensor& mask);

/// d_b / max(‖d‖_b, 1e-8) per example; padding 0. (B, L, H).
torch::Tensor normalize(const torch::Tensor& d, const torch::Tensor& mask);

/// x_b · min(1, ε/‖x‖_b) per example; padding 0. ε must be > 0. (B, L, H).
torch::Tensor project(const torch::Tensor& x, double epsilon, const torch::Tensor& mask);

/// How many examples of x lie outside the ε ball (those project() would shrink).
int64_t count_outside(const torch::Tensor& x, double epsilon, const torch::Tensor& mask);

/// A CPU generator for the random initial noise of training step `step`: seeded by (seed, step, micro),
/// where `micro` numbers the micro-batches of a step (gradient accumulation), never the global RNG.
at::Generator noise_generator(int64_t seed, int64_t step, int64_t micro = 0);

/// Counts the micro-batches of a step: the same (step) again means the next micro-batch of it.
/// Strategies that draw noise keep one so that each micro-batch of a step draws different noise.
class MicroCounter {
 public:
  int64_t next(int64_t step) {
    micro_ = step == step_ ? micro_ + 1 : 0;
    step_ = step;
    return micro_;
  }

 private:
  int64_t step_ = -1;
  int64_t micro_ = 0;
};

}  // namespace unif::adversarial
