// MPNet: see family.h. Every step follows transformers 5.25's modeling_mpnet.py in the same order and
// dtypes, so float32 results agree with HF's to rounding.
#include "models/mpnet/family.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "models/layers/checkpoint.h"
#include "models/bert/family.h"
#include "models/hf_fields.h"
#include "models/hf_json.h"
#include "models/layers/init.h"
#include "models/layers/linear.h"
#include "models/layers/norm.h"
#include "models/packing.h"
#include "models/roberta/family.h"

namespace unif::models {

namespace {

const MPNetConfig& mpnet(const EncoderConfig& c) { return c.family<MPNetConfig>(); }

}  // namespace

torch::Tensor mpnet_relative_position_bucket(const torch::Tensor& relative_position, int64_t num_buckets,
                                             int64_t max_distance) {
  // n = -(j - i); keys after the query (n < 0) take the upper half of the buckets.
  torch::Tensor n = -relative_position;
  const int64_t half = num_buckets / 2;
  torch::Tensor ret = n.lt(0).to(torch::kLong) * half;
  n = torch::abs(n);
  const int64_t max_exact = half / 2;
  const torch::Tensor is_small = n.lt(max_exact);
  // float32 as HF's n.float(): log(n / max_exact) / log(max_distance / max_exact) * (half - max_exact).
  torch::Tensor large =
      (torch::log(n.to(torch::kFloat) / max_exact) /
       std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact)) * (half - max_exact))
          .to(torch::kLong) +
      max_exact;
  large = torch::clamp_max(large, half - 1);
  return ret + torch::where(is_small, n, large);
}

// ------------------------------------------------------------------------------------------ embeddings

MPNetEmbeddingsImpl::MPNetEmbeddingsImpl(const EncoderConfig& o)
    : max_position_embeddings(o.max_position_embeddings()) {
  const int64_t h = o.hidden_size();
  word_embeddings = register_module(
      "word_embeddings",
      torch::nn::Embedding(
          torch::nn::EmbeddingOptions(o.vocab_size(), h).padding_idx(kMPNetPaddingIdx).sparse(o.sparse_embeddings())));
  position_embeddings = register_module(
      "position_embeddings",
      torch::nn::Embedding(torch::nn::EmbeddingOptions(o.max_position_embeddings(), h).padding_idx(kMPNetPaddingIdx)));
  layer_norm = register_module("LayerNorm", ::unif::models::layer_norm(h, o.layer_norm_eps()));
  dropout = register_module("dropout", Dropout(o.hidden_dropout_prob()));
}

torch::Tensor MPNetEmbeddingsImpl::forward(const torch::Tensor& words, const torch::Tensor& input_ids,
                                           const torch::Tensor& attention_mask) {
  const int64_t length = input_ids.size(1);
  if (length + kMPNetPaddingIdx >= max_position_embeddings)
    throw std::invalid_argument("sequence length " + std::to_string(length) + " exceeds max_position_embeddings (" +
                                std::to_string(max_position_embeddings) + ") less padding_idx + 1 (" +
                                std::to_string(kMPNetPaddingIdx + 1) + ")");
  // create_position_ids_from_input_ids: 1 + the count of real tokens up to here; 1 for padding, which
  // the attention mask also marks (unif pads batches with id 0, not <pad>).
  torch::Tensor real = input_ids.ne(kMPNetPaddingIdx).to(torch::kInt);
  if (attention_mask.defined()) real = real * attention_mask.to(torch::kInt);
  const torch::Tensor positions = (torch::cumsum(real, 1).to(torch::kInt) * real).to(torch::kLong) + kMPNetPaddingIdx;
  return dropout(layer_norm(words + position_embeddings(positions)));
}

// ------------------------------------------------------------------------------------------ layers

