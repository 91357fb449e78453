// One-pass AdamW update for contiguous float32 CPU tensors.
//
// torch.optim.AdamW (1.13, single-tensor form) updates a parameter with about ten tensor
// operations, each a full pass over memory, plus temporaries for sqrt(v) and the denominator;
// for BERT's word-embedding table (vocabulary x hidden, updated every step because weight decay and
// the moments touch every row) that was most of the optimizer's time. This kernel reads p, g, m, v
// once and writes p, m, v once, with the same arithmetic per element:
//   p *= 1 - lr*wd;  m = m*b1 + (1-b1)*g;  v = v*b2 + (1-b2)*g*g;
//   p += -(lr/bc1) * m / (sqrt(v)/sqrt(bc2) + eps)
// (results agree with the tensor form to float rounding; the order of operations is the same but
// Torch's vectorized kernels may fuse a multiply-add).
//
// A sparse gradient (the word embeddings with sparse_embeddings) is read from its coalesced rows;
// rows it does not touch take the zero-gradient update, which is what the densified gradient
// gives, without materializing a vocabulary x hidden zero tensor.
//
// Example:
//   if (adamw_fused_supported(p, g, m, v)) adamw_fused(p, g, m, v, scalars);
#pragma once
#include <torch/types.h>

namespace unif::framework {

struct AdamWScalars {
  float decay = 1.0f;  // 1 - lr * weight_decay
  float beta1 = 0.9f, one_minus_beta1 = 0.1f;
  float beta2 = 0.999f, one_minus_beta2 = 0.001f;
  float bc2_sqrt = 1.0f;  // sqrt(1 - beta2^t)
  float eps = 1e-6f;
  float step = 0.0f;  // -lr / (1 - beta1^t)
};

/// True when p, m, v are contiguous float32 CPU tensors of one shape and g is either such a dense
/// tensor or a sparse COO gradient of p's shape over its first dimension (float32 values).
bool adamw_fused_supported(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& m,
                           const torch::Tensor& v);

/// The update above, in place on p, m and v (no autograd). Call only when adamw_fused_supported.
void adamw_fused(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v, const AdamWScalars& s);

}  // namespace unif::framework
