// Precision (SPEC §7 training.precision) and its names, without Torch: the config reads and writes
// it; framework/common/precision.h adds what runs it (autocast, scalar types).
#pragma once
#include <array>

#include "framework/common/enum_names.h"

namespace unif {

/// Auto: measured at start-up, bf16 where it is faster on the device at the model's shapes, else
/// fp32 (choose_precision in precision.h); never what a pass runs in.
enum class Precision { FP32, BF16, FP16, Auto };

inline constexpr std::array<EnumName<Precision>, 4> kPrecisionNames{
    {{Precision::FP32, "fp32"}, {Precision::BF16, "bf16"}, {Precision::FP16, "fp16"}, {Precision::Auto, "auto"}}};
constexpr const auto& enum_names(Precision) { return kPrecisionNames; }

}  // namespace unif
