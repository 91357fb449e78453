// FreeLb: K passes, each adding gθ(δ_{k-1})/K to the gradient; between passes δ climbs the loss
// (normalized gradient step α, projected onto the ε ball when ε > 0).
#include "adversarial/freelb.h"

#include <cmath>

namespace unif::adversarial {

torch::Tensor FreeLb::initial_delta(const models::Batch& batch, int64_t hidden, int64_t seed, int64_t step,
                                    int64_t micro) const {
  const auto device = batch.input_ids.device();
  const int64_t b = batch.input_ids.size(0), l = batch.input_ids.size(1);
  if (init_mag_ <= 0.0)
    return torch::zeros({b, l, hidden}, torch::TensorOptions().dtype(torch::kFloat32).device(device));
  auto gen = noise_generator(seed, step, micro);
  auto u = torch::empty({b, l, hidden}, torch::kFloat32).uniform_(-1.0, 1.0, gen);  // CPU, (B, L, H)
  const auto mask = batch.attention_mask.to(torch::kCPU).to(torch::kFloat32);       // (B, L)
  const auto dims = mask.sum(1) * static_cast<double>(hidden);                      // len_b·H, (B)
  const auto mag = init_mag_ / dims.clamp_min(1.0).sqrt();                          // (B)
  return (u * mask.unsqueeze(-1) * mag.view({-1, 1, 1})).to(device);
}

StepResult FreeLb::accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t seed,
                              int64_t step) {
  const auto mask = padding_mask(batch);  // (B, L, 1)
  const double w = scale / static_cast<double>(steps_);
  torch::Tensor delta = initial_delta(batch, engine.embedding_dim(), seed, step, micro_.next(step));
  StepResult result;
  for (int64_t k = 1; k <= steps_; ++k) {
    const bool more = k < steps_;
    auto r = engine.run(batch, delta, w, /*want_delta_grad=*/more);
    result.pass_losses.push_back(r.loss_sum);
    if (k == 1) {
      result.loss_sum = r.loss_sum;  // the loss at δ₀
      result.output = std::move(r.output);
    }
    if (!more) break;
    delta = delta + alpha_ * normalize(r.delta_grad / w, mask);
    if (epsilon_ > 0.0) {
      result.projected_examples.push_back(count_outside(delta, epsilon_, mask));
      delta = project(delta, epsilon_, mask);
    }
  }
  result.passes = steps_;
  return result;
}

}  // namespace unif::adversarial
