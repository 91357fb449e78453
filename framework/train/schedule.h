// Learning-rate schedules with warmup, as HF transformers' get_{linear,constant,cosine}_schedule_with_warmup:
// the optimizer step taken after `step` completed steps uses lr = base_lr * multiplier(step).
#pragma once
#include <cstdint>
#include <string>

#include "framework/config/choices.h"

namespace unif::framework {

class Schedule {
 public:
  Schedule(ScheduleKind kind, int64_t warmup_steps, int64_t total_steps);
  double multiplier(int64_t step) const;
  int64_t warmup_steps() const { return warmup_; }
  int64_t total_steps() const { return total_; }

 private:
  ScheduleKind kind_;
  int64_t warmup_, total_;
};

}  // namespace unif::framework
