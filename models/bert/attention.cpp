// BERT self-attention modules: see attention.h. The arithmetic follows HF modeling_bert.py op by op
// so that float32 results agree to rounding.
#include "models/bert/attention.h"

#include <cmath>

#include "models/attention_capture.h"
#include "models/layers/linear.h"
#include "models/full_precision.h"

namespace unif::models {

BertSelfAttentionImpl::BertSelfAttentionImpl(EncoderConfig options_) : options(std::move(options_)) {
  options.validate();
  reset();
}

void BertSelfAttentionImpl::reset() {
  const int64_t h = options.hidden_size();
  query = register_module("query", torch::nn::Linear(h, h));
  key = register_module("key", torch::nn::Linear(h, h));
  value = register_module("value", torch::nn::Linear(h, h));
  dropout = register_module("dropout", Dropout(options.attention_probs_dropout_prob()));
}

torch::Tensor multi_head_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                   int64_t heads, const torch::Tensor& additive_mask, Dropout& dropout) {
  const int64_t width = q.size(2), head_size = width / heads;
  auto split = [&](const torch::Tensor& x) {  // (B, L, H) -> (B, heads, L, d)
    return x.view({x.size(0), x.size(1), heads, head_size}).permute({0, 2, 1, 3});
  };
  torch::Tensor scores = torch::matmul(split(q), split(k).transpose(-1, -2)) /
                         std::sqrt(static_cast<double>(head_size));  // (B, heads, Lq, L)
  if (additive_mask.defined()) scores = scores + additive_mask;
  offer_attention_scores(scores);
  // Softmax in float32 also under autocast (its matmuls give bfloat16 / float16 scores).
  torch::Tensor probs = dropout(torch::softmax(full_precision(scores), -1));
  torch::Tensor context = torch::matmul(probs, split(v)).permute({0, 2, 1, 3}).contiguous();  // (B, Lq, heads, d)
  return context.view({context.size(0), context.size(1), width});                             // (B, Lq, H)
}

torch::Tensor BertSelfAttentionImpl::forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask,
                                             const torch::Tensor& queries) {
  return multi_head_attention(linear(query, queries.defined() ? queries : hidden), linear(key, hidden),
                              linear(value, hidden), options.num_attention_heads(), additive_mask, dropout);
}

BertSelfOutputImpl::BertSelfOutputImpl(EncoderConfig options_) : options(std::move(options_)) {
  options.validate();
  reset();
}

void BertSelfOutputImpl::reset() {
  const int64_t h = options.hidden_size();
  dense = register_module("dense", torch::nn::Linear(h, h));
  layer_norm = register_module("LayerNorm",
                               torch::nn::LayerNorm(torch::nn::LayerNormOptions({h}).eps(options.layer_norm_eps())));
  dropout = register_module("dropout", Dropout(options.hidden_dropout_prob()));
}

torch::Tensor BertSelfOutputImpl::forward(const torch::Tensor& hidden, const torch::Tensor& input) {
  return layer_norm(dropout(linear(dense, hidden)) + input);
}

BertAttentionImpl::BertAttentionImpl(EncoderConfig options_) : options(std::move(options_)) {
  options.validate();
  reset();
}

void BertAttentionImpl::reset() {
  self = register_module("self", BertSelfAttention(options));
  output = register_module("output", BertSelfOutput(options));
}

torch::Tensor BertAttentionImpl::forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask,
                                         const torch::Tensor& queries) {
  return output(self(hidden, additive_mask, queries), queries.defined() ? queries : hidden);
}

}  // namespace unif::models
