// ALBERT: see family.h.
#include "models/albert/family.h"

#include <nlohmann/json.hpp>

#include "models/layers/checkpoint.h"
#include "models/layers/activations.h"
#include "models/bert/attention.h"
#include "models/bert/bert_model.h"
#include "models/bert/family.h"
#include "models/layers/init.h"
#include "models/layers/norm.h"
#include "models/layers/linear.h"
#include "models/full_precision.h"
#include "models/bert/fields.h"
#include "models/hf_fields.h"
#include "models/hf_json.h"
#include "models/packing.h"

namespace unif::models {

AlbertAttentionImpl::AlbertAttentionImpl(const EncoderConfig& o) : heads(o.num_attention_heads()) {
  const int64_t h = o.hidden_size();
  attention_dropout = register_module("attention_dropout", Dropout(o.attention_probs_dropout_prob()));
  output_dropout = register_module("output_dropout", Dropout(o.hidden_dropout_prob()));
  query = register_module("query", torch::nn::Linear(h, h));
  key = register_module("key", torch::nn::Linear(h, h));
  value = register_module("value", torch::nn::Linear(h, h));
  dense = register_module("dense", torch::nn::Linear(h, h));
  layer_norm = register_module("LayerNorm", ::unif::models::layer_norm(h, o.layer_norm_eps()));
}

torch::Tensor AlbertAttentionImpl::forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask,
                                           const torch::Tensor& queries) {
  const torch::Tensor& q = queries.defined() ? queries : hidden;
  const torch::Tensor context = multi_head_attention(linear(query, q), linear(key, hidden), linear(value, hidden),
                                                     heads, additive_mask, attention_dropout);
  return layer_norm(q + output_dropout(linear(dense, context)));
}

AlbertLayerImpl::AlbertLayerImpl(const EncoderConfig& o) : act(activation(o.hidden_act())) {
  full_layer_layer_norm = register_module("full_layer_layer_norm", layer_norm(o.hidden_size(), o.layer_norm_eps()));
  attention = register_module("attention", AlbertAttention(o));
  ffn = register_module("ffn", torch::nn::Linear(o.hidden_size(), o.intermediate_size()));
  ffn_output = register_module("ffn_output", torch::nn::Linear(o.intermediate_size(), o.hidden_size()));
}

torch::Tensor AlbertLayerImpl::forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask,
                                       const torch::Tensor& queries) {
  const torch::Tensor a = attention(hidden, additive_mask, queries);
  return full_layer_layer_norm(linear(ffn_output, act(linear(ffn, a))) + a);
}

torch::Tensor AlbertLayerImpl::forward_packed(const torch::Tensor& x, const Packing& packing,
                                              const torch::Tensor& additive_mask) {
  auto& att = *attention;
  const torch::Tensor context = packed_attention(packing, linear(att.query, x), linear(att.key, x),
                                                 linear(att.value, x), att.heads, additive_mask, att.attention_dropout);
  const torch::Tensor a = att.layer_norm(x + att.output_dropout(linear(att.dense, context)));
  return full_layer_layer_norm(linear(ffn_output, act(linear(ffn, a))) + a);
}

