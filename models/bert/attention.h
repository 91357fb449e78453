// Multi-head self-attention of BERT as HF: BertSelfAttention (query/key/value), BertSelfOutput
// (dense, dropout, residual LayerNorm) and BertAttention (self + output). Absolute positions only;
// no cross-attention, no key/value cache.
#pragma once
#include "models/layers/dropout.h"
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "models/encoder_config.h"

namespace unif::models {

class BertSelfAttentionImpl : public torch::nn::Cloneable<BertSelfAttentionImpl> {
 public:
  explicit BertSelfAttentionImpl(EncoderConfig options);
  void reset() override;

  /// hidden (B, L, H); additive_mask (B, 1, 1, L): 0 for real tokens, finfo(float).min for padding
  /// (undefined = none). Returns the context (B, L, H). With `queries` (B, Lq, H) defined, only
  /// those positions ask (keys and values still come from all of `hidden`): the context is
  /// (B, Lq, H), the rows of the full one at those positions.
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask = {},
                        const torch::Tensor& queries = {});

  EncoderConfig options;
  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr};  // (H, H) each
  Dropout dropout{nullptr};                                        // attention_probs_dropout_prob
};
TORCH_MODULE(BertSelfAttention);

/// softmax(q kᵀ / sqrt(d) + additive_mask) v over `heads` heads of d = H / heads: q (B, Lq, H), k and
/// v (B, L, H), additive_mask (B, 1, 1, L) or undefined -> the context (B, Lq, H). Dropout on the
/// probabilities. The attention of every family (BERT's self-attention, DistilBERT's, ALBERT's).
torch::Tensor multi_head_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                   int64_t heads, const torch::Tensor& additive_mask, Dropout& dropout);

class BertSelfOutputImpl : public torch::nn::Cloneable<BertSelfOutputImpl> {
 public:
  explicit BertSelfOutputImpl(EncoderConfig options);
  void reset() override;
  /// LayerNorm(dropout(dense(hidden)) + input). All (B, L, H).
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& input);

  EncoderConfig options;
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};  // registered as "LayerNorm"
  Dropout dropout{nullptr};
};
TORCH_MODULE(BertSelfOutput);

class BertAttentionImpl : public torch::nn::Cloneable<BertAttentionImpl> {
 public:
  explicit BertAttentionImpl(EncoderConfig options);
  void reset() override;
  /// hidden (B, L, H), additive_mask (B, 1, 1, L) -> (B, L, H); with `queries` (B, Lq, H) (see
  /// BertSelfAttention) -> (B, Lq, H), the residual taken from `queries`.
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask = {},
                        const torch::Tensor& queries = {});

  EncoderConfig options;
  BertSelfAttention self{nullptr};  // registered as "self"
  BertSelfOutput output{nullptr};
};
TORCH_MODULE(BertAttention);

}  // namespace unif::models
