// BERT self-attention modules: see attention.h. The arithmetic follows HF modeling_bert.py op by op
// so that float32 results agree to rounding.
#include "models/bert/attention.h"

#include <cmath>

#include "models/bert/linear.h"
#include "models/full_precision.h"

namespace unif::models {

BertSelfAttentionImpl::BertSelfAttentionImpl(BertOptions options_) : options(std::move(options_)) {
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

torch::Tensor BertSelfAttentionImpl::split_heads(const torch::Tensor& x) const {
  const int64_t heads = options.num_attention_heads();
  return x.view({x.size(0), x.size(1), heads, options.hidden_size() / heads}).permute({0, 2, 1, 3});
}

torch::Tensor BertSelfAttentionImpl::forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask,
                                             const torch::Tensor& queries) {
  torch::Tensor q = split_heads(linear(query, queries.defined() ? queries : hidden));  // (B, heads, Lq, d)
  torch::Tensor k = split_heads(linear(key, hidden));
  torch::Tensor v = split_heads(linear(value, hidden));
  const double head_size = static_cast<double>(options.hidden_size() / options.num_attention_heads());
  torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(head_size);  // (B, heads, L, L)
  if (additive_mask.defined()) scores = scores + additive_mask;
  // Softmax in float32 also under autocast (its matmuls give bfloat16 / float16 scores).
  torch::Tensor probs = dropout(torch::softmax(full_precision(scores), -1));
  torch::Tensor context = torch::matmul(probs, v).permute({0, 2, 1, 3}).contiguous();  // (B, L, heads, d)
  return context.view({context.size(0), context.size(1), options.hidden_size()});       // (B, L, H)
}

BertSelfOutputImpl::BertSelfOutputImpl(BertOptions options_) : options(std::move(options_)) {
  options.validate();
  reset();
}

void BertSelfOutputImpl::reset() {
  const int64_t h = options.hidden_size();
  dense = register_module("dense", torch::nn::Linear(h, h));
  layer_norm = register_module(
      "LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h}).eps(options.layer_norm_eps())));
  dropout = register_module("dropout", Dropout(options.hidden_dropout_prob()));
}

torch::Tensor BertSelfOutputImpl::forward(const torch::Tensor& hidden, const torch::Tensor& input) {
  return layer_norm(dropout(linear(dense, hidden)) + input);
}

BertAttentionImpl::BertAttentionImpl(BertOptions options_) : options(std::move(options_)) {
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
