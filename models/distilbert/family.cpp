// DistilBERT: see family.h.
#include "models/distilbert/family.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "models/layers/checkpoint.h"
#include "models/layers/activations.h"
#include "models/bert/attention.h"
#include "models/bert/bert_model.h"
#include "models/layers/init.h"
#include "models/layers/linear.h"
#include "models/full_precision.h"
#include "models/heads/family_parts.h"
#include "models/hf_fields.h"
#include "models/hf_json.h"
#include "models/packing.h"

namespace unif::models {

namespace {
constexpr double kDistilBertLayerNormEps = 1e-12;  // fixed in HF's modules, not a config key

torch::nn::LayerNorm layer_norm(int64_t width) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).eps(kDistilBertLayerNormEps));
}
}  // namespace

DistilBertAttentionImpl::DistilBertAttentionImpl(const EncoderConfig& o) : heads(o.num_attention_heads()) {
  const int64_t h = o.hidden_size();
  q_lin = register_module("q_lin", torch::nn::Linear(h, h));
  k_lin = register_module("k_lin", torch::nn::Linear(h, h));
  v_lin = register_module("v_lin", torch::nn::Linear(h, h));
  out_lin = register_module("out_lin", torch::nn::Linear(h, h));
  dropout = register_module("dropout", Dropout(o.attention_probs_dropout_prob()));
}

torch::Tensor DistilBertAttentionImpl::forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask,
                                               const torch::Tensor& queries) {
  return linear(out_lin,
                multi_head_attention(linear(q_lin, queries.defined() ? queries : hidden), linear(k_lin, hidden),
                                     linear(v_lin, hidden), heads, additive_mask, dropout));
}

DistilBertFfnImpl::DistilBertFfnImpl(const EncoderConfig& o) : act(activation(o.hidden_act())) {
  dropout = register_module("dropout", Dropout(o.hidden_dropout_prob()));
  lin1 = register_module("lin1", torch::nn::Linear(o.hidden_size(), o.intermediate_size()));
  lin2 = register_module("lin2", torch::nn::Linear(o.intermediate_size(), o.hidden_size()));
}

torch::Tensor DistilBertFfnImpl::forward(const torch::Tensor& x) { return dropout(linear(lin2, act(linear(lin1, x)))); }

DistilBertBlockImpl::DistilBertBlockImpl(const EncoderConfig& o) {
  attention = register_module("attention", DistilBertAttention(o));
  sa_layer_norm = register_module("sa_layer_norm", layer_norm(o.hidden_size()));
  ffn = register_module("ffn", DistilBertFfn(o));
  output_layer_norm = register_module("output_layer_norm", layer_norm(o.hidden_size()));
}

torch::Tensor DistilBertBlockImpl::forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask,
                                           const torch::Tensor& queries) {
  const torch::Tensor a =
      sa_layer_norm(attention(hidden, additive_mask, queries) + (queries.defined() ? queries : hidden));
  return output_layer_norm(ffn(a) + a);
}

torch::Tensor DistilBertBlockImpl::forward_packed(const torch::Tensor& x, const Packing& packing,
                                                  const torch::Tensor& additive_mask) {
  auto& att = *attention;
  const torch::Tensor context = packed_attention(packing, linear(att.q_lin, x), linear(att.k_lin, x),
                                                 linear(att.v_lin, x), att.heads, additive_mask, att.dropout);
  const torch::Tensor a = sa_layer_norm(linear(att.out_lin, context) + x);
  return output_layer_norm(ffn(a) + a);
}

DistilBertTransformerImpl::DistilBertTransformerImpl(const EncoderConfig& o) {
  layer = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.num_hidden_layers(); ++i) layer->push_back(DistilBertBlock(o));
}

DistilBertModelImpl::DistilBertModelImpl(EncoderConfig options_) : options(std::move(options_)) {
  options.validate();
  embeddings = register_module("embeddings", BertEmbeddings(options, /*token_types=*/false));
  transformer = register_module("transformer", DistilBertTransformer(options));
  init_bert_weights(*this, options.initializer_range());
  if (options.family<DistilBertConfig>().sinusoidal_pos_embds()) {
    // HF's create_sinusoidal_embeddings: sin on even columns, cos on odd ones; fixed.
    torch::NoGradGuard no_grad;
    auto& w = embeddings->position_embeddings->weight;
    const int64_t n = w.size(0), dim = w.size(1);
    auto acc = w.accessor<float, 2>();
    for (int64_t pos = 0; pos < n; ++pos)
      for (int64_t j = 0; j < dim; ++j) {
        const double angle = static_cast<double>(pos) / std::pow(10000.0, 2.0 * static_cast<double>(j / 2) / dim);
        acc[pos][j] = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
      }
    w.set_requires_grad(false);
  }
}

