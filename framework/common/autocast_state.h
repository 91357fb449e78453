// The thread's autocast switches for a device type, over both LibTorch APIs: 2.4 replaced the
// per-backend functions (set_cpu_enabled, set_autocast_cpu_dtype, ...) with ones taking a device
// type. Header only (the models include it, and link no framework library). AutocastState keeps the
// CPU and CUDA switches of a moment and sets them again: what a recomputation in backward (which
// runs outside any autocast scope) needs to compute as the forward did.
#pragma once
#include <ATen/autocast_mode.h>
#include <torch/version.h>

#define UNIF_AUTOCAST_BY_DEVICE (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))

namespace unif::autocast {

inline bool enabled(c10::DeviceType d) {
#if UNIF_AUTOCAST_BY_DEVICE
  return at::autocast::is_autocast_enabled(d);
#else
  return d == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}

inline void set_enabled(c10::DeviceType d, bool on) {
#if UNIF_AUTOCAST_BY_DEVICE
  at::autocast::set_autocast_enabled(d, on);
#else
  if (d == c10::DeviceType::CPU)
    at::autocast::set_cpu_enabled(on);
  else
    at::autocast::set_enabled(on);
#endif
}

inline c10::ScalarType dtype(c10::DeviceType d) {
#if UNIF_AUTOCAST_BY_DEVICE
  return at::autocast::get_autocast_dtype(d);
#else
  return d == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype();
#endif
}

inline void set_dtype(c10::DeviceType d, c10::ScalarType t) {
#if UNIF_AUTOCAST_BY_DEVICE
  at::autocast::set_autocast_dtype(d, t);
#else
  if (d == c10::DeviceType::CPU)
    at::autocast::set_autocast_cpu_dtype(t);
  else
    at::autocast::set_autocast_gpu_dtype(t);
#endif
}

/// The CPU and CUDA switches of this thread at construction; apply() sets them again.
struct AutocastState {
  bool cpu = enabled(c10::DeviceType::CPU), cuda = enabled(c10::DeviceType::CUDA);
  c10::ScalarType cpu_dtype = dtype(c10::DeviceType::CPU), cuda_dtype = dtype(c10::DeviceType::CUDA);

  void apply() const {
    set_enabled(c10::DeviceType::CPU, cpu);
    set_enabled(c10::DeviceType::CUDA, cuda);
    set_dtype(c10::DeviceType::CPU, cpu_dtype);
    set_dtype(c10::DeviceType::CUDA, cuda_dtype);
  }
};

}  // namespace unif::autocast
