// AlbertConfig: the config.json fields ALBERT alone reads (EncoderConfig::family<AlbertConfig>()).
#pragma once
#include <cstdint>

#include "models/encoder_config.h"

namespace unif::models {

/// Layer groups (layers share the parameters of their group) and layers per group.
class AlbertConfig : public FamilyConfigOf<AlbertConfig> {
  TORCH_ARG(int64_t, num_hidden_groups) = 1;
  TORCH_ARG(int64_t, inner_group_num) = 1;

 public:
  void validate(const EncoderConfig& /*config*/) const override {
    config_checks::size(num_hidden_groups(), "num_hidden_groups");
    config_checks::size(inner_group_num(), "inner_group_num");
  }
};

}  // namespace unif::models
