// BertEncoder: see encoder.h.
#include "models/bert/encoder.h"

namespace unif::models {

BertEncoderImpl::BertEncoderImpl(BertOptions options_) : options(std::move(options_)) {
  options.validate();
  reset();
}

void BertEncoderImpl::reset() {
  layer = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.num_hidden_layers(); ++i) layer->push_back(BertLayer(options));
}

torch::Tensor BertEncoderImpl::forward(torch::Tensor hidden, const torch::Tensor& additive_mask,
                                       bool first_token_only) {
  const size_t n = layer->size();
  if (options.unpad_inputs() && additive_mask.defined() && hidden.dim() == 3) {
    // The real tokens: additive mask 0 (padding has finfo.min).
    const int64_t b = hidden.size(0), l = hidden.size(1), h = hidden.size(2);
    const torch::Tensor idx = additive_mask.reshape({b * l}).eq(0).nonzero().squeeze(1);
    if (options.unpad(idx.size(0), b * l)) {
      auto pad = [&](const torch::Tensor& packed) {  // (N, H) -> (B, L, H), zeros at padding
        return torch::zeros({b * l, h}, packed.options()).index_copy(0, idx, packed).view({b, l, h});
      };
      torch::Tensor x = hidden.reshape({b * l, h}).index_select(0, idx);  // (N, H)
      for (size_t i = 0; i < n; ++i) {
        auto* block = layer[i]->as<BertLayerImpl>();
        if (first_token_only && i + 1 == n) {
          const torch::Tensor padded = pad(x);
          return block->forward(padded, additive_mask, padded.narrow(1, 0, 1).contiguous());
        }
        x = block->forward_packed(x, idx, b, l, additive_mask);
      }
      return pad(x);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    auto* block = layer[i]->as<BertLayerImpl>();
    if (first_token_only && i + 1 == n)
      return block->forward(hidden, additive_mask, hidden.narrow(1, 0, 1).contiguous());
    hidden = block->forward(hidden, additive_mask);
  }
  return hidden;
}

}  // namespace unif::models
