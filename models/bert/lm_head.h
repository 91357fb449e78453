// BERT's MLM head as HF's BertOnlyMLMHead, registered as `cls`: cls.predictions.transform (dense(H, H)
// → hidden_act → LayerNorm), then the decoder, whose weight IS the word embedding table and whose
// bias is `cls.predictions.bias` (V). Checkpoint keys: cls.predictions.transform.dense.{weight,bias},
// cls.predictions.transform.LayerNorm.{weight,bias}, cls.predictions.bias (HF's tied
// cls.predictions.decoder.{weight,bias} are dropped by loaders: the row's tied_keys).
#pragma once
#include <functional>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "models/encoder_config.h"

namespace unif::models {

/// cls.predictions.transform: dense → act → LayerNorm.
class MlmTransformImpl : public torch::nn::Module {
 public:
  explicit MlmTransformImpl(const EncoderConfig& options);
  torch::Tensor forward(const torch::Tensor& hidden);
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};  // "LayerNorm"

 private:
  std::function<torch::Tensor(const torch::Tensor&)> act_;
};
TORCH_MODULE(MlmTransform);

/// cls.predictions: transform + the output bias (V).
class MlmPredictionsImpl : public torch::nn::Module {
 public:
  explicit MlmPredictionsImpl(const EncoderConfig& options);
  MlmTransform transform{nullptr};
  torch::Tensor bias;
};
TORCH_MODULE(MlmPredictions);

/// cls (BertOnlyMLMHead).
class MlmHeadImpl : public torch::nn::Module {
 public:
  explicit MlmHeadImpl(const EncoderConfig& options);
  MlmPredictions predictions{nullptr};
};
TORCH_MODULE(MlmHead);

}  // namespace unif::models