MPNetSelfAttentionImpl::MPNetSelfAttentionImpl(const EncoderConfig& options) : heads(options.num_attention_heads()) {
  const int64_t h = options.hidden_size();
  q = register_module("q", torch::nn::Linear(h, h));
  k = register_module("k", torch::nn::Linear(h, h));
  v = register_module("v", torch::nn::Linear(h, h));
  o = register_module("o", torch::nn::Linear(h, h));
  dropout = register_module("dropout", Dropout(options.attention_probs_dropout_prob()));
}

torch::Tensor MPNetSelfAttentionImpl::forward(const torch::Tensor& hidden, const torch::Tensor& additive,
                                              const torch::Tensor& queries) {
  // softmax(q·kᵀ/√d + bias + mask) v: the bias and the mask come summed (0 + bias at real keys, so
  // the same scores as HF's two additions there; finfo.min at padding either way).
  const torch::Tensor context = multi_head_attention(linear(q, queries.defined() ? queries : hidden), linear(k, hidden),
                                                     linear(v, hidden), heads, additive, dropout);
  return linear(o, context);
}

MPNetAttentionImpl::MPNetAttentionImpl(const EncoderConfig& o) {
  attn = register_module("attn", MPNetSelfAttention(o));
  layer_norm = register_module("LayerNorm", ::unif::models::layer_norm(o.hidden_size(), o.layer_norm_eps()));
  dropout = register_module("dropout", Dropout(o.hidden_dropout_prob()));
}

torch::Tensor MPNetAttentionImpl::forward(const torch::Tensor& hidden, const torch::Tensor& additive,
                                          const torch::Tensor& queries) {
  return layer_norm(dropout(attn(hidden, additive, queries)) + (queries.defined() ? queries : hidden));
}

torch::Tensor MPNetAttentionImpl::forward_packed(const torch::Tensor& x, const Packing& packing,
                                                 const torch::Tensor& additive) {
  const torch::Tensor context = packed_attention(packing, linear(attn->q, x), linear(attn->k, x), linear(attn->v, x),
                                                 attn->heads, additive, attn->dropout);  // (N, H)
  return layer_norm(dropout(linear(attn->o, context)) + x);
}

MPNetLayerImpl::MPNetLayerImpl(const EncoderConfig& o) {
  attention = register_module("attention", MPNetAttention(o));
  intermediate = register_module("intermediate", BertIntermediate(o));
  output = register_module("output", BertOutput(o));
}

torch::Tensor MPNetLayerImpl::forward(const torch::Tensor& hidden, const torch::Tensor& additive,
                                      const torch::Tensor& queries) {
  const torch::Tensor a = attention(hidden, additive, queries);
  return output(intermediate(a), a);
}

torch::Tensor MPNetLayerImpl::forward_packed(const torch::Tensor& x, const Packing& packing,
                                             const torch::Tensor& additive) {
  const torch::Tensor a = attention->forward_packed(x, packing, additive);
  return output(intermediate(a), a);
}

// ------------------------------------------------------------------------------------------ encoder

MPNetEncoderImpl::MPNetEncoderImpl(const EncoderConfig& o) : options(o) {
  layer = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.num_hidden_layers(); ++i) layer->push_back(MPNetLayer(o));
  relative_attention_bias =
      register_module("relative_attention_bias",
                      torch::nn::Embedding(mpnet(o).relative_attention_num_buckets(), o.num_attention_heads()));
}

torch::Tensor MPNetEncoderImpl::position_bias(int64_t length, const torch::Device& device) {
  // compute_position_bias: memory - context positions of arange(L), bucketed, looked up: (1, heads, L, L).
  const torch::Tensor ids = torch::arange(length, torch::TensorOptions().dtype(torch::kLong).device(device));
  const torch::Tensor buckets = mpnet_relative_position_bucket(ids.unsqueeze(0) - ids.unsqueeze(1));
  return relative_attention_bias(buckets).permute({2, 0, 1}).unsqueeze(0);
}

