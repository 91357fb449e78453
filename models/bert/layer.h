// One transformer block of BERT as HF: BertIntermediate (dense + hidden_act), BertOutput (dense,
// dropout, residual LayerNorm) and BertLayer (attention, intermediate, output).
#pragma once
#include "models/layers/dropout.h"
#include <functional>
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "models/bert/attention.h"
#include "models/encoder_config.h"

namespace unif::models {

struct Packing;

class BertIntermediateImpl : public torch::nn::Cloneable<BertIntermediateImpl> {
 public:
  explicit BertIntermediateImpl(EncoderConfig options);
  void reset() override;
  /// (B, L, H) -> (B, L, I)
  torch::Tensor forward(const torch::Tensor& hidden);

  EncoderConfig options;
  torch::nn::Linear dense{nullptr};  // (I, H)
  std::function<torch::Tensor(const torch::Tensor&)> act;
};
TORCH_MODULE(BertIntermediate);

class BertOutputImpl : public torch::nn::Cloneable<BertOutputImpl> {
 public:
  explicit BertOutputImpl(EncoderConfig options);
  void reset() override;
  /// LayerNorm(dropout(dense(hidden)) + input): hidden (B, L, I), input (B, L, H) -> (B, L, H).
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& input);

  EncoderConfig options;
  torch::nn::Linear dense{nullptr};          // (H, I)
  torch::nn::LayerNorm layer_norm{nullptr};  // registered as "LayerNorm"
  Dropout dropout{nullptr};
};
TORCH_MODULE(BertOutput);

class BertLayerImpl : public torch::nn::Cloneable<BertLayerImpl> {
 public:
  explicit BertLayerImpl(EncoderConfig options);
  void reset() override;
  /// hidden (B, L, H), additive_mask (B, 1, 1, L) -> (B, L, H); with `queries` (B, Lq, H) the
  /// block's output at those positions only, (B, Lq, H) (BertSelfAttention).
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask = {},
                        const torch::Tensor& queries = {});
  /// The same block on a batch's real tokens x (N, H) (packing.h); attention on the padded
  /// rectangle with additive_mask (B, 1, 1, L) -> (N, H).
  torch::Tensor forward_packed(const torch::Tensor& x, const Packing& packing, const torch::Tensor& additive_mask);

  EncoderConfig options;
  BertAttention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertOutput output{nullptr};
};
TORCH_MODULE(BertLayer);

}  // namespace unif::models