EncoderOutput DistilBertModelImpl::encode(const torch::Tensor& input_ids, const torch::Tensor& /*token_type_ids*/,
                                          const torch::Tensor& attention_mask,
                                          const torch::Tensor& word_embedding_delta, bool first_token_only,
                                          LayerTap* tap) {
  EncoderOutput out;
  out.embedding_output = embeddings->forward(torch::Tensor(), torch::Tensor(),
                                             embed_words(embeddings->word_embeddings, input_ids, word_embedding_delta));
  torch::Tensor x = out.embedding_output;
  const torch::Tensor mask =
      extended_attention_mask(attention_mask_or_ones(attention_mask, input_ids), x.scalar_type());
  const size_t n = transformer->layer->size();
  const auto layers = static_cast<int64_t>(n);
  if (tap && tap->keep_hidden_states) first_token_only = false;
  tap_input(tap, [&] { return x; });
  if (const auto p = Packing::of(options, mask, /*additive=*/true)) {
    x = p->pack(x);  // (N, H): the real tokens
    for (size_t i = 0; i < n; ++i) {
      auto* block = transformer->layer[i]->as<DistilBertBlockImpl>();
      if (first_token_only && i + 1 == n) {
        tap_layer(tap, layers, layers, {});
        const torch::Tensor padded = p->pad(x);
        out.last_hidden_state = block->forward(padded, mask, padded.narrow(1, 0, 1).contiguous());
        return out;
      }
      x = checkpoint_layer(options.gradient_checkpointing(), *block,
                           [block, pk = *p, mask](const std::vector<torch::Tensor>& in) {
                             return block->forward_packed(in[0], pk, mask);
                           },
                           {x});
      if (tap_layer(tap, static_cast<int64_t>(i) + 1, layers, [&] { return p->pad(x); })) break;
    }
    out.last_hidden_state = p->pad(x);
    tap_final(tap, layers, out.last_hidden_state);
    return out;
  }
  for (size_t i = 0; i < n; ++i) {
    auto* block = transformer->layer[i]->as<DistilBertBlockImpl>();
    // first_token_only: the last block computes position 0 alone (a head reading it only).
    x = first_token_only && i + 1 == n
            ? block->forward(x, mask, x.narrow(1, 0, 1).contiguous())
            : checkpoint_layer(
                  options.gradient_checkpointing(), *block,
                  [block, mask](const std::vector<torch::Tensor>& in) { return block->forward(in[0], mask); }, {x});
    if (tap_layer(tap, static_cast<int64_t>(i) + 1, layers, [&] { return x; })) break;
  }
  out.last_hidden_state = x;
  tap_final(tap, layers, out.last_hidden_state);
  return out;
}

namespace {

class DistilBertSequenceHead : public SequenceHead {
 public:
  DistilBertSequenceHead(torch::nn::Module& owner, const EncoderConfig& o, int64_t num_labels) {
    pre_classifier_ = owner.register_module("pre_classifier", torch::nn::Linear(o.hidden_size(), o.hidden_size()));
    classifier_ = owner.register_module("classifier", torch::nn::Linear(o.hidden_size(), num_labels));
    dropout_ =
        owner.register_module("dropout", Dropout(std::max(0.0, o.family<DistilBertConfig>().seq_classif_dropout())));
    init_bert_weights(*pre_classifier_, o.initializer_range());
    init_bert_weights(*classifier_, o.initializer_range());
  }
  torch::Tensor forward(const EncoderOutput& encoded) override {
    const torch::Tensor pooled = torch::relu(linear(pre_classifier_, encoded.last_hidden_state.select(1, 0)));
    return linear(classifier_, dropout_(pooled));
  }

 private:
  torch::nn::Linear pre_classifier_{nullptr}, classifier_{nullptr};
  Dropout dropout_{nullptr};
};

class DistilBertLm : public LmHead {
 public:
  DistilBertLm(torch::nn::Module& owner, EncoderModel& encoder)
      : encoder_(encoder), act_(activation(encoder.encoder_options().hidden_act())) {
    const EncoderConfig& o = encoder.encoder_options();
    transform_ = owner.register_module("vocab_transform", torch::nn::Linear(o.hidden_size(), o.hidden_size()));
    norm_ = owner.register_module("vocab_layer_norm", layer_norm(o.hidden_size()));
    projector_ = owner.register_module("vocab_projector", TiedDecoder(o.vocab_size()));
    init_bert_weights(*transform_, o.initializer_range());
    init_bert_weights(*norm_, o.initializer_range());
  }
  torch::Tensor forward(const torch::Tensor& hidden) override {
    const torch::Tensor x = norm_(full_precision(act_(linear(transform_, hidden))));
    return projector_(x, encoder_.word_embeddings()->weight);
  }

 private:
  EncoderModel& encoder_;
  std::function<torch::Tensor(const torch::Tensor&)> act_;
  torch::nn::Linear transform_{nullptr};
  torch::nn::LayerNorm norm_{nullptr};
  TiedDecoder projector_{nullptr};
};

}  // namespace