torch::Tensor MPNetEncoderImpl::forward(torch::Tensor hidden, const torch::Tensor& attention_mask,
                                        bool first_token_only, LayerTap* tap) {
  const torch::Tensor mask = extended_attention_mask(attention_mask, hidden.scalar_type());  // (B, 1, 1, L)
  // The bias every layer adds, and the mask after it: (B, heads, L, L).
  const torch::Tensor additive = position_bias(hidden.size(1), hidden.device()) + mask;
  const size_t n = layer->size();
  const auto layers = static_cast<int64_t>(n);
  if (tap && tap->keep_hidden_states) first_token_only = false;
  tap_input(tap, [&] { return hidden; });
  auto last_first_token = [&](MPNetLayerImpl* block, const torch::Tensor& padded) {
    tap_layer(tap, layers, layers, {});
    return block->forward(padded, additive.narrow(2, 0, 1), padded.narrow(1, 0, 1).contiguous());
  };
  if (const auto p = Packing::of(options, mask, /*additive=*/true)) {
    torch::Tensor x = p->pack(hidden);  // (N, H): the real tokens
    for (size_t i = 0; i < n; ++i) {
      auto* block = layer[i]->as<MPNetLayerImpl>();
      if (first_token_only && i + 1 == n) return last_first_token(block, p->pad(x));
      // The position bias is an input: its table's gradient comes back through the checkpoint.
      x = checkpoint_layer(
          options.gradient_checkpointing(), *block,
          [block, pk = *p](const std::vector<torch::Tensor>& in) { return block->forward_packed(in[0], pk, in[1]); },
          {x, additive});
      if (tap_layer(tap, static_cast<int64_t>(i) + 1, layers, [&] { return p->pad(x); })) break;
    }
    return p->pad(x);
  }
  for (size_t i = 0; i < n; ++i) {
    auto* block = layer[i]->as<MPNetLayerImpl>();
    if (first_token_only && i + 1 == n) return last_first_token(block, hidden);
    hidden = checkpoint_layer(options.gradient_checkpointing(), *block,
                              [block](const std::vector<torch::Tensor>& in) { return block->forward(in[0], in[1]); },
                              {hidden, additive});
    if (tap_layer(tap, static_cast<int64_t>(i) + 1, layers, [&] { return hidden; })) break;
  }
  return hidden;
}

MPNetModelImpl::MPNetModelImpl(EncoderConfig options_, bool add_pooling_layer) : options(std::move(options_)) {
  options.validate();
  embeddings = register_module("embeddings", MPNetEmbeddings(options));
  encoder = register_module("encoder", MPNetEncoder(options));
  if (add_pooling_layer) pooler = register_module("pooler", BertPooler(options));
  init_bert_weights(*this, options.initializer_range());
}

EncoderOutput MPNetModelImpl::encode(const torch::Tensor& input_ids, const torch::Tensor& /*token_type_ids*/,
                                     const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                                     bool first_token_only, LayerTap* tap) {
  EncoderOutput out;
  const torch::Tensor mask = attention_mask_or_ones(attention_mask, input_ids);
  out.embedding_output =
      embeddings(embed_words(embeddings->word_embeddings, input_ids, word_embedding_delta), input_ids, mask);
  out.last_hidden_state = encoder(out.embedding_output, mask, first_token_only, tap);
  tap_final(tap, options.num_hidden_layers(), out.last_hidden_state);
  if (pooler) out.pooler_output = pooler(out.last_hidden_state);
  return out;
}

std::shared_ptr<EncoderModel> make_mpnet_encoder(const EncoderConfig& options, bool add_pooling_layer) {
  return std::make_shared<MPNetModelImpl>(options, add_pooling_layer);
}

// ------------------------------------------------------------------------------------------ config.json

