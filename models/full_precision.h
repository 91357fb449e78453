// full_precision: what a model applies before a softmax or a loss so that both run in float32 when
// a layer under autocast (training.precision bf16 / fp16, framework/common/precision.h) produced a
// bfloat16 or float16 tensor. float32 and float64 tensors pass through untouched (the same tensor),
// so fp32 results are bit for bit those without it.
#pragma once
#include <torch/types.h>

namespace unif::models {

inline torch::Tensor full_precision(const torch::Tensor& t) {
  if (!t.defined()) return t;
  const auto type = t.scalar_type();
  return type == torch::kBFloat16 || type == torch::kHalf ? t.to(torch::kFloat) : t;
}

}  // namespace unif::models
