// DeBERTa-v2/v3: see family.h. Every step follows transformers 5.25's modeling_deberta_v2.py in the
// same order and dtypes, so float32 results agree with HF's to rounding.
#include "models/deberta_v2/family.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "models/layers/checkpoint.h"
#include "models/attention_capture.h"
#include "models/layers/activations.h"
#include "models/bert/family.h"
#include "models/layers/init.h"
#include "models/layers/norm.h"
#include "models/layers/linear.h"
#include "models/full_precision.h"
#include "models/bert/fields.h"
#include "models/hf_fields.h"
#include "models/hf_json.h"

namespace unif::models {

namespace {

const DebertaV2Config& deberta(const EncoderConfig& c) { return c.family<DebertaV2Config>(); }

bool has(const std::vector<std::string>& list, const char* what) {
  return std::find(list.begin(), list.end(), what) != list.end();
}

bool rel_layer_norm(const EncoderConfig& o) {
  // HF: [x.strip() for x in norm_rel_ebd.lower().split("|")] contains "layer_norm".
  std::string s = deberta(o).norm_rel_ebd();
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  size_t start = 0;
  while (start <= s.size()) {
    size_t bar = s.find('|', start);
    if (bar == std::string::npos) bar = s.size();
    std::string part = s.substr(start, bar - start);
    const auto b = part.find_first_not_of(" \t\n\r"), e = part.find_last_not_of(" \t\n\r");
    if (b != std::string::npos && part.substr(b, e - b + 1) == "layer_norm") return true;
    start = bar + 1;
  }
  return false;
}

int64_t max_relative(const EncoderConfig& o) {
  return deberta(o).max_relative_positions() < 1 ? o.max_position_embeddings() : deberta(o).max_relative_positions();
}

// HF's transpose_for_scores: (B, L, heads·d) -> (B·heads, L, d).
torch::Tensor for_scores(const torch::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, -1})
      .permute({0, 2, 1, 3})
      .contiguous()
      .view({-1, x.size(1), x.size(-1) / heads});
}

// HF's scaled_size_sqrt: sqrt(float32(d) * scale_factor), a 0-dim float32 tensor.
torch::Tensor scaled_size_sqrt(int64_t d, int64_t scale_factor, const torch::Device& device) {
  return torch::sqrt(torch::tensor(static_cast<float>(d), torch::TensorOptions().dtype(torch::kFloat).device(device)) *
                     scale_factor);
}

}  // namespace

torch::Tensor make_log_bucket_position(const torch::Tensor& relative_pos, int64_t bucket_size, int64_t max_position) {
  const torch::Tensor sign = torch::sign(relative_pos);
  const int64_t mid = bucket_size / 2;
  const torch::Tensor abs_pos = torch::where(relative_pos.lt(mid).logical_and(relative_pos.gt(-mid)),
                                             torch::tensor(mid - 1, relative_pos.options()), torch::abs(relative_pos));
  const auto fopt = torch::TensorOptions().dtype(torch::kFloat).device(relative_pos.device());
  // abs_pos / mid: true division of int64 by an int, float32 (the default dtype) as in Python.
  const torch::Tensor log_pos =
      torch::ceil(torch::log(abs_pos.to(torch::kFloat) / static_cast<double>(mid)) /
                  torch::log(torch::tensor(static_cast<double>(max_position - 1) / static_cast<double>(mid), fopt)) *
                  (mid - 1)) +
      mid;
  return torch::where(abs_pos.le(mid), relative_pos.to(log_pos.scalar_type()), log_pos * sign);
}

torch::Tensor build_relative_position(int64_t length, int64_t bucket_size, int64_t max_position,
                                      const torch::Device& device) {
  const torch::Tensor ids = torch::arange(length, torch::TensorOptions().dtype(torch::kLong).device(device));
  torch::Tensor rel = ids.unsqueeze(1) - ids.unsqueeze(0);
  if (bucket_size > 0 && max_position > 0) rel = make_log_bucket_position(rel, bucket_size, max_position);
  return rel.to(torch::kLong);
}

