// BertEncoder: see encoder.h.
#include "models/bert/encoder.h"

#include "models/layers/checkpoint.h"
#include "models/packing.h"

namespace unif::models {

BertEncoderImpl::BertEncoderImpl(EncoderConfig options_) : options(std::move(options_)) {
  options.validate();
  reset();
}

void BertEncoderImpl::reset() {
  layer = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.num_hidden_layers(); ++i) layer->push_back(BertLayer(options));
}

torch::Tensor BertEncoderImpl::forward(torch::Tensor hidden, const torch::Tensor& additive_mask, bool first_token_only,
                                       LayerTap* tap) {
  const size_t n = layer->size();
  const auto layers = static_cast<int64_t>(n);
  if (tap && tap->keep_hidden_states) first_token_only = false;
  tap_input(tap, [&] { return hidden; });
  if (const auto p = Packing::of(options, additive_mask, /*additive=*/true)) {
    torch::Tensor x = p->pack(hidden);  // (N, H): the real tokens
    for (size_t i = 0; i < n; ++i) {
      auto* block = layer[i]->as<BertLayerImpl>();
      if (first_token_only && i + 1 == n) {
        tap_layer(tap, layers, layers, {});
        const torch::Tensor padded = p->pad(x);
        return block->forward(padded, additive_mask, padded.narrow(1, 0, 1).contiguous());
      }
      x = checkpoint_layer(options.gradient_checkpointing(), *block,
                           [block, pk = *p, additive_mask](const std::vector<torch::Tensor>& in) {
                             return block->forward_packed(in[0], pk, additive_mask);
                           },
                           {x});
      if (tap_layer(tap, static_cast<int64_t>(i) + 1, layers, [&] { return p->pad(x); })) break;
    }
    return p->pad(x);
  }
  for (size_t i = 0; i < n; ++i) {
    auto* block = layer[i]->as<BertLayerImpl>();
    if (first_token_only && i + 1 == n) {
      tap_layer(tap, layers, layers, {});
      return block->forward(hidden, additive_mask, hidden.narrow(1, 0, 1).contiguous());
    }
    hidden = checkpoint_layer(
        options.gradient_checkpointing(), *block,
        [block, additive_mask](const std::vector<torch::Tensor>& in) { return block->forward(in[0], additive_mask); },
        {hidden});
    if (tap_layer(tap, static_cast<int64_t>(i) + 1, layers, [&] { return hidden; })) break;
  }
  return hidden;
}

}  // namespace unif::models
