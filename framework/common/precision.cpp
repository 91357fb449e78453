// Precision names and AutocastGuard: see precision.h (the autocast switches: autocast_state.h).
#include "framework/common/precision.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "framework/common/autocast_state.h"

namespace unif {

std::string to_string(Precision p) { return name_of(p); }

Precision parse_precision(const std::string& name) { return parse_enum<Precision>(name, "precision"); }

c10::ScalarType scalar_type(Precision p) {
  switch (p) {
    case Precision::BF16: return c10::ScalarType::BFloat16;
    case Precision::FP16: return c10::ScalarType::Half;
    default: return c10::ScalarType::Float;
  }
}

double cpu_bf16_matmul_slowdown() {
  const at::Tensor a = at::randn({256, 256});
  const at::Tensor b = a.to(at::kBFloat16);
  // On one thread, the two products interleaved, the fastest of many of each: a product that
  // shares its core with other work runs slower by any factor (0.6 to 16 ms for this fp32 product on
  // a busy 2-core machine), but the fastest run of each is the kernel's own speed.
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const auto seconds = [](const at::Tensor& x) {
    const auto t0 = std::chrono::steady_clock::now();
    at::mm(x, x);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  seconds(a), seconds(b);  // warm-up: first-call dispatch and buffers
  double fp32 = 1e30, bf16 = 1e30;
  for (int i = 0; i < 15; ++i) {
    fp32 = std::min(fp32, seconds(a));
    bf16 = std::min(bf16, seconds(b));
  }
  at::set_num_threads(threads);
  return bf16 / std::max(fp32, 1e-9);
}

Precision pick_precision(double fp32_ms, double bf16_ms) {
  return bf16_ms > 0 && fp32_ms / bf16_ms >= kAutoBf16Speedup ? Precision::BF16 : Precision::FP32;
}

PrecisionChoice choose_precision(c10::Device device, int64_t rows, int64_t hidden, int64_t intermediate, int threads) {
  const at::Tensor x = at::randn({rows, hidden}).to(device), w = at::randn({hidden, intermediate}).to(device);
  const at::Tensor xb = x.to(at::kBFloat16), wb = w.to(at::kBFloat16);
  const int before = at::get_num_threads();
  if (threads > 0) at::set_num_threads(threads);
  const auto ms = [&](const at::Tensor& a, const at::Tensor& b) {
    const auto t0 = std::chrono::steady_clock::now();
    at::Tensor c = at::mm(a, b);
    (void)c.sum().item<float>();  // waits for a GPU
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  ms(x, w), ms(xb, wb);  // warm-up: first-call dispatch, buffers, kernel choice
  PrecisionChoice c;
  c.fp32_ms = c.bf16_ms = 1e30;
  for (int i = 0; i < 10; ++i) {
    c.fp32_ms = std::min(c.fp32_ms, ms(x, w));
    c.bf16_ms = std::min(c.bf16_ms, ms(xb, wb));
  }
  at::set_num_threads(before);
  c.precision = pick_precision(c.fp32_ms, c.bf16_ms);
  char line[320];
  std::snprintf(line, sizeof line,
                "training.precision auto -> %s: the model's product (%lld x %lld by %lld x %lld) on %s takes %.3f ms "
                "in float32 and %.3f ms in bfloat16 (%.2fx; bf16 is chosen from %.1fx)",
                name_of(c.precision).c_str(), static_cast<long long>(rows), static_cast<long long>(hidden),
                static_cast<long long>(hidden), static_cast<long long>(intermediate), device.str().c_str(), c.fp32_ms,
                c.bf16_ms, c.fp32_ms / std::max(c.bf16_ms, 1e-9), kAutoBf16Speedup);
  c.why = line;
  return c;
}

AutocastGuard::AutocastGuard(Precision p, c10::DeviceType device) : device_(device) {
  if (p == Precision::Auto) throw std::invalid_argument("autocast: precision auto must be chosen first");
  if (p == Precision::FP32) return;
  if (device != c10::DeviceType::CPU && device != c10::DeviceType::CUDA)
    throw std::invalid_argument("autocast: only CPU and CUDA devices are supported");
  previous_enabled_ = autocast::enabled(device);
  previous_dtype_ = autocast::dtype(device);
  autocast::set_enabled(device, true);
  autocast::set_dtype(device, scalar_type(p));
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  autocast::set_enabled(device_, previous_enabled_);
  autocast::set_dtype(device_, previous_dtype_);
}

}  // namespace unif