// ------------------------------------------------------------------------------------------ embeddings

DebertaV2EmbeddingsImpl::DebertaV2EmbeddingsImpl(const EncoderConfig& o) {
  const int64_t e = o.embedding_width();
  word_embeddings = register_module(
      "word_embeddings",
      torch::nn::Embedding(
          torch::nn::EmbeddingOptions(o.vocab_size(), e).padding_idx(o.pad_token_id()).sparse(o.sparse_embeddings())));
  if (deberta(o).position_biased_input())
    position_embeddings = register_module("position_embeddings", torch::nn::Embedding(o.max_position_embeddings(), e));
  if (o.type_vocab_size() > 0)
    token_type_embeddings = register_module("token_type_embeddings", torch::nn::Embedding(o.type_vocab_size(), e));
  if (e != o.hidden_size())
    embed_proj =
        register_module("embed_proj", torch::nn::Linear(torch::nn::LinearOptions(e, o.hidden_size()).bias(false)));
  layer_norm = register_module("LayerNorm", ::unif::models::layer_norm(o.hidden_size(), o.layer_norm_eps()));
  dropout = register_module("dropout", Dropout(o.hidden_dropout_prob()));
}

torch::Tensor DebertaV2EmbeddingsImpl::forward(const torch::Tensor& words, const torch::Tensor& token_type_ids,
                                               const torch::Tensor& mask) {
  torch::Tensor x = words;
  const int64_t length = words.size(1);
  if (position_embeddings) {
    if (length > position_embeddings->weight.size(0))
      throw std::invalid_argument("input of " + std::to_string(length) +
                                  " tokens is longer than max_position_embeddings (" +
                                  std::to_string(position_embeddings->weight.size(0)) + ")");
    x = x + position_embeddings(
                torch::arange(length, torch::TensorOptions().dtype(torch::kLong).device(words.device())).unsqueeze(0));
  }
  if (token_type_embeddings) {
    const torch::Tensor types =
        token_type_ids.defined()
            ? token_type_ids
            : torch::zeros({words.size(0), length}, torch::TensorOptions().dtype(torch::kLong).device(words.device()));
    x = x + token_type_embeddings(types);
  }
  if (embed_proj) x = at::linear(x, embed_proj->weight);
  x = layer_norm(x);
  x = x * mask.unsqueeze(2).to(x.scalar_type());
  return dropout(x);
}

// ------------------------------------------------------------------------------------------ attention

DisentangledSelfAttentionImpl::DisentangledSelfAttentionImpl(const EncoderConfig& o)
    : heads(o.num_attention_heads()),
      relative_attention(deberta(o).relative_attention()),
      share_att_key(deberta(o).share_att_key()),
      c2p(has(deberta(o).pos_att_type(), "c2p")),
      p2c(has(deberta(o).pos_att_type(), "p2c")) {
  const int64_t h = o.hidden_size();
  query_proj = register_module("query_proj", torch::nn::Linear(h, h));
  key_proj = register_module("key_proj", torch::nn::Linear(h, h));
  value_proj = register_module("value_proj", torch::nn::Linear(h, h));
  if (relative_attention) {
    pos_ebd_size = deberta(o).position_buckets() > 0 ? deberta(o).position_buckets() : max_relative(o);
    pos_dropout = register_module("pos_dropout", Dropout(o.hidden_dropout_prob()));
    if (!share_att_key) {
      if (c2p) pos_key_proj = register_module("pos_key_proj", torch::nn::Linear(h, h));
      if (p2c) pos_query_proj = register_module("pos_query_proj", torch::nn::Linear(h, h));
    }
  }
  dropout = register_module("dropout", Dropout(o.attention_probs_dropout_prob()));
}

