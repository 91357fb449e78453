// MPNetConfig: the config.json field MPNet alone reads (EncoderConfig::family<MPNetConfig>()).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "models/encoder_config.h"

namespace unif::models {

/// The buckets HF's MPNetEncoder.compute_position_bias looks up (its num_buckets default, which no
/// caller overrides): T5's bidirectional buckets 0..31, whatever relative_attention_num_buckets says.
inline constexpr int64_t kMPNetPositionBuckets = 32;

/// The rows of `encoder.relative_attention_bias` (relative_attention_num_buckets; HF reads rows 0..31
/// of it, so it must hold at least 32). Default: MPNetConfig's.
class MPNetConfig : public FamilyConfigOf<MPNetConfig> {
  TORCH_ARG(int64_t, relative_attention_num_buckets) = 32;

 public:
  void validate(const EncoderConfig& /*config*/) const override {
    config_checks::size(relative_attention_num_buckets(), "relative_attention_num_buckets", kMPNetPositionBuckets);
  }
};

}  // namespace unif::models
