// freeze_parameters: training.freeze — the encoder's embeddings and/or its first N layers keep their
// values: their parameters stop requiring gradients, so no gradient is computed or reduced for them
// and the optimizer leaves them out (bert_param_groups skips them).
//
//   FreezeConfig f;  f.embeddings = true;  f.layers = 2;
//   const FrozenParameters frozen = freeze_parameters(model.named_parameters(), f);
//   // frozen.tensors, frozen.values: what the log reports
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "framework/config/run_config.h"

namespace unif::models {
struct Architecture;
}

namespace unif::framework {

struct FrozenParameters {
  int64_t tensors = 0;
  int64_t values = 0;   // elements
  int64_t layers = 0;   // the encoder's layer count (as models::encoder_layer_index sees them)
  std::string summary;  // "embeddings and layers 0-1: 24 tensors, 1.2M parameters frozen" ("" when none)
};

/// Freezes by name, by the encoder layout of `arch`'s family (models::encoder_depth; nullptr, a
/// model of no family: no parameter has a depth): embeddings = every parameter at depth 0, layers =
/// N freezes layers 0 .. N-1. UserError when training.freeze.layers exceeds the model's layer count
/// (in the family's unit: ALBERT counts layer groups).
FrozenParameters freeze_parameters(const std::vector<std::pair<std::string, torch::Tensor>>& named,
                                   const FreezeConfig& freeze, const models::Architecture* arch);

}  // namespace unif::framework
