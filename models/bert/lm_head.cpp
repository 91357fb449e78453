// BERT's MLM head: see lm_head.h.
#include "models/bert/lm_head.h"

#include "models/layers/activations.h"
#include "models/layers/linear.h"
#include "models/full_precision.h"

namespace unif::models {

MlmTransformImpl::MlmTransformImpl(const EncoderConfig& o) : act_(activation(o.hidden_act())) {
  dense = register_module("dense", torch::nn::Linear(o.hidden_size(), o.hidden_size()));
  layer_norm = register_module(
      "LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.hidden_size()}).eps(o.layer_norm_eps())));
}

// Under autocast the dense layer's output is bfloat16 / float16; LayerNorm runs on float32 (its
// weights' type, as the encoder's LayerNorms whose residual input is float32).
torch::Tensor MlmTransformImpl::forward(const torch::Tensor& hidden) {
  return layer_norm(full_precision(act_(linear(dense, hidden))));
}

MlmPredictionsImpl::MlmPredictionsImpl(const EncoderConfig& o) {
  transform = register_module("transform", MlmTransform(o));
  bias = register_parameter("bias", torch::zeros({o.vocab_size()}));
}

MlmHeadImpl::MlmHeadImpl(const EncoderConfig& o) { predictions = register_module("predictions", MlmPredictions(o)); }

}  // namespace unif::models