AlbertLayerGroupImpl::AlbertLayerGroupImpl(const EncoderConfig& o) {
  albert_layers = register_module("albert_layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.family<AlbertConfig>().inner_group_num(); ++i) albert_layers->push_back(AlbertLayer(o));
}

AlbertTransformerImpl::AlbertTransformerImpl(const EncoderConfig& o) : options(o) {
  embedding_hidden_mapping_in =
      register_module("embedding_hidden_mapping_in", torch::nn::Linear(o.embedding_width(), o.hidden_size()));
  albert_layer_groups = register_module("albert_layer_groups", torch::nn::ModuleList());
  for (int64_t g = 0; g < o.family<AlbertConfig>().num_hidden_groups(); ++g)
    albert_layer_groups->push_back(AlbertLayerGroup(o));
}

torch::Tensor AlbertTransformerImpl::forward(const torch::Tensor& embedded, const torch::Tensor& additive_mask,
                                             bool first_token_only, LayerTap* tap) {
  torch::Tensor x = linear(embedding_hidden_mapping_in, embedded);
  const int64_t layers = options.num_hidden_layers(), groups = options.family<AlbertConfig>().num_hidden_groups();
  if (tap && tap->keep_hidden_states) first_token_only = false;
  tap_input(tap, [&] { return x; });
  const auto packing = Packing::of(options, additive_mask, /*additive=*/true);
  if (packing) x = packing->pack(x);  // (N, H): the real tokens
  for (int64_t i = 0; i < layers; ++i) {
    // HF: int(i / (num_hidden_layers / num_hidden_groups)) in floating point.
    const auto group = static_cast<size_t>(static_cast<double>(i) / (static_cast<double>(layers) / groups));
    const auto& inner = *albert_layer_groups[group]->as<AlbertLayerGroupImpl>()->albert_layers;
    for (size_t j = 0; j < inner.size(); ++j) {
      auto* layer = inner[j]->as<AlbertLayerImpl>();
      const bool last = i + 1 == layers && j + 1 == inner.size();
      if (packing && first_token_only && last) {
        tap_layer(tap, layers, layers, {});
        const torch::Tensor padded = packing->pad(x);
        return layer->forward(padded, additive_mask, padded.narrow(1, 0, 1).contiguous());
      }
      if (first_token_only && last)
        x = layer->forward(x, additive_mask, x.narrow(1, 0, 1).contiguous());
      else
        x = checkpoint_layer(options.gradient_checkpointing(), *layer,
                             [layer, packing, additive_mask](const std::vector<torch::Tensor>& in) {
                               return packing ? layer->forward_packed(in[0], *packing, additive_mask)
                                              : layer->forward(in[0], additive_mask);
                             },
                             {x});
    }
    if (tap_layer(tap, i + 1, layers, [&] { return packing ? packing->pad(x) : x; })) break;
  }
  return packing ? packing->pad(x) : x;
}

AlbertModelImpl::AlbertModelImpl(EncoderConfig options_, bool add_pooling_layer) : options(std::move(options_)) {
  options.validate();
  embeddings = register_module("embeddings", BertEmbeddings(options));
  encoder = register_module("encoder", AlbertTransformer(options));
  if (add_pooling_layer)
    pooler = register_module("pooler", torch::nn::Linear(options.hidden_size(), options.hidden_size()));
  init_bert_weights(*this, options.initializer_range());
}

EncoderOutput AlbertModelImpl::encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                      const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                                      bool first_token_only, LayerTap* tap) {
  EncoderOutput out;
  out.embedding_output = embeddings->forward(torch::Tensor(), token_type_ids,
                                             embed_words(embeddings->word_embeddings, input_ids, word_embedding_delta));
  const auto& x = out.embedding_output;
  const torch::Tensor mask = attention_mask_or_ones(attention_mask, input_ids);
  out.last_hidden_state = encoder(x, extended_attention_mask(mask, x.scalar_type()), first_token_only, tap);
  tap_final(tap, options.num_hidden_layers(), out.last_hidden_state);
  if (pooler) out.pooler_output = torch::tanh(linear(pooler, out.last_hidden_state.select(1, 0)));
  return out;
}

namespace {

// AlbertMLMHead, registered as `predictions`.
class AlbertMlmHeadImpl : public torch::nn::Module {
 public:
  explicit AlbertMlmHeadImpl(const EncoderConfig& o) {
    layer_norm = register_module("LayerNorm", ::unif::models::layer_norm(o.embedding_width(), o.layer_norm_eps()));
    bias = register_parameter("bias", torch::zeros({o.vocab_size()}));
    dense = register_module("dense", torch::nn::Linear(o.hidden_size(), o.embedding_width()));
  }
  torch::nn::LayerNorm layer_norm{nullptr};
  torch::Tensor bias;
  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(AlbertMlmHead);

class AlbertLm : public LmHead {
 public:
  AlbertLm(torch::nn::Module& owner, EncoderModel& encoder)
      : encoder_(encoder), act_(activation(encoder.encoder_options().hidden_act())) {
    const EncoderConfig& o = encoder.encoder_options();
    head_ = owner.register_module("predictions", AlbertMlmHead(o));
    init_bert_weights(*head_, o.initializer_range());
  }
  torch::Tensor forward(const torch::Tensor& hidden) override {
    const torch::Tensor x = head_->layer_norm(full_precision(act_(linear(head_->dense, hidden))));
    return at::linear(x, encoder_.word_embeddings()->weight, head_->bias);
  }

