// BertEncoder: the stack of BertLayer, registered as the ModuleList "layer" so that parameters are
// named `layer.N.…` as in HF checkpoints.
#pragma once
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "models/bert/layer.h"
#include "models/encoder_config.h"
#include "models/layer_tap.h"

namespace unif::models {

class BertEncoderImpl : public torch::nn::Cloneable<BertEncoderImpl> {
 public:
  explicit BertEncoderImpl(EncoderConfig options);
  void reset() override;
  /// hidden (B, L, H), additive_mask (B, 1, 1, L) -> (B, L, H). With first_token_only the last
  /// layer computes position 0 alone (every position still a key and value there) -> (B, 1, H),
  /// equal to the full output's first position: all that the pooler reads. `tap`: see layer_tap.h.
  torch::Tensor forward(torch::Tensor hidden, const torch::Tensor& additive_mask = {}, bool first_token_only = false,
                        LayerTap* tap = nullptr);

  EncoderConfig options;
  torch::nn::ModuleList layer{nullptr};  // num_hidden_layers x BertLayer
};
TORCH_MODULE(BertEncoder);

}  // namespace unif::models