torch::Tensor DisentangledSelfAttentionImpl::forward(const torch::Tensor& hidden, const torch::Tensor& mask,
                                                     const torch::Tensor& relative_pos,
                                                     const torch::Tensor& rel_embeddings) {
  const torch::Tensor query = for_scores(linear(query_proj, hidden), heads);
  const torch::Tensor key = for_scores(linear(key_proj, hidden), heads);
  const torch::Tensor value = for_scores(linear(value_proj, hidden), heads);

  const int64_t scale_factor = 1 + (c2p ? 1 : 0) + (p2c ? 1 : 0);
  const torch::Tensor scale = scaled_size_sqrt(query.size(-1), scale_factor, query.device());
  torch::Tensor scores = torch::bmm(query, key.transpose(-1, -2) / scale.to(query.scalar_type()));
  if (relative_attention) {
    const torch::Tensor bias = disentangled_bias(query, key, relative_pos, pos_dropout(rel_embeddings), scale_factor);
    if (bias.defined()) scores = scores + bias;
  }
  const int64_t length = scores.size(-1);
  scores = full_precision(scores).view({-1, heads, scores.size(-2), length});
  offer_attention_scores(scores);
  scores = scores.masked_fill(mask.logical_not(), std::numeric_limits<float>::lowest());
  torch::Tensor probs = dropout(torch::softmax(scores, -1));
  torch::Tensor context = torch::bmm(probs.view({-1, probs.size(-2), probs.size(-1)}).to(value.scalar_type()), value);
  context = context.view({-1, heads, context.size(-2), context.size(-1)}).permute({0, 2, 1, 3}).contiguous();
  return context.view({context.size(0), context.size(1), -1});
}

torch::Tensor DisentangledSelfAttentionImpl::disentangled_bias(const torch::Tensor& query, const torch::Tensor& key,
                                                               const torch::Tensor& relative_pos,
                                                               const torch::Tensor& rel_embeddings,
                                                               int64_t scale_factor) {
  const int64_t span = pos_ebd_size;
  const int64_t bh = query.size(0), batch = bh / heads, lq = query.size(1), lk = key.size(1);
  const torch::Tensor rel = rel_embeddings.slice(0, 0, span * 2).unsqueeze(0);  // (1, 2S, H)
  torch::Tensor pos_query, pos_key;
  if (share_att_key) {
    pos_query = for_scores(linear(query_proj, rel), heads).repeat({batch, 1, 1});
    pos_key = for_scores(linear(key_proj, rel), heads).repeat({batch, 1, 1});
  } else {
    if (c2p) pos_key = for_scores(linear(pos_key_proj, rel), heads).repeat({batch, 1, 1});
    if (p2c) pos_query = for_scores(linear(pos_query_proj, rel), heads).repeat({batch, 1, 1});
  }
  torch::Tensor score;
  if (c2p) {
    const torch::Tensor scale = scaled_size_sqrt(pos_key.size(-1), scale_factor, query.device());
    torch::Tensor att = torch::bmm(query, pos_key.transpose(-1, -2));
    const torch::Tensor pos = torch::clamp(relative_pos + span, 0, span * 2 - 1);
    att = torch::gather(att, -1, pos.unsqueeze(0).expand({bh, lq, lk}));
    score = att / scale.to(att.scalar_type());
  }
  if (p2c) {
    const torch::Tensor scale = scaled_size_sqrt(pos_query.size(-1), scale_factor, query.device());
    const torch::Tensor pos = torch::clamp(-relative_pos + span, 0, span * 2 - 1);
    torch::Tensor att = torch::bmm(key, pos_query.transpose(-1, -2));
    att = torch::gather(att, -1, pos.unsqueeze(0).expand({bh, lk, lk})).transpose(-1, -2);
    const torch::Tensor term = att / scale.to(att.scalar_type());
    score = score.defined() ? score + term : term;
  }
  return score;
}

DebertaV2AttentionImpl::DebertaV2AttentionImpl(const EncoderConfig& o) {
  self = register_module("self", DisentangledSelfAttention(o));
  output = register_module("output", BertSelfOutput(o));
}

