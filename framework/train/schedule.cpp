#include "framework/train/schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace unif::framework {

Schedule::Schedule(ScheduleKind kind, int64_t warmup_steps, int64_t total_steps)
    : kind_(kind), warmup_(std::max<int64_t>(0, warmup_steps)), total_(std::max<int64_t>(1, total_steps)) {}

double Schedule::multiplier(int64_t step) const {
  if (step < warmup_) return static_cast<double>(step) / static_cast<double>(std::max<int64_t>(1, warmup_));
  if (kind_ == ScheduleKind::Constant) return 1.0;
  const double progress =
      static_cast<double>(step - warmup_) / static_cast<double>(std::max<int64_t>(1, total_ - warmup_));
  if (kind_ == ScheduleKind::Linear) return std::max(0.0, 1.0 - progress);
  return std::max(0.0, 0.5 * (1.0 + std::cos(M_PI * progress)));  // cosine, 0.5 cycles
}

}  // namespace unif::framework
