// Precision (SPEC §7 training.precision) and its names, without Torch: the config reads and writes
// it; framework/common/precision.h adds what runs it (autocast, scalar types).
#pragma once
#include <array>

#include "framework/common/enum_names.h"

namespace unif {

enum class Precision { FP32, BF16, FP16 };

inline constexpr std::array<EnumName<Precision>, 3> kPrecisionNames{
    {{Precision::FP32, "fp32"}, {Precision::BF16, "bf16"}, {Precision::FP16, "fp16"}}};
constexpr const auto& enum_names(Precision) { return kPrecisionNames; }

}  // namespace unif