torch::Tensor DebertaV2AttentionImpl::forward(const torch::Tensor& hidden, const torch::Tensor& mask,
                                              const torch::Tensor& relative_pos, const torch::Tensor& rel_embeddings) {
  return output(self(hidden, mask, relative_pos, rel_embeddings), hidden);
}

DebertaV2LayerImpl::DebertaV2LayerImpl(const EncoderConfig& o) {
  attention = register_module("attention", DebertaV2Attention(o));
  intermediate = register_module("intermediate", BertIntermediate(o));
  output = register_module("output", BertOutput(o));
}

torch::Tensor DebertaV2LayerImpl::forward(const torch::Tensor& hidden, const torch::Tensor& mask,
                                          const torch::Tensor& relative_pos, const torch::Tensor& rel_embeddings) {
  const torch::Tensor a = attention(hidden, mask, relative_pos, rel_embeddings);
  return output(intermediate(a), a);
}

// ------------------------------------------------------------------------------------------ encoder

DebertaV2EncoderImpl::DebertaV2EncoderImpl(const EncoderConfig& o) : options(o) {
  layer = register_module("layer", torch::nn::ModuleList());
  for (int64_t i = 0; i < o.num_hidden_layers(); ++i) layer->push_back(DebertaV2Layer(o));
  if (deberta(o).relative_attention()) {
    const int64_t rows = 2 * (deberta(o).position_buckets() > 0 ? deberta(o).position_buckets() : max_relative(o));
    rel_embeddings = register_module("rel_embeddings", torch::nn::Embedding(rows, o.hidden_size()));
  }
  if (rel_layer_norm(o))
    layer_norm = register_module("LayerNorm", ::unif::models::layer_norm(o.hidden_size(), o.layer_norm_eps()));
}

torch::Tensor DebertaV2EncoderImpl::forward(const torch::Tensor& embedded, const torch::Tensor& attention_mask,
                                            LayerTap* tap) {
  // get_attention_mask: (B, 1, L, L) = mask_i · mask_j, as bool.
  const torch::Tensor ext = attention_mask.unsqueeze(1).unsqueeze(2);
  const torch::Tensor mask = (ext * ext.squeeze(-2).unsqueeze(-1)).to(torch::kBool);
  torch::Tensor relative_pos, rel;
  if (deberta(options).relative_attention()) {
    relative_pos = build_relative_position(embedded.size(1), deberta(options).position_buckets(), max_relative(options),
                                           embedded.device());
    rel = rel_embeddings->weight;
    if (layer_norm) rel = layer_norm(rel);
  }
  torch::Tensor x = embedded;
  tap_input(tap, [&] { return x; });
  const auto layers = static_cast<int64_t>(layer->size());
  for (int64_t i = 0; i < layers; ++i) {
    auto* block = layer[static_cast<size_t>(i)]->as<DebertaV2LayerImpl>();
    // The relative embeddings are an input: their gradient comes back through the checkpoint.
    x = checkpoint_layer(options.gradient_checkpointing(), *block,
                         [block, mask, relative_pos](const std::vector<torch::Tensor>& in) {
                           return block->forward(in[0], mask, relative_pos, in[1]);
                         },
                         {x, rel});
    if (tap_layer(tap, i + 1, layers, [&] { return x; })) break;
  }
  return x;
}

DebertaV2ModelImpl::DebertaV2ModelImpl(EncoderConfig options_) : options(std::move(options_)) {
  options.validate();
  embeddings = register_module("embeddings", DebertaV2Embeddings(options));
  encoder = register_module("encoder", DebertaV2Encoder(options));
  init_bert_weights(*this, options.initializer_range());
}

