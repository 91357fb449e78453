// The optimizer step's decisions (framework/train/step_policy.h) and the fp16 loss scaler's floor:
// a non-finite loss is a non-finite step before any loss-scaling decision; an overflow at the
// scale's floor is non-finite; Z = 0 is no update.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <torch/types.h>

#include "framework/common/precision.h"
#include "framework/common/runtime.h"
#include "framework/train/loss_scaler.h"
#include "framework/train/step_policy.h"

using namespace unif::framework;

TEST_CASE("step policy: a non-finite loss is non-finite under fp16 loss scaling too", "[unit][nonfinite]") {
  StepFacts f;
  f.scaled = true;
  f.loss_finite = false;
  f.grads_finite = false;  // a NaN loss gives NaN gradients: the scaler alone would only back off
  CHECK(step_outcome(f) == StepOutcome::NonFinite);
  f.loss_finite = true;
  CHECK(step_outcome(f) == StepOutcome::ScalerSkip);
  f.scale_at_floor = true;
  CHECK(step_outcome(f) == StepOutcome::NonFinite);
  f.grads_finite = true;
  CHECK(step_outcome(f) == StepOutcome::Update);
  f.empty = true;
  CHECK(step_outcome(f) == StepOutcome::Empty);
  StepFacts fp32;
  fp32.grads_finite = false;  // not scaled: the gradient norm decides later
  CHECK(step_outcome(fp32) == StepOutcome::Update);
}

TEST_CASE("loss scaler: the scale never goes below its floor", "[unit][nonfinite]") {
  LossScalerOptions o;
  o.init_scale = 8.0;
  o.min_scale = 1.0;
  LossScaler scaler(o);
  auto p = torch::zeros({2}).requires_grad_(true);
  for (int i = 0; i < 10; ++i) {
    p.mutable_grad() = torch::full({2}, std::numeric_limits<float>::infinity());
    CHECK_FALSE(scaler.unscale({p}));
    CHECK(scaler.update());
  }
  CHECK(scaler.scale() == 1.0);
  CHECK(scaler.at_floor());
  CHECK(scaler.skipped_steps() == 10);
  CHECK_THROWS(LossScaler(LossScalerOptions{1.0, 2.0, 0.5, 2000, 0.0}));
}

TEST_CASE("bf16 warning: decided by the CPU's bfloat16 instructions, as /proc/cpuinfo lists them",
          "[unit][precision]") {
  // A timed decision flipped on a busy machine (this fp32 product took 0.6 to 16 ms with two tests
  // at a time); the CPU's flags do not.
  std::ifstream in("/proc/cpuinfo");
  bool listed = false;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("flags", 0) == 0) {
      listed = line.find(" avx512_bf16") != std::string::npos || line.find(" amx_bf16") != std::string::npos;
      break;
    }
  CHECK(unif::cpu_features().bf16 == listed);
  for (int i = 0; i < 4; ++i) CHECK(unif::cpu_features().bf16 == listed);
}