namespace {

// MPNetConfig's keys: BertConfig's less type_vocab_size and position_embedding_type, with
// relative_attention_num_buckets.
struct MPNetFields {
  static void defaults(EncoderConfig& c) {
    c.vocab_size(30527).hidden_size(768).num_hidden_layers(12).num_attention_heads(12).intermediate_size(3072);
    c.hidden_act("gelu").hidden_dropout_prob(0.1).attention_probs_dropout_prob(0.1).max_position_embeddings(512);
    c.initializer_range(0.02).layer_norm_eps(1e-12).pad_token_id(1).type_vocab_size(1);
    c.family<MPNetConfig>() = MPNetConfig();
  }
  template <class V>
  static void visit(V& v) {
    using namespace hf_fields;
    BertFields::visit_common(v, /*token_types=*/false);
    v("relative_attention_num_buckets", UNIF_HF_FAMILY_FIELD(MPNetConfig, relative_attention_num_buckets), kSize);
  }
};

}  // namespace

void check_mpnet_config(const HfJson& r, const EncoderConfig& o) {
  check_bert_relations(r, o);
  if (o.max_position_embeddings() <= kMPNetPaddingIdx + 1)
    r.fail("max_position_embeddings", "must be > padding_idx + 1 (" + std::to_string(kMPNetPaddingIdx + 1) +
                                          ": positions start after MPNet's padding_idx 1), got " +
                                          std::to_string(o.max_position_embeddings()));
  if (mpnet(o).relative_attention_num_buckets() < kMPNetPositionBuckets)
    r.fail("relative_attention_num_buckets",
           "must be at least " + std::to_string(kMPNetPositionBuckets) +
               " (HF's MPNet looks up 32 relative-position buckets whatever the table holds), got " +
               std::to_string(mpnet(o).relative_attention_num_buckets()));
}

std::vector<SizedTensor> mpnet_sized_tensors(const EncoderConfig& o) {
  const int64_t h = o.hidden_size(), i = o.intermediate_size();
  const auto l = static_cast<double>(o.num_hidden_layers());
  return {{"embeddings.word_embeddings.weight", {o.vocab_size(), h}, "vocab_size, hidden_size"},
          {"embeddings.position_embeddings.weight",
           {o.max_position_embeddings(), h},
           "max_position_embeddings, hidden_size"},
          {"encoder.relative_attention_bias.weight",
           {mpnet(o).relative_attention_num_buckets(), o.num_attention_heads()},
           "relative_attention_num_buckets, num_attention_heads"},
          {"encoder.layer.0.attention.attn.q.weight", {h, h}, "hidden_size, hidden_size", 4 * l},
          {"encoder.layer.0.intermediate.dense.weight", {i, h}, "intermediate_size, hidden_size", l},
          {"encoder.layer.0.output.dense.weight", {h, i}, "hidden_size, intermediate_size", l}};
}

Architecture mpnet_architecture() {
  Architecture a;
  a.model_type = "mpnet";
  a.class_prefix = "MPNet";
  a.encoder_name = "mpnet";
  a.tokenizer = "WordPieceMPNet";
  a.positions = PositionScheme::Offset;
  a.position_padding_idx = kMPNetPaddingIdx;
  a.token_type_ids = false;
  a.sequence_pooler = false;
  a.make_encoder = make_mpnet_encoder;
  a.make_sequence_head = make_roberta_sequence_head;
  a.make_lm_head = make_roberta_lm_head;
  a.tied_keys = {"lm_head.decoder.weight", "lm_head.decoder.bias"};
  a.check_config = check_mpnet_config;
  a.sized_tensors = mpnet_sized_tensors;
  a.layers.embeddings = {"embeddings."};
  a.layers.layers = "encoder.layer.";
  // The relative-position bias: every layer reads it, from the first on (not the input embeddings:
  // training.freeze.embeddings leaves it).
  a.layers.with_first_layer = {"encoder.relative_attention_bias."};
  use_hf_fields<MPNetFields>(a);
  return a;
}

}  // namespace unif::models