EncoderOutput DebertaV2ModelImpl::encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                         const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                                         bool /*first_token_only*/, LayerTap* tap) {
  EncoderOutput out;
  const torch::Tensor mask = attention_mask_or_ones(attention_mask, input_ids);
  out.embedding_output = embeddings->forward(embed_words(embeddings->word_embeddings, input_ids, word_embedding_delta),
                                             token_type_ids, mask);
  out.last_hidden_state = encoder(out.embedding_output, mask, tap);
  tap_final(tap, options.num_hidden_layers(), out.last_hidden_state);
  return out;
}

// ------------------------------------------------------------------------------------------ heads

namespace {

// ContextPooler, registered as `pooler`: act(dense(dropout(hidden[:, 0]))).
class ContextPoolerImpl : public torch::nn::Module {
 public:
  explicit ContextPoolerImpl(const EncoderConfig& o) : act_(activation(deberta(o).pooler_hidden_act())) {
    const int64_t p = deberta(o).pooler_hidden_size() > 0 ? deberta(o).pooler_hidden_size() : o.hidden_size();
    dense = register_module("dense", torch::nn::Linear(p, p));
    dropout = register_module("dropout", Dropout(deberta(o).pooler_dropout()));
  }
  torch::Tensor forward(const torch::Tensor& hidden) { return act_(linear(dense, dropout(hidden.select(1, 0)))); }
  torch::nn::Linear dense{nullptr};
  Dropout dropout{nullptr};

 private:
  std::function<torch::Tensor(const torch::Tensor&)> act_;
};
TORCH_MODULE(ContextPooler);

// DebertaV2ForSequenceClassification: pooler, dropout (cls_dropout, else hidden_dropout_prob), classifier.
class DebertaSequenceHead : public SequenceHead {
 public:
  DebertaSequenceHead(torch::nn::Module& owner, const EncoderConfig& o, int64_t num_labels) {
    pooler_ = owner.register_module("pooler", ContextPooler(o));
    dropout_ = owner.register_module(
        "dropout", Dropout(o.classifier_dropout() >= 0 ? o.classifier_dropout() : o.hidden_dropout_prob()));
    classifier_ = owner.register_module("classifier", torch::nn::Linear(o.hidden_size(), num_labels));
    init_bert_weights(*pooler_, o.initializer_range());
    init_bert_weights(*classifier_, o.initializer_range());
  }
  torch::Tensor forward(const EncoderOutput& encoded) override {
    return linear(classifier_, dropout_(pooler_(encoded.last_hidden_state)));
  }

 private:
  ContextPooler pooler_{nullptr};
  Dropout dropout_{nullptr};
  torch::nn::Linear classifier_{nullptr};
};

// The MLM transform: dense(H, W) → hidden_act → LayerNorm(W).
class DebertaTransformImpl : public torch::nn::Module {
 public:
  DebertaTransformImpl(const EncoderConfig& o, int64_t width) : act_(activation(o.hidden_act())) {
    dense = register_module("dense", torch::nn::Linear(o.hidden_size(), width));
    layer_norm = register_module("LayerNorm", ::unif::models::layer_norm(width, o.layer_norm_eps()));
  }
  torch::Tensor forward(const torch::Tensor& hidden) { return layer_norm(full_precision(act_(linear(dense, hidden)))); }
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};

 private:
  std::function<torch::Tensor(const torch::Tensor&)> act_;
};
TORCH_MODULE(DebertaTransform);

// legacy: cls.predictions {transform, bias}; else lm_predictions.lm_head {dense, LayerNorm, bias}.
class DebertaPredictionsImpl : public torch::nn::Module {
 public:
  DebertaPredictionsImpl(const EncoderConfig& o, bool legacy) {
    if (legacy) {
      transform = register_module("transform", DebertaTransform(o, o.embedding_width()));
    } else {
      transform = DebertaTransform(o, o.hidden_size());
      dense = register_module("dense", transform->dense);
      layer_norm = register_module("LayerNorm", transform->layer_norm);
    }
    bias = register_parameter("bias", torch::zeros({o.vocab_size()}));
  }
  DebertaTransform transform{nullptr};
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};
  torch::Tensor bias;
};
TORCH_MODULE(DebertaPredictions);