 private:
  EncoderModel& encoder_;
  std::function<torch::Tensor(const torch::Tensor&)> act_;
  AlbertMlmHead head_{nullptr};
};

}  // namespace

std::shared_ptr<EncoderModel> make_albert_encoder(const EncoderConfig& options, bool add_pooling_layer) {
  return std::make_shared<AlbertModelImpl>(options, add_pooling_layer);
}

std::unique_ptr<LmHead> make_albert_lm_head(torch::nn::Module& owner, EncoderModel& encoder) {
  return std::make_unique<AlbertLm>(owner, encoder);
}

namespace {

struct AlbertFields {
  // AlbertConfig's defaults where BertConfig's differ.
  static void defaults(EncoderConfig& c) {
    c.vocab_size(30000).embedding_size(128).hidden_size(4096).num_attention_heads(64).intermediate_size(16384);
    c.hidden_act("gelu_new").hidden_dropout_prob(0.0).attention_probs_dropout_prob(0.0).classifier_dropout(0.1);
    c.family<AlbertConfig>() = AlbertConfig();
  }
  template <class V>
  static void visit(V& v) {
    using namespace hf_fields;
    BertFields::visit_common(v);
    // ALBERT's name is classifier_dropout_prob: classifier_dropout is read, then left out of the file.
    v("classifier_dropout", UNIF_HF_FIELD(classifier_dropout), kNullableProbability, kErased);
    v.custom("position_embedding_type", read_absolute_positions, write_absolute_positions);
    v("embedding_size", UNIF_HF_FIELD(embedding_size), kSize, WriteBy{write_embedding_width});
    v("num_hidden_groups", UNIF_HF_FAMILY_FIELD(AlbertConfig, num_hidden_groups), kSize);
    v("inner_group_num", UNIF_HF_FAMILY_FIELD(AlbertConfig, inner_group_num), kSize);
    v("classifier_dropout_prob", UNIF_HF_FIELD(classifier_dropout), kNullableProbability, kNullWhenNegative);
  }
};

}  // namespace

void check_albert_config(const HfJson& r, const EncoderConfig& o) {
  check_bert_config(r, o);
  if (o.family<AlbertConfig>().num_hidden_groups() > o.num_hidden_layers())
    r.fail("num_hidden_groups", "must be at most num_hidden_layers (" + std::to_string(o.num_hidden_layers()) +
                                    "), got " + std::to_string(o.family<AlbertConfig>().num_hidden_groups()));
}

std::vector<SizedTensor> albert_sized_tensors(const EncoderConfig& o) {
  const int64_t e = o.embedding_width(), h = o.hidden_size(), i = o.intermediate_size();
  // Layers with parameters of their own; the others share them.
  const double layers = static_cast<double>(o.family<AlbertConfig>().num_hidden_groups()) *
                        static_cast<double>(o.family<AlbertConfig>().inner_group_num());
  const std::string group = "encoder.albert_layer_groups.0.albert_layers.0.";
  return {{"embeddings.word_embeddings.weight", {o.vocab_size(), e}, "vocab_size, embedding_size"},
          {"embeddings.position_embeddings.weight",
           {o.max_position_embeddings(), e},
           "max_position_embeddings, embedding_size"},
          {"embeddings.token_type_embeddings.weight", {o.type_vocab_size(), e}, "type_vocab_size, embedding_size"},
          {"encoder.embedding_hidden_mapping_in.weight", {h, e}, "hidden_size, embedding_size"},
          {group + "attention.query.weight", {h, h}, "hidden_size, hidden_size", 4 * layers},
          {group + "ffn.weight", {i, h}, "intermediate_size, hidden_size", layers},
          {group + "ffn_output.weight", {h, i}, "hidden_size, intermediate_size", layers}};
}

Architecture albert_architecture() {
  Architecture a;
  a.model_type = "albert";
  a.class_prefix = "Albert";
  a.encoder_name = "albert";
  a.tokenizer = "SentencePiece";
  a.positions = PositionScheme::Absolute;
  a.token_type_ids = false;
  a.sequence_pooler = true;
  a.make_encoder = make_albert_encoder;
  a.make_sequence_head = make_bert_sequence_head;
  a.make_lm_head = make_albert_lm_head;
  a.tied_keys = {"predictions.decoder.weight", "predictions.decoder.bias"};
  a.check_config = check_albert_config;
  a.sized_tensors = albert_sized_tensors;
  a.layers.embeddings = {"embeddings.", "encoder.embedding_hidden_mapping_in."};
  a.layers.layers = "encoder.albert_layer_groups.";
  // The layers of a group share one set of weights: the group is the unit of freezing and LR decay.
  a.layers.unit =
      "layer groups (ALBERT's layers share the weights of their group, so freezing counts groups: num_hidden_groups)";
  use_hf_fields<AlbertFields>(a);
  return a;
}

}  // namespace unif::models
