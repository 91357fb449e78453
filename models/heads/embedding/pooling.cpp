// Pooling and normalization of sentence embeddings: see pooling.h for the formulas. Each mode is
// written as sentence-transformers' Pooling._forward_padded writes it, op for op, so that values and
// gradients (max over a dimension sends each feature's gradient to one position) agree with it.
#include "models/heads/embedding/pooling.h"

#include <limits>
#include <stdexcept>
#include <string>

#include <torch/nn/functional/normalization.h>

#include "framework/common/strings.h"

namespace unif::models {

namespace {

void check_pooling_inputs(const torch::Tensor& hidden, const torch::Tensor& mask) {
  if (!hidden.defined() || hidden.dim() != 3)
    throw std::invalid_argument(
        "pool: hidden must be [B, L, H], got " +
        (hidden.defined() ? framework::shape_string(hidden.sizes().vec()) : std::string("no tensor")));
  if (!mask.defined() || mask.dim() != 2 || mask.size(0) != hidden.size(0) || mask.size(1) != hidden.size(1))
    throw std::invalid_argument(
        "pool: attention_mask must be [B, L] = " + framework::shape_string({hidden.size(0), hidden.size(1)}) +
        ", got " + (mask.defined() ? framework::shape_string(mask.sizes().vec()) : std::string("no tensor")));
  if (hidden.size(1) == 0) throw std::invalid_argument("pool: hidden has no positions (L = 0)");
  if (!hidden.is_floating_point()) throw std::invalid_argument("pool: hidden must be a floating-point tensor");
}

}  // namespace

torch::Tensor pool(const torch::Tensor& hidden, const torch::Tensor& attention_mask, Pooling mode) {
  check_pooling_inputs(hidden, attention_mask);
  const auto dtype = hidden.scalar_type();
  const int64_t length = hidden.size(1);
  const int64_t width = hidden.size(2);
  const auto mask = attention_mask.to(hidden.device(), torch::kLong);  // (B, L)
  switch (mode) {
    case Pooling::Mean: {
      // Summed in float32 for half and bfloat16, as sentence-transformers' accumulation_dtype.
      const auto acc = (dtype == torch::kHalf || dtype == torch::kBFloat16) ? torch::kFloat : dtype;
      const auto m = mask.unsqueeze(-1).to(dtype);                            // (B, L, 1)
      const auto sum = (hidden * m).sum({1}, /*keepdim=*/false, acc);         // (B, H)
      const auto count = m.sum({1}, /*keepdim=*/false, acc).clamp_min(1e-9);  // (B, 1)
      return (sum / count).to(dtype);
    }
    case Pooling::Cls: {
      const auto first = mask.argmax(1);  // the first position whose mask is 1 (0 when none is)
      return hidden.gather(1, first.view({-1, 1, 1}).expand({-1, 1, width})).squeeze(1);
    }
    case Pooling::Max: {
      const auto m = mask.unsqueeze(-1).expand_as(hidden).to(dtype);
      return std::get<0>(hidden.masked_fill(m.eq(0), -std::numeric_limits<double>::infinity()).max(1));
    }
    case Pooling::LastToken: {
      // The first 1 of the reversed mask is the last 1; a row without one reads position 0, masked to 0.
      auto [values, from_end] = mask.flip({1}).max(1);  // (B), (B)
      from_end = from_end.masked_fill(values.eq(0), length - 1);
      const auto last = -from_end + (length - 1);  // (B)
      const auto m = mask.unsqueeze(-1).expand_as(hidden).to(dtype);
      return (hidden * m).gather(1, last.view({-1, 1, 1}).expand({-1, 1, width})).squeeze(1);
    }
  }
  throw std::invalid_argument("pool: unknown pooling mode");
}

torch::Tensor normalize(const torch::Tensor& embeddings) {
  namespace F = torch::nn::functional;
  return F::normalize(embeddings, F::NormalizeFuncOptions().p(2).dim(-1).eps(1e-12));
}

}  // namespace unif::models