class DebertaLm : public LmHead {
 public:
  DebertaLm(torch::nn::Module& owner, EncoderModel& encoder) : encoder_(encoder) {
    const EncoderConfig& o = encoder.encoder_options();
    if (deberta(o).legacy()) {
      auto cls = owner.register_module("cls", std::make_shared<torch::nn::Module>());
      predictions_ = cls->register_module("predictions", DebertaPredictions(o, true));
      parent_ = cls;
    } else {
      if (o.embedding_width() != o.hidden_size())
        throw std::invalid_argument("DeBERTa's MLM head with legacy false needs embedding_size == hidden_size");
      auto lm = owner.register_module("lm_predictions", std::make_shared<torch::nn::Module>());
      predictions_ = lm->register_module("lm_head", DebertaPredictions(o, false));
      parent_ = lm;
    }
    init_bert_weights(*predictions_, o.initializer_range());
    torch::NoGradGuard no_grad;
    predictions_->bias.zero_();
  }
  torch::Tensor forward(const torch::Tensor& hidden) override {
    return at::linear(predictions_->transform(hidden), encoder_.word_embeddings()->weight, predictions_->bias);
  }

 private:
  EncoderModel& encoder_;
  std::shared_ptr<torch::nn::Module> parent_;
  DebertaPredictions predictions_{nullptr};
};

}  // namespace

std::shared_ptr<EncoderModel> make_deberta_v2_encoder(const EncoderConfig& options, bool /*add_pooling_layer*/) {
  return std::make_shared<DebertaV2ModelImpl>(options);
}

std::unique_ptr<SequenceHead> make_deberta_v2_sequence_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                            int64_t num_labels) {
  return std::make_unique<DebertaSequenceHead>(owner, options, num_labels);
}

std::unique_ptr<LmHead> make_deberta_v2_lm_head(torch::nn::Module& owner, EncoderModel& encoder) {
  return std::make_unique<DebertaLm>(owner, encoder);
}

// ------------------------------------------------------------------------------------------ config.json