std::shared_ptr<EncoderModel> make_distilbert_encoder(const EncoderConfig& options, bool /*add_pooling_layer*/) {
  return std::make_shared<DistilBertModelImpl>(options);
}

std::unique_ptr<SequenceHead> make_distilbert_sequence_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                            int64_t num_labels) {
  return std::make_unique<DistilBertSequenceHead>(owner, options, num_labels);
}

std::unique_ptr<LmHead> make_distilbert_lm_head(torch::nn::Module& owner, EncoderModel& encoder) {
  return std::make_unique<DistilBertLm>(owner, encoder);
}

namespace {

// DistilBertConfig's keys, its own names for BertConfig's fields.
struct DistilBertFields {
  static void defaults(EncoderConfig& c) {
    c.vocab_size(30522).max_position_embeddings(512).num_hidden_layers(6).num_attention_heads(12).hidden_size(768);
    c.intermediate_size(3072).hidden_dropout_prob(0.1).attention_probs_dropout_prob(0.1).hidden_act("gelu");
    c.initializer_range(0.02).pad_token_id(0).type_vocab_size(1);
    c.layer_norm_eps(kDistilBertLayerNormEps);
    c.family<DistilBertConfig>() = DistilBertConfig();  // qa_dropout 0.1, seq_classif_dropout 0.2
  }
  template <class V>
  static void visit(V& v) {
    using namespace hf_fields;
    using D = DistilBertConfig;
    v("vocab_size", UNIF_HF_FIELD(vocab_size), kSize);
    v("max_position_embeddings", UNIF_HF_FIELD(max_position_embeddings), kSize);
    v("sinusoidal_pos_embds", UNIF_HF_FAMILY_FIELD(D, sinusoidal_pos_embds));
    v("n_layers", UNIF_HF_FIELD(num_hidden_layers), kSize);
    v("n_heads", UNIF_HF_FIELD(num_attention_heads), kSize);
    v("dim", UNIF_HF_FIELD(hidden_size), kSize);
    v("hidden_dim", UNIF_HF_FIELD(intermediate_size), kSize);
    v("dropout", UNIF_HF_FIELD(hidden_dropout_prob), kProbability);
    v("attention_dropout", UNIF_HF_FIELD(attention_probs_dropout_prob), kProbability);
    v("activation", UNIF_HF_FIELD(hidden_act), kActivation);
    v("initializer_range", UNIF_HF_FIELD(initializer_range), kNonNegative);
    v("qa_dropout", UNIF_HF_FAMILY_FIELD(D, qa_dropout), kProbability, kAtLeastZero);
    v("seq_classif_dropout", UNIF_HF_FAMILY_FIELD(D, seq_classif_dropout), kProbability, kAtLeastZero);
    v("pad_token_id", UNIF_HF_FIELD(pad_token_id), kNullKeeps);
  }
};

}  // namespace

void check_distilbert_config(const HfJson& r, const EncoderConfig& o) {
  r.check_id("pad_token_id", o.pad_token_id(), "vocab_size", o.vocab_size());
  r.check_divides("n_heads", o.num_attention_heads(), "dim", o.hidden_size());
}

std::vector<SizedTensor> distilbert_sized_tensors(const EncoderConfig& o) {
  const int64_t h = o.hidden_size(), i = o.intermediate_size();
  const auto l = static_cast<double>(o.num_hidden_layers());
  return {{"embeddings.word_embeddings.weight", {o.vocab_size(), h}, "vocab_size, dim"},
          {"embeddings.position_embeddings.weight", {o.max_position_embeddings(), h}, "max_position_embeddings, dim"},
          {"transformer.layer.0.attention.q_lin.weight", {h, h}, "dim, dim", 4 * l},
          {"transformer.layer.0.ffn.lin1.weight", {i, h}, "hidden_dim, dim", l},
          {"transformer.layer.0.ffn.lin2.weight", {h, i}, "dim, hidden_dim", l}};
}

Architecture distilbert_architecture() {
  Architecture a;
  a.model_type = "distilbert";
  a.class_prefix = "DistilBert";
  a.encoder_name = "distilbert";
  a.tokenizer = "WordPiece";
  a.positions = PositionScheme::Absolute;
  a.token_type_ids = false;
  a.sequence_pooler = false;
  a.make_encoder = make_distilbert_encoder;
  a.make_sequence_head = make_distilbert_sequence_head;
  a.make_lm_head = make_distilbert_lm_head;
  a.tied_keys = {"vocab_projector.weight"};
  a.check_config = check_distilbert_config;
  a.sized_tensors = distilbert_sized_tensors;
  a.layers.embeddings = {"embeddings."};
  a.layers.layers = "transformer.layer.";
  use_hf_fields<DistilBertFields>(a);
  return a;
}

}  // namespace unif::models
