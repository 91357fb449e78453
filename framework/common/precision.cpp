// Precision names and AutocastGuard: see precision.h. LibTorch 2.4 replaced the per-backend autocast
// functions (set_cpu_enabled, set_autocast_cpu_dtype, ...) with ones taking a device type; both are
// wrapped here, the only place that differs.
#include "framework/common/precision.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#define UNIF_AUTOCAST_BY_DEVICE (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))

namespace unif {

namespace {

bool autocast_enabled(c10::DeviceType d) {
#if UNIF_AUTOCAST_BY_DEVICE
  return at::autocast::is_autocast_enabled(d);
#else
  return d == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}

void set_autocast_enabled(c10::DeviceType d, bool on) {
#if UNIF_AUTOCAST_BY_DEVICE
  at::autocast::set_autocast_enabled(d, on);
#else
  if (d == c10::DeviceType::CPU)
    at::autocast::set_cpu_enabled(on);
  else
    at::autocast::set_enabled(on);
#endif
}

c10::ScalarType autocast_dtype(c10::DeviceType d) {
#if UNIF_AUTOCAST_BY_DEVICE
  return at::autocast::get_autocast_dtype(d);
#else
  return d == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype();
#endif
}

void set_autocast_dtype(c10::DeviceType d, c10::ScalarType t) {
#if UNIF_AUTOCAST_BY_DEVICE
  at::autocast::set_autocast_dtype(d, t);
#else
  if (d == c10::DeviceType::CPU)
    at::autocast::set_autocast_cpu_dtype(t);
  else
    at::autocast::set_autocast_gpu_dtype(t);
#endif
}

}  // namespace

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

AutocastGuard::AutocastGuard(Precision p, c10::DeviceType device) : device_(device) {
  if (p == Precision::FP32) return;
  if (device != c10::DeviceType::CPU && device != c10::DeviceType::CUDA)
    throw std::invalid_argument("autocast: only CPU and CUDA devices are supported");
  previous_enabled_ = autocast_enabled(device);
  previous_dtype_ = autocast_dtype(device);
  set_autocast_enabled(device, true);
  set_autocast_dtype(device, scalar_type(p));
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast_enabled(device_, previous_enabled_);
  set_autocast_dtype(device_, previous_dtype_);
}

}  // namespace unif