namespace {

void erase_position_embedding_type(const EncoderConfig& /*c*/, nlohmann::json& j) {
  j.erase("position_embedding_type");
}

void write_embedding_size(const EncoderConfig& c, nlohmann::json& j) {
  if (c.embedding_width() != c.hidden_size()) j["embedding_size"] = c.embedding_width();
}

void write_pooler_hidden_size(const EncoderConfig& c, nlohmann::json& j) {
  j["pooler_hidden_size"] = deberta(c).pooler_hidden_size() > 0 ? deberta(c).pooler_hidden_size() : c.hidden_size();
}

void write_cls_dropout(const EncoderConfig& c, nlohmann::json& j) {
  if (c.classifier_dropout() >= 0) j["cls_dropout"] = c.classifier_dropout();
}

void read_pos_att_type(const HfJson& r, EncoderConfig& c) {
  if (const auto* v = r.find("pos_att_type"); v != nullptr && !v->is_null()) {
    // A list, or HF's older "p2c|c2p" string.
    std::vector<std::string> types;
    if (v->is_string()) {
      std::string s = v->get<std::string>();
      std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      size_t start = 0;
      while (start <= s.size()) {
        size_t bar = s.find('|', start);
        if (bar == std::string::npos) bar = s.size();
        std::string part = s.substr(start, bar - start);
        const auto b = part.find_first_not_of(" \t"), e = part.find_last_not_of(" \t");
        types.push_back(b == std::string::npos ? std::string() : part.substr(b, e - b + 1));
        start = bar + 1;
      }
    } else if (v->is_array()) {
      for (const auto& t : *v) {
        if (!t.is_string()) r.fail("pos_att_type", "expected strings, got " + HfJson::excerpt(t));
        types.push_back(t.get<std::string>());
      }
    } else {
      r.fail("pos_att_type", "expected a list of \"c2p\" / \"p2c\", got " + HfJson::excerpt(*v));
    }
    for (const auto& t : types)
      if (t != "c2p" && t != "p2c") r.fail("pos_att_type", "only \"c2p\" and \"p2c\" are supported, got \"" + t + "\"");
    c.family<DebertaV2Config>().pos_att_type(types);
  }
}

void write_pos_att_type(const EncoderConfig& c, nlohmann::json& j) { j["pos_att_type"] = deberta(c).pos_att_type(); }

void refuse_conv_layer(const HfJson& r, EncoderConfig& /*c*/) {
  if (const auto* v = r.find("conv_kernel_size"); v != nullptr && v->is_number() && v->get<double>() > 0)
    r.fail("conv_kernel_size", "DeBERTa-v2's convolution layer (conv_kernel_size > 0) is not supported");
}

// The pooler's activation, checked once every key is read (its default too).
void check_pooler_hidden_act(const HfJson& r, EncoderConfig& c) {
  const std::string& act = deberta(c).pooler_hidden_act();
  if (act != "gelu" && act != "gelu_new" && act != "relu")
    r.fail("pooler_hidden_act", "must be gelu, gelu_new or relu, got \"" + act + "\"");
}

struct DebertaV2Fields {
  // DebertaV2Config's defaults where BertConfig's differ (DebertaV2Config: its own fields').
  static void defaults(EncoderConfig& c) {
    c.vocab_size(128100).hidden_size(1536).num_hidden_layers(24).num_attention_heads(24).intermediate_size(6144);
    c.type_vocab_size(0).layer_norm_eps(1e-7);
    c.family<DebertaV2Config>() = DebertaV2Config();
  }
  template <class V>
  static void visit(V& v) {
    using namespace hf_fields;
    using D = DebertaV2Config;
    BertFields::visit_common(v);
    // BertConfig's keys DeBERTa's file does not have: read (as BERT's), left out of the file.
    v("classifier_dropout", UNIF_HF_FIELD(classifier_dropout), kNullableProbability, kErased);
    v.custom("position_embedding_type", read_absolute_positions, erase_position_embedding_type);
    v("embedding_size", UNIF_HF_FIELD(embedding_size), kSize, WriteBy{write_embedding_size});
    v("relative_attention", UNIF_HF_FAMILY_FIELD(D, relative_attention));
    // max_relative_positions < 1: max_position_embeddings; position_buckets <= 0: no buckets.
    v("max_relative_positions", UNIF_HF_FAMILY_FIELD(D, max_relative_positions),
      IntegerAtMost{EncoderConfig::kMaxSize});
    v("position_buckets", UNIF_HF_FAMILY_FIELD(D, position_buckets), IntegerAtMost{EncoderConfig::kMaxSize});
    v("share_att_key", UNIF_HF_FAMILY_FIELD(D, share_att_key));
    v("norm_rel_ebd", UNIF_HF_FAMILY_FIELD(D, norm_rel_ebd));
    v("position_biased_input", UNIF_HF_FAMILY_FIELD(D, position_biased_input));
    v("pooler_hidden_size", UNIF_HF_FAMILY_FIELD(D, pooler_hidden_size), WriteBy{write_pooler_hidden_size});
    v("pooler_hidden_act", UNIF_HF_FAMILY_FIELD(D, pooler_hidden_act));
    v("pooler_dropout", UNIF_HF_FAMILY_FIELD(D, pooler_dropout), kProbability);
    v("legacy", UNIF_HF_FAMILY_FIELD(D, legacy));
    v("cls_dropout", UNIF_HF_FIELD(classifier_dropout), kNullableProbability, WriteBy{write_cls_dropout});
    v.custom("pos_att_type", read_pos_att_type, write_pos_att_type);
    v.custom("conv_kernel_size", refuse_conv_layer, nullptr);
    v.custom("pooler_hidden_act", check_pooler_hidden_act, nullptr);
  }
};

}  // namespace

