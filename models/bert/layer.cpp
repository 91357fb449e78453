// One BERT transformer block: see layer.h.
#include "models/bert/layer.h"

#include "models/layers/activations.h"
#include "models/bert/attention.h"
#include "models/packing.h"
#include "models/layers/linear.h"

namespace unif::models {

BertIntermediateImpl::BertIntermediateImpl(EncoderConfig options_) : options(std::move(options_)) {
  options.validate();
  reset();
}

void BertIntermediateImpl::reset() {
  dense = register_module("dense", torch::nn::Linear(options.hidden_size(), options.intermediate_size()));
  act = activation(options.hidden_act());
}

torch::Tensor BertIntermediateImpl::forward(const torch::Tensor& hidden) { return act(linear(dense, hidden)); }

BertOutputImpl::BertOutputImpl(EncoderConfig options_) : options(std::move(options_)) {
  options.validate();
  reset();
}

void BertOutputImpl::reset() {
  dense = register_module("dense", torch::nn::Linear(options.intermediate_size(), options.hidden_size()));
  layer_norm = register_module(
      "LayerNorm",
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({options.hidden_size()}).eps(options.layer_norm_eps())));
  dropout = register_module("dropout", Dropout(options.hidden_dropout_prob()));
}

torch::Tensor BertOutputImpl::forward(const torch::Tensor& hidden, const torch::Tensor& input) {
  return layer_norm(dropout(linear(dense, hidden)) + input);
}

BertLayerImpl::BertLayerImpl(EncoderConfig options_) : options(std::move(options_)) {
  options.validate();
  reset();
}

void BertLayerImpl::reset() {
  attention = register_module("attention", BertAttention(options));
  intermediate = register_module("intermediate", BertIntermediate(options));
  output = register_module("output", BertOutput(options));
}

torch::Tensor BertLayerImpl::forward_packed(const torch::Tensor& x, const Packing& packing,
                                            const torch::Tensor& additive_mask) {
  auto& self = attention->self;
  const torch::Tensor context = packed_attention(packing, linear(self->query, x), linear(self->key, x),
                                                 linear(self->value, x), options.num_attention_heads(), additive_mask,
                                                 self->dropout);  // (N, H)
  const torch::Tensor attended = attention->output(context, x);
  return output(intermediate(attended), attended);
}

torch::Tensor BertLayerImpl::forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask,
                                     const torch::Tensor& queries) {
  torch::Tensor attended = attention(hidden, additive_mask, queries);  // (B, L or Lq, H)
  return output(intermediate(attended), attended);
}

}  // namespace unif::models
