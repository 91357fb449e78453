// Mixed precision (SPEC §7 training.precision): the precision names and a scoped autocast.
//
// fp32 runs everything in float32. bf16 and fp16 run the forward pass under LibTorch's autocast on
// the replica's device type (matrix products in the low precision; the model keeps softmax and the
// loss in float32, models/io.h full_precision); the weights, their gradients and the optimizer state
// stay float32 (the "master" copy). fp16 additionally needs dynamic loss scaling
// (framework/train/loss_scaler.h) and a CUDA device: LibTorch's CPU autocast is bf16-only in 1.13.
//
// Autocast state is per thread: every worker thread that runs a forward pass holds its own guard.
//
// Example:
//   {
//     AutocastGuard autocast(Precision::BF16, torch::kCPU);
//     out = model->forward(batch);   // linear layers in bfloat16
//   }
//   out.example_losses.sum().backward();   // outside the guard, as torch.autocast recommends
#pragma once
#include <string>

#include <c10/core/Device.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include "framework/common/precision_names.h"

namespace unif {

/// "fp32" | "bf16" | "fp16".
std::string to_string(Precision p);
/// Inverse of to_string; std::invalid_argument for anything else (the config validates first).
Precision parse_precision(const std::string& name);
/// kFloat, kBFloat16 or kHalf.
c10::ScalarType scalar_type(Precision p);

/// How many times slower a bfloat16 matrix product is than a float32 one on this CPU with this
/// LibTorch, for the warning's text: the fastest of 15 timed 256 x 256 x 256 products of each type,
/// interleaved, on one thread, after a warm-up. Without bfloat16 instructions 10-30x in Debian's
/// 1.13 and 60-120x in the PyPI 2.11 wheel (docs/performance.md); a busy machine moves it.
double cpu_bf16_matmul_slowdown();

/// training.precision auto: what was measured and chosen.
struct PrecisionChoice {
  Precision precision = Precision::FP32;
  double fp32_ms = 0, bf16_ms = 0;  // the fastest product of each type
  std::string why;                  // one line for train.log
};

/// bf16 when fp32_ms / bf16_ms >= kAutoBf16Speedup, else fp32.
inline constexpr double kAutoBf16Speedup = 1.2;
Precision pick_precision(double fp32_ms, double bf16_ms);

/// Times the model's own matrix product, (rows x hidden) by (hidden x intermediate), in float32 and
/// in bfloat16 on `device` with `threads` intra-op threads (0: as set), the fastest of 10 of each,
/// interleaved, after a warm-up (a few ms on a CPU), and picks as pick_precision.
PrecisionChoice choose_precision(c10::Device device, int64_t rows, int64_t hidden, int64_t intermediate, int threads);

/// Autocast to `p` on `device` for this object's lifetime (nothing for FP32), then the thread's
/// previous autocast state. Nests like torch.autocast: the cast cache is cleared when the outermost
/// guard of the thread ends.
class AutocastGuard {
 public:
  AutocastGuard(Precision p, c10::DeviceType device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_ = c10::DeviceType::CPU;
  bool previous_enabled_ = false;
  c10::ScalarType previous_dtype_ = c10::ScalarType::Float;
};

}  // namespace unif
