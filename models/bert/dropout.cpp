#include "models/bert/dropout.h"

#include <ATen/ATen.h>

namespace unif::models {

torch::Tensor DropoutImpl::forward(const torch::Tensor& x) {
  if (!is_training() || p_ == 0.0) return x;
  if (!generator_) return at::dropout(x, p_, /*train=*/true);
  if (p_ == 1.0) return x * 0.0;
  auto keep = at::empty_like(x).bernoulli_(1.0 - p_, *generator_);
  return x * keep * (1.0 / (1.0 - p_));
}

}  // namespace unif::models
