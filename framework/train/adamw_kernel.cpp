#include "framework/train/adamw_kernel.h"

#include <algorithm>
#include <cmath>

#include <ATen/Parallel.h>

namespace unif::framework {
namespace {

bool dense_float_cpu(const torch::Tensor& t) {
  return t.defined() && !t.is_sparse() && t.device().is_cpu() && t.scalar_type() == torch::kFloat && t.is_contiguous();
}

// The loops are written so that GCC vectorizes them (this file is compiled with -fno-math-errno so
// that sqrt vectorizes too).
void update(float* p, const float* g, float* m, float* v, int64_t n, const AdamWScalars& s) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = m[i] * s.beta1 + s.one_minus_beta1 * gi;
    const float vi = v[i] * s.beta2 + s.one_minus_beta2 * gi * gi;
    const float denom = std::sqrt(vi) / s.bc2_sqrt + s.eps;
    p[i] = p[i] * s.decay + s.step * (mi / denom);
    m[i] = mi;
    v[i] = vi;
  }
}

void update_zero_grad(float* p, float* m, float* v, int64_t n, const AdamWScalars& s) {
  for (int64_t i = 0; i < n; ++i) {
    const float mi = m[i] * s.beta1;
    const float vi = v[i] * s.beta2;
    const float denom = std::sqrt(vi) / s.bc2_sqrt + s.eps;
    p[i] = p[i] * s.decay + s.step * (mi / denom);
    m[i] = mi;
    v[i] = vi;
  }
}

constexpr int64_t kGrain = 32768;  // elements per parallel chunk

}  // namespace

bool adamw_fused_supported(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& m,
                           const torch::Tensor& v) {
  if (!dense_float_cpu(p) || !dense_float_cpu(m) || !dense_float_cpu(v)) return false;
  if (!m.sizes().equals(p.sizes()) || !v.sizes().equals(p.sizes()) || !g.defined()) return false;
  if (!g.is_sparse()) return dense_float_cpu(g) && g.sizes().equals(p.sizes());
  return g.device().is_cpu() && g.scalar_type() == torch::kFloat && g.sizes().equals(p.sizes()) && p.dim() >= 1 &&
         g.sparse_dim() == 1;
}

void adamw_fused(torch::Tensor& p, const torch::Tensor& g, torch::Tensor& m, torch::Tensor& v, const AdamWScalars& s) {
  float* pp = p.data_ptr<float>();
  float* mp = m.data_ptr<float>();
  float* vp = v.data_ptr<float>();
  if (!g.is_sparse()) {
    const float* gp = g.data_ptr<float>();
    at::parallel_for(0, p.numel(), kGrain, [&](int64_t begin, int64_t end) {
      update(pp + begin, gp + begin, mp + begin, vp + begin, end - begin, s);
    });
    return;
  }
  // Rows of the first dimension; the coalesced gradient lists each touched row once, sorted.
  const auto cg = g.coalesce();
  const auto idx = cg._indices().contiguous();
  const auto val = cg._values().contiguous();
  const int64_t rows = p.size(0), width = rows ? p.numel() / rows : 0, nnz = idx.size(1);
  const int64_t* ip = idx.data_ptr<int64_t>();
  const float* gv = val.data_ptr<float>();
  const int64_t grain_rows = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, width));
  at::parallel_for(0, rows, grain_rows, [&](int64_t begin, int64_t end) {
    int64_t k = std::lower_bound(ip, ip + nnz, begin) - ip;
    int64_t r = begin;
    while (r < end) {
      // Untouched rows up to the next gradient row (or the end of the range) in one run.
      const int64_t next = k < nnz ? std::min(ip[k], end) : end;
      if (next > r) {
        update_zero_grad(pp + r * width, mp + r * width, vp + r * width, (next - r) * width, s);
        r = next;
        continue;
      }
      update(pp + r * width, gv + k * width, mp + r * width, vp + r * width, width, s);
      ++k, ++r;
    }
  });
}

}  // namespace unif::framework
