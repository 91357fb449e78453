// LossScaler: see loss_scaler.h.
#include "framework/train/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

namespace unif::framework {

LossScaler::LossScaler(LossScalerOptions options) : options_(options), scale_(options.init_scale) {
  if (!(options_.init_scale > 0) || !(options_.growth_factor >= 1) || !(options_.backoff_factor > 0) ||
      !(options_.backoff_factor < 1) || options_.growth_interval < 1 || !(options_.min_scale > 0) ||
      options_.min_scale > options_.init_scale)
    throw std::invalid_argument("LossScaler: bad options");
}

bool LossScaler::unscale(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  const double inverse = 1.0 / scale_;
  std::vector<torch::Tensor> finite;  // one flag per gradient, read once at the end (one sync on GPU)
  for (const auto& p : params) {
    torch::Tensor& g = p.mutable_grad();
    if (!g.defined()) continue;
    if (g.is_sparse()) {
      g = g.coalesce();
      g._values().mul_(inverse);
      finite.push_back(torch::isfinite(g._values()).all());
    } else {
      g.mul_(inverse);
      finite.push_back(torch::isfinite(g).all());
    }
  }
  bool ok = true;
  if (!finite.empty()) {
    std::vector<torch::Tensor> on_cpu;
    for (const auto& f : finite) on_cpu.push_back(f.to(torch::kCPU));
    ok = torch::stack(on_cpu).all().item<bool>();
  }
  if (!ok) overflow_ = true;
  return ok;
}

bool LossScaler::update() {
  if (overflow_) {
    overflow_ = false;
    scale_ = std::max(options_.min_scale, scale_ * options_.backoff_factor);
    good_ = 0;
    ++skipped_;
    return true;
  }
  if (++good_ >= options_.growth_interval) {
    const double grown = scale_ * options_.growth_factor;
    if (std::isfinite(grown) && grown <= 3.0e38) scale_ = grown;  // never past float32's range
    good_ = 0;
  }
  return false;
}

void LossScaler::restore(double scale, int64_t good_steps, int64_t skipped_steps) {
  if (!(scale > 0) || !std::isfinite(scale) || good_steps < 0 || skipped_steps < 0)
    throw std::invalid_argument("LossScaler: bad state");
  scale_ = scale;
  good_ = good_steps;
  skipped_ = skipped_steps;
  overflow_ = false;
}

}  // namespace unif::framework