void check_deberta_v2_config(const HfJson& r, const EncoderConfig& o) {
  check_bert_relations(r, o);
  if (const auto* v = r.find("attention_head_size"); v != nullptr && !v->is_null()) {
    if (!v->is_number_integer() || o.num_attention_heads() <= 0 ||
        v->get<int64_t>() * o.num_attention_heads() != o.hidden_size())
      r.fail("attention_head_size", "only hidden_size / num_attention_heads is supported");
  }
  if (deberta(o).pooler_hidden_size() > 0 && deberta(o).pooler_hidden_size() != o.hidden_size())
    r.fail("pooler_hidden_size", "must equal hidden_size (" + std::to_string(o.hidden_size()) +
                                     "): HF's classifier reads hidden_size features");
}

std::vector<SizedTensor> deberta_v2_sized_tensors(const EncoderConfig& o) {
  const int64_t e = o.embedding_width(), h = o.hidden_size(), i = o.intermediate_size();
  const auto l = static_cast<double>(o.num_hidden_layers());
  const std::string width = o.embedding_size() > 0 ? "embedding_size" : "hidden_size";
  std::vector<SizedTensor> t{{"embeddings.word_embeddings.weight", {o.vocab_size(), e}, "vocab_size, " + width}};
  if (deberta(o).position_biased_input())
    t.push_back({"embeddings.position_embeddings.weight",
                 {o.max_position_embeddings(), e},
                 "max_position_embeddings, " + width});
  if (o.type_vocab_size() > 0)
    t.push_back({"embeddings.token_type_embeddings.weight", {o.type_vocab_size(), e}, "type_vocab_size, " + width});
  if (e != h) t.push_back({"embeddings.embed_proj.weight", {h, e}, "hidden_size, embedding_size"});
  double projections = 4;  // query, key, value, output
  if (deberta(o).relative_attention()) {
    const std::string span = deberta(o).position_buckets() > 0          ? "position_buckets"
                             : deberta(o).max_relative_positions() >= 1 ? "max_relative_positions"
                                                                        : "max_position_embeddings";
    const int64_t rows = 2 * (deberta(o).position_buckets() > 0 ? deberta(o).position_buckets() : max_relative(o));
    t.push_back({"encoder.rel_embeddings.weight", {rows, h}, "2 x " + span + ", hidden_size"});
    if (!deberta(o).share_att_key())
      projections += has(deberta(o).pos_att_type(), "c2p") + has(deberta(o).pos_att_type(), "p2c");
  }
  t.push_back(
      {"encoder.layer.0.attention.self.query_proj.weight", {h, h}, "hidden_size, hidden_size", projections * l});
  t.push_back({"encoder.layer.0.intermediate.dense.weight", {i, h}, "intermediate_size, hidden_size", l});
  t.push_back({"encoder.layer.0.output.dense.weight", {h, i}, "hidden_size, intermediate_size", l});
  return t;
}

Architecture deberta_v2_architecture() {
  Architecture a;
  a.model_type = "deberta-v2";
  a.class_prefix = "DebertaV2";
  a.encoder_name = "deberta";
  a.tokenizer = "SentencePieceDeberta";
  a.positions = PositionScheme::Relative;
  a.token_type_ids = true;
  a.sequence_pooler = false;
  a.make_encoder = make_deberta_v2_encoder;
  a.make_sequence_head = make_deberta_v2_sequence_head;
  a.make_lm_head = make_deberta_v2_lm_head;
  a.tied_keys = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"};
  a.check_config = check_deberta_v2_config;
  a.sized_tensors = deberta_v2_sized_tensors;
  a.layers.embeddings = {"embeddings."};
  a.layers.layers = "encoder.layer.";
  // The relative-position table and its norm: every layer reads them, from the first on (not the input
  // embeddings: training.freeze.embeddings leaves them).
  a.layers.with_first_layer = {"encoder.rel_embeddings.", "encoder.LayerNorm."};
  use_hf_fields<DebertaV2Fields>(a);
  return a;
}

}  // namespace unif::models
