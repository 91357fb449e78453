// ModernBERT: see family.h.
#include "models/modernbert/family.h"

#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "models/layers/checkpoint.h"
#include "models/attention_capture.h"
#include "models/layers/activations.h"
#include "models/layers/linear.h"
#include "models/full_precision.h"
#include "models/hf_fields.h"
#include "models/hf_json.h"

namespace unif::models {

namespace {

constexpr const char* kFull = "full_attention";
constexpr const char* kSliding = "sliding_attention";

/// torch.nn.init.trunc_normal_(w, 0, std, -cutoff·std, cutoff·std), as HF's ModernBERT init draws it.
void trunc_normal(torch::Tensor w, double std, double cutoff) {
  torch::NoGradGuard no_grad;
  auto cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double l = cdf(-cutoff), u = cdf(cutoff);
  w.uniform_(2 * l - 1, 2 * u - 1).erfinv_().mul_(std * std::sqrt(2.0)).clamp_(-cutoff * std, cutoff * std);
}

void init_linear(torch::nn::Linear& layer, double std, double cutoff) {
  trunc_normal(layer->weight, std, cutoff);
  if (layer->bias.defined()) {
    torch::NoGradGuard no_grad;
    layer->bias.zero_();
  }
}

torch::nn::Linear make_linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

/// rotate_half: (x1, x2) -> (-x2, x1) over the last dimension's halves.
torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

/// cos and sin (L, d) of positions 0..L-1 for base `theta`, in float32 as HF computes them.
std::pair<torch::Tensor, torch::Tensor> rotary(int64_t length, int64_t dim, double theta, const torch::Device& device) {
  const auto f = torch::TensorOptions().dtype(torch::kFloat).device(device);
  const torch::Tensor inv_freq = 1.0 / torch::pow(theta, torch::arange(0, dim, 2, f) / static_cast<double>(dim));
  const torch::Tensor freqs = torch::arange(length, f).unsqueeze(1) * inv_freq.unsqueeze(0);  // (L, d/2)
  const torch::Tensor emb = torch::cat({freqs, freqs}, -1);                                   // (L, d)
  return {emb.cos(), emb.sin()};
}

double stds_out(const EncoderConfig& o) { return o.initializer_range() / std::sqrt(2.0 * o.num_hidden_layers()); }

/// ModernBertPredictionHead: dense -> classifier_activation -> norm, registered on `owner` as `head`.
class PredictionHeadImpl : public torch::nn::Module {
 public:
  explicit PredictionHeadImpl(const EncoderConfig& o)
      : act_(activation(o.family<ModernBertConfig>().classifier_activation())) {
    dense = register_module(
        "dense", make_linear(o.hidden_size(), o.hidden_size(), o.family<ModernBertConfig>().classifier_bias()));
    norm = register_module(
        "norm", ModernBertNorm(o.hidden_size(), o.layer_norm_eps(), o.family<ModernBertConfig>().norm_bias()));
    init_linear(dense, stds_out(o), o.family<ModernBertConfig>().initializer_cutoff_factor());
  }
  torch::Tensor forward(const torch::Tensor& x) { return norm(act_(linear(dense, x))); }
  torch::nn::Linear dense{nullptr};
  ModernBertNorm norm{nullptr};

 private:
  std::function<torch::Tensor(const torch::Tensor&)> act_;
};
TORCH_MODULE(PredictionHead);

/// `head`, `drop`, `classifier` on the task model: what every ModernBERT task head but MLM ends with.
struct ClassifierParts {
  ClassifierParts(torch::nn::Module& owner, const EncoderConfig& o, int64_t outputs) {
    head = owner.register_module("head", PredictionHead(o));
    drop = owner.register_module("drop", Dropout(std::max(0.0, o.classifier_dropout())));
    classifier = owner.register_module("classifier", torch::nn::Linear(o.hidden_size(), outputs));
    init_linear(classifier, std::pow(static_cast<double>(o.hidden_size()), -0.5),
                o.family<ModernBertConfig>().initializer_cutoff_factor());
  }
  torch::Tensor operator()(const torch::Tensor& x) { return linear(classifier, drop(head(x))); }
  PredictionHead head{nullptr};
  Dropout drop{nullptr};
  torch::nn::Linear classifier{nullptr};
};

class SequenceHeadImpl : public SequenceHead {
 public:
  SequenceHeadImpl(torch::nn::Module& owner, const EncoderConfig& o, int64_t num_labels)
      : parts_(owner, o, num_labels), mean_(o.family<ModernBertConfig>().classifier_pooling() == "mean") {}
  torch::Tensor forward(const EncoderOutput& encoded) override {
    const torch::Tensor& h = encoded.last_hidden_state;  // (B, L, H); (B, 1, H) with "cls" pooling
    if (!mean_) return parts_(h.select(1, 0));
    const torch::Tensor m = encoded.attention_mask.to(h.scalar_type()).unsqueeze(-1);  // (B, L, 1)
    return parts_((h * m).sum(1) / m.sum(1));
  }

 private:
  ClassifierParts parts_;
  bool mean_;
};

class TokenHeadImpl : public TokenHead {
 public:
  TokenHeadImpl(torch::nn::Module& owner, const EncoderConfig& o, int64_t outputs) : parts_(owner, o, outputs) {}
  torch::Tensor forward(const torch::Tensor& hidden) override { return parts_(hidden); }

 private:
  ClassifierParts parts_;
};

class LmHeadImpl : public LmHead {
 public:
  LmHeadImpl(torch::nn::Module& owner, EncoderModel& encoder) : encoder_(encoder) {
    const EncoderConfig& o = encoder.encoder_options();
    head_ = owner.register_module("head", PredictionHead(o));
    // `decoder`: its weight is tok_embeddings' (tied, not a parameter of its own), its bias its own.
    decoder_ = owner.register_module("decoder", std::make_shared<torch::nn::Module>());
    if (o.family<ModernBertConfig>().decoder_bias())
      bias_ = decoder_->register_parameter("bias", torch::zeros({o.vocab_size()}));
  }
  torch::Tensor forward(const torch::Tensor& hidden) override {
    return at::linear(full_precision(head_(hidden)), encoder_.word_embeddings()->weight, bias_);
  }

 private:
  EncoderModel& encoder_;
  PredictionHead head_{nullptr};
  std::shared_ptr<torch::nn::Module> decoder_;
  torch::Tensor bias_;
};

}  // namespace

ModernBertNormImpl::ModernBertNormImpl(int64_t width_, double eps_, bool with_bias) : width(width_), eps(eps_) {
  weight = register_parameter("weight", torch::ones({width}));
  if (with_bias) bias = register_parameter("bias", torch::zeros({width}));
}

torch::Tensor ModernBertNormImpl::forward(const torch::Tensor& x) {
  return torch::layer_norm(x, {width}, weight, bias, eps);
}

ModernBertEmbeddingsImpl::ModernBertEmbeddingsImpl(const EncoderConfig& o) {
  tok_embeddings = register_module(
      "tok_embeddings", torch::nn::Embedding(torch::nn::EmbeddingOptions(o.vocab_size(), o.hidden_size())
                                                 .padding_idx(o.pad_token_id() < o.vocab_size() ? o.pad_token_id() : -1)
                                                 .sparse(o.sparse_embeddings())));
  norm = register_module("norm",
                         ModernBertNorm(o.hidden_size(), o.layer_norm_eps(), o.family<ModernBertConfig>().norm_bias()));
  drop = register_module("drop", Dropout(o.family<ModernBertConfig>().embedding_dropout()));
  trunc_normal(tok_embeddings->weight, o.initializer_range(), o.family<ModernBertConfig>().initializer_cutoff_factor());
}

torch::Tensor ModernBertEmbeddingsImpl::forward(const torch::Tensor& words) { return drop(norm(words)); }

ModernBertAttentionImpl::ModernBertAttentionImpl(const EncoderConfig& o) : heads(o.num_attention_heads()) {
  const int64_t h = o.hidden_size();
  Wqkv = register_module("Wqkv", make_linear(h, 3 * h, o.family<ModernBertConfig>().attention_bias()));
  Wo = register_module("Wo", make_linear(h, h, o.family<ModernBertConfig>().attention_bias()));
  attention_dropout = register_module("attention_dropout", Dropout(o.attention_probs_dropout_prob()));
  out_drop = register_module("out_drop", Dropout(o.attention_probs_dropout_prob()));
  init_linear(Wqkv, o.initializer_range(), o.family<ModernBertConfig>().initializer_cutoff_factor());
  init_linear(Wo, stds_out(o), o.family<ModernBertConfig>().initializer_cutoff_factor());
}

torch::Tensor ModernBertAttentionImpl::forward(const torch::Tensor& hidden, const torch::Tensor& cos,
                                               const torch::Tensor& sin, const torch::Tensor& additive_mask,
                                               const Packing* packing, bool first_only) {
  // Packed (N, H) rows of a (B, L) batch: Wqkv on them, attention on the padded rectangle.
  const int64_t b = packing ? packing->batch : hidden.size(0), l = packing ? packing->length : hidden.size(1);
  const int64_t width = hidden.size(-1), d = width / heads;
  torch::Tensor projected = linear(Wqkv, hidden);
  if (packing) projected = packing->pad(projected);
  const torch::Tensor qkv = projected.view({b, l, 3, heads, d});
  auto part = [&](int64_t i) { return qkv.select(2, i).transpose(1, 2); };  // (B, heads, L, d)
  // Rotary embeddings in float32 (HF: q.float() * cos + rotate_half(q.float()) * sin).
  auto rotate = [](const torch::Tensor& x, const torch::Tensor& c, const torch::Tensor& s) {
    const torch::Tensor f = full_precision(x);
    return (f * c + rotate_half(f) * s).to(x.scalar_type());
  };
  const torch::Tensor k = rotate(part(1), cos, sin), v = part(2);
  // first_only: position 0's query alone, rotated by the first row of cos and sin.
  const torch::Tensor q = first_only ? rotate(part(0).narrow(2, 0, 1), cos.narrow(-2, 0, 1), sin.narrow(-2, 0, 1))
                                     : rotate(part(0), cos, sin);
  const int64_t queries = q.size(2);
  torch::Tensor scores = torch::matmul(q, k.transpose(-1, -2)) * std::pow(static_cast<double>(d), -0.5);
  scores = scores + (additive_mask.size(-2) > queries ? additive_mask.narrow(-2, 0, queries) : additive_mask);
  offer_attention_scores(scores);
  const torch::Tensor probs = attention_dropout(torch::softmax(full_precision(scores), -1)).to(v.scalar_type());
  torch::Tensor context = torch::matmul(probs, v).transpose(1, 2).reshape({b, queries, width});
  if (packing) context = packing->pack(context);
  return out_drop(linear(Wo, context));
}

ModernBertMLPImpl::ModernBertMLPImpl(const EncoderConfig& o) : act_(activation(o.hidden_act())) {
  Wi = register_module(
      "Wi", make_linear(o.hidden_size(), 2 * o.intermediate_size(), o.family<ModernBertConfig>().mlp_bias()));
  drop = register_module("drop", Dropout(o.hidden_dropout_prob()));
  Wo = register_module("Wo",
                       make_linear(o.intermediate_size(), o.hidden_size(), o.family<ModernBertConfig>().mlp_bias()));
  init_linear(Wi, o.initializer_range(), o.family<ModernBertConfig>().initializer_cutoff_factor());
  init_linear(Wo, stds_out(o), o.family<ModernBertConfig>().initializer_cutoff_factor());
}

torch::Tensor ModernBertMLPImpl::forward(const torch::Tensor& x) {
  const auto halves = linear(Wi, x).chunk(2, -1);  // input, gate
  return linear(Wo, drop(act_(halves[0]) * halves[1]));
}

ModernBertEncoderLayerImpl::ModernBertEncoderLayerImpl(const EncoderConfig& o, int64_t index)
    : sliding(modernbert_sliding_layer(o, index)) {
  if (index > 0)
    attn_norm = register_module(
        "attn_norm", ModernBertNorm(o.hidden_size(), o.layer_norm_eps(), o.family<ModernBertConfig>().norm_bias()));
  attn = register_module("attn", ModernBertAttention(o));
  mlp_norm = register_module(
      "mlp_norm", ModernBertNorm(o.hidden_size(), o.layer_norm_eps(), o.family<ModernBertConfig>().norm_bias()));
  mlp = register_module("mlp", ModernBertMLP(o));
}

torch::Tensor ModernBertEncoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                                  const torch::Tensor& sin, const torch::Tensor& additive_mask,
                                                  const Packing* packing) {
  const torch::Tensor h = x + attn(attn_norm ? attn_norm(x) : x, cos, sin, additive_mask, packing);
  return h + mlp(mlp_norm(h));
}

torch::Tensor ModernBertEncoderLayerImpl::forward_first(const torch::Tensor& x, const torch::Tensor& cos,
                                                        const torch::Tensor& sin, const torch::Tensor& additive_mask) {
  // Keys and values from every position; the residual, the MLP and its norm at position 0 only.
  const torch::Tensor h =
      x.narrow(1, 0, 1) + attn(attn_norm ? attn_norm(x) : x, cos, sin, additive_mask, nullptr, /*first_only=*/true);
  return h + mlp(mlp_norm(h));
}

bool modernbert_sliding_layer(const EncoderConfig& o, int64_t index) {
  const auto& types = o.family<ModernBertConfig>().layer_types();
  if (types.empty()) return index % 3 != 0;
  return types.at(static_cast<size_t>(index)) == kSliding;
}

ModernBertModelImpl::ModernBertModelImpl(EncoderConfig options_) : options(std::move(options_)) {
  options.validate();
  if (!options.family<ModernBertConfig>().layer_types().empty() &&
      static_cast<int64_t>(options.family<ModernBertConfig>().layer_types().size()) != options.num_hidden_layers())
    throw std::invalid_argument(
        "layer_types has " + std::to_string(options.family<ModernBertConfig>().layer_types().size()) +
        " entries, expected num_hidden_layers (" + std::to_string(options.num_hidden_layers()) + ")");
  if ((options.hidden_size() / options.num_attention_heads()) % 2 != 0)
    throw std::invalid_argument("rotary embeddings need an even head size (hidden_size / num_attention_heads)");
  embeddings = register_module("embeddings", ModernBertEmbeddings(options));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.num_hidden_layers(); ++i) layers->push_back(ModernBertEncoderLayer(options, i));
  final_norm = register_module("final_norm", ModernBertNorm(options.hidden_size(), options.layer_norm_eps(),
                                                            options.family<ModernBertConfig>().norm_bias()));
}

EncoderOutput ModernBertModelImpl::encode(const torch::Tensor& input_ids, const torch::Tensor& /*token_type_ids*/,
                                          const torch::Tensor& attention_mask,
                                          const torch::Tensor& word_embedding_delta, bool first_token_only,
                                          LayerTap* tap) {
  EncoderOutput out;
  out.attention_mask = attention_mask_or_ones(attention_mask, input_ids);
  out.embedding_output = embeddings->forward(embed_words(embeddings->tok_embeddings, input_ids, word_embedding_delta));
  torch::Tensor x = out.embedding_output;
  const int64_t length = x.size(1), dim = options.hidden_size() / options.num_attention_heads();
  // Additive masks: padding keys hidden in every layer (B, 1, 1, L); sliding layers also hide keys
  // farther than local_attention / 2 from the query (B, 1, L, L). finfo(float).min, as HF's eager path.
  const double lowest = static_cast<double>(std::numeric_limits<float>::lowest());
  const torch::Tensor keys = out.attention_mask.to(torch::kBool).unsqueeze(1).unsqueeze(2);  // (B, 1, 1, L)
  const auto dtype = torch::TensorOptions().dtype(torch::kFloat).device(x.device());
  const torch::Tensor full_mask = torch::where(keys, torch::zeros({}, dtype), torch::full({}, lowest, dtype));
  torch::Tensor sliding_mask;
  std::pair<torch::Tensor, torch::Tensor> global_rope, local_rope;
  // Unpadded: the layers' norms, projections and MLPs on the real tokens only (every op but attention
  // is per token); the output has zeros at padding.
  const std::optional<Packing> packing = Packing::of(options, out.attention_mask, /*additive=*/false);
  if (packing) x = packing->pack(x);
  // A head that reads position 0 alone ("cls" pooling): the last layer computes that position only
  // (mean pooling reads them all).
  const bool first_only = first_token_only && options.family<ModernBertConfig>().classifier_pooling() == "cls" &&
                          !(tap && tap->keep_hidden_states);
  const auto n = static_cast<int64_t>(layers->size());
  tap_input(tap, [&] { return packing ? packing->pad(x) : x; });
  int64_t index = 0;
  for (const auto& module : *layers) {
    auto* layer = module->as<ModernBertEncoderLayerImpl>();
    ++index;
    const bool last_first = first_only && index == n;
    if (layer->sliding && !sliding_mask.defined()) {
      const torch::Tensor pos = torch::arange(length, torch::TensorOptions().dtype(torch::kLong).device(x.device()));
      const torch::Tensor near =
          (pos.unsqueeze(0) - pos.unsqueeze(1)).abs().le(options.family<ModernBertConfig>().local_attention() / 2);
      sliding_mask = torch::where(keys & near, torch::zeros({}, dtype), torch::full({}, lowest, dtype));
      local_rope = rotary(length, dim, options.family<ModernBertConfig>().local_rope_theta(), x.device());
    }
    if (!layer->sliding && !global_rope.first.defined())
      global_rope = rotary(length, dim, options.family<ModernBertConfig>().global_rope_theta(), x.device());
    const auto& rope = layer->sliding ? local_rope : global_rope;
    const torch::Tensor& mask = layer->sliding ? sliding_mask : full_mask;
    if (last_first) {  // (B, 1, H), from the padded rectangle
      tap_layer(tap, n, n, {});
      out.last_hidden_state =
          final_norm(layer->forward_first(packing ? packing->pad(x) : x, rope.first, rope.second, mask));
      return out;
    }
    x = checkpoint_layer(
        options.gradient_checkpointing(), *layer,
        [layer, cos = rope.first, sin = rope.second, mask, packing](const std::vector<torch::Tensor>& in) {
          return layer->forward(in[0], cos, sin, mask, packing ? &*packing : nullptr);
        },
        {x});
    if (tap_layer(tap, index, n, [&] { return packing ? packing->pad(x) : x; })) break;
  }
  out.last_hidden_state = packing ? packing->pad(final_norm(x)) : final_norm(x);
  tap_final(tap, n, out.last_hidden_state);
  return out;
}

std::shared_ptr<EncoderModel> make_modernbert_encoder(const EncoderConfig& options, bool /*add_pooling_layer*/) {
  return std::make_shared<ModernBertModelImpl>(options);
}

std::unique_ptr<SequenceHead> make_modernbert_sequence_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                            int64_t num_labels) {
  return std::make_unique<SequenceHeadImpl>(owner, options, num_labels);
}

std::unique_ptr<TokenHead> make_modernbert_token_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                      int64_t num_outputs) {
  return std::make_unique<TokenHeadImpl>(owner, options, num_outputs);
}

std::unique_ptr<LmHead> make_modernbert_lm_head(torch::nn::Module& owner, EncoderModel& encoder) {
  return std::make_unique<LmHeadImpl>(owner, encoder);
}

namespace {

// Older files: every n-th layer full (global_attn_every_n_layers), read for layer_types.
void check_every_n_layers(const HfJson& r, EncoderConfig& /*c*/) {
  r.size("global_attn_every_n_layers", [](int64_t) {});
}

// Written where the layer types follow it (transformers 4 reads it), else left out.
void write_every_n_layers(const EncoderConfig& c, nlohmann::json& j) {
  j.erase("global_attn_every_n_layers");
  for (int64_t n = 1; n <= c.num_hidden_layers(); ++n) {
    bool follows = true;
    for (int64_t i = 0; i < c.num_hidden_layers(); ++i)
      follows = follows && ((i % n != 0) == modernbert_sliding_layer(c, i));
    if (follows) {
      j["global_attn_every_n_layers"] = n;
      break;
    }
  }
}

// The layer types: the list, or by global_attn_every_n_layers (3 where absent).
void read_layer_types(const HfJson& r, EncoderConfig& c) {
  int64_t every = 3;
  r.size("global_attn_every_n_layers", [&](int64_t v) { every = v; });
  std::vector<std::string> types;
  for (int64_t i = 0; i < c.num_hidden_layers(); ++i) types.push_back(i % every != 0 ? kSliding : kFull);
  if (const auto* v = r.find("layer_types"); v != nullptr && !v->is_null()) {
    if (!v->is_array()) r.fail("layer_types", "expected a list, got " + HfJson::excerpt(*v));
    types.clear();
    for (const auto& t : *v) {
      if (!t.is_string() || (t.get<std::string>() != kFull && t.get<std::string>() != kSliding))
        r.fail("layer_types",
               std::string("expected \"") + kFull + "\" or \"" + kSliding + "\" entries, got " + HfJson::excerpt(t));
      types.push_back(t.get<std::string>());
    }
  }
  c.family<ModernBertConfig>().layer_types(types);
}

void write_layer_types(const EncoderConfig& c, nlohmann::json& j) {
  std::vector<std::string> types;
  for (int64_t i = 0; i < c.num_hidden_layers(); ++i)
    types.push_back(modernbert_sliding_layer(c, i) ? kSliding : kFull);
  j["layer_types"] = types;
}

// transformers 5: rope_parameters {full_attention: {rope_theta, rope_type}, sliding_attention: {...}}.
void read_rope_parameters(const HfJson& r, EncoderConfig& c) {
  if (const auto* v = r.find("rope_parameters"); v != nullptr && !v->is_null()) {
    if (!v->is_object()) r.fail("rope_parameters", "expected an object, got " + HfJson::excerpt(*v));
    for (const auto& [kind, params] : v->items()) {
      if (!params.is_object()) continue;
      const std::string type = params.value("rope_type", std::string("default"));
      if (type != "default")
        r.fail("rope_parameters", "only rope_type \"default\" is supported, got \"" + type + "\" for " + kind);
      const auto theta = params.find("rope_theta");
      if (theta == params.end()) continue;
      if (!theta->is_number() || !std::isfinite(theta->get<double>()) || !(theta->get<double>() > 0))
        r.fail("rope_parameters", kind + ".rope_theta: must be a finite number > 0, got " + HfJson::excerpt(*theta));
      if (kind == kFull) c.family<ModernBertConfig>().global_rope_theta(theta->get<double>());
      if (kind == kSliding) c.family<ModernBertConfig>().local_rope_theta(theta->get<double>());
    }
  }
}

void write_rope_parameters(const EncoderConfig& c, nlohmann::json& j) {
  const ModernBertConfig& m = c.family<ModernBertConfig>();
  j["rope_parameters"] = {{kFull, {{"rope_theta", m.global_rope_theta()}, {"rope_type", "default"}}},
                          {kSliding, {{"rope_theta", m.local_rope_theta()}, {"rope_type", "default"}}}};
}

void refuse_rope_scaling(const HfJson& r, EncoderConfig& /*c*/) {
  if (const auto* v = r.find("rope_scaling"); v != nullptr && !v->is_null())
    r.fail("rope_scaling", "rotary scaling is not supported");
}

struct ModernBertFields {
  // ModernBertConfig's defaults.
  static void defaults(EncoderConfig& c) {
    c.vocab_size(50368).hidden_size(768).intermediate_size(1152).num_hidden_layers(22).num_attention_heads(12);
    c.hidden_act("gelu").max_position_embeddings(8192).initializer_range(0.02);
    c.layer_norm_eps(1e-5).pad_token_id(50283).attention_probs_dropout_prob(0).hidden_dropout_prob(0);
    c.classifier_dropout(0).type_vocab_size(1);
    c.family<ModernBertConfig>() = ModernBertConfig();
  }
  template <class V>
  static void visit(V& v) {
    using namespace hf_fields;
    using M = ModernBertConfig;
    v("vocab_size", UNIF_HF_FIELD(vocab_size), kSize);
    v("hidden_size", UNIF_HF_FIELD(hidden_size), kSize);
    v("intermediate_size", UNIF_HF_FIELD(intermediate_size), kSize);
    v("num_hidden_layers", UNIF_HF_FIELD(num_hidden_layers), kSize);
    v("num_attention_heads", UNIF_HF_FIELD(num_attention_heads), kSize);
    v("hidden_activation", UNIF_HF_FIELD(hidden_act), kActivation);
    v("max_position_embeddings", UNIF_HF_FIELD(max_position_embeddings), kSize);
    v("initializer_range", UNIF_HF_FIELD(initializer_range), kNonNegative);
    v("initializer_cutoff_factor", UNIF_HF_FAMILY_FIELD(M, initializer_cutoff_factor), kNonNegative);
    v("norm_eps", UNIF_HF_FIELD(layer_norm_eps), kPositive);
    v("norm_bias", UNIF_HF_FAMILY_FIELD(M, norm_bias));
    v("pad_token_id", UNIF_HF_FIELD(pad_token_id), kNullKeeps);
    v("attention_bias", UNIF_HF_FAMILY_FIELD(M, attention_bias));
    v("attention_dropout", UNIF_HF_FIELD(attention_probs_dropout_prob), kProbability);
    v("local_attention", UNIF_HF_FAMILY_FIELD(M, local_attention), kSizeOrZero);
    v("embedding_dropout", UNIF_HF_FAMILY_FIELD(M, embedding_dropout), kProbability);
    v("mlp_bias", UNIF_HF_FAMILY_FIELD(M, mlp_bias));
    v("mlp_dropout", UNIF_HF_FIELD(hidden_dropout_prob), kProbability);
    v("decoder_bias", UNIF_HF_FAMILY_FIELD(M, decoder_bias));
    v("classifier_pooling", UNIF_HF_FAMILY_FIELD(M, classifier_pooling),
      OneOf{{"cls", "mean"}, "expected \"cls\" or \"mean\""});
    v("classifier_dropout", UNIF_HF_FIELD(classifier_dropout), kProbability, kAtLeastZero);
    v("classifier_bias", UNIF_HF_FAMILY_FIELD(M, classifier_bias));
    v("classifier_activation", UNIF_HF_FAMILY_FIELD(M, classifier_activation), kActivation);
    v.custom("global_attn_every_n_layers", check_every_n_layers, write_every_n_layers);
    // Older files: the two rotary bases as keys of their own (transformers 4 reads these).
    v("global_rope_theta", UNIF_HF_FAMILY_FIELD(M, global_rope_theta), kPositive);
    v("local_rope_theta", UNIF_HF_FAMILY_FIELD(M, local_rope_theta), kPositive);
    v.custom("layer_types", read_layer_types, write_layer_types);
    v.custom("rope_parameters", read_rope_parameters, write_rope_parameters);
    v.custom("rope_scaling", refuse_rope_scaling, nullptr);
  }
};

}  // namespace

void check_modernbert_config(const HfJson& r, const EncoderConfig& o) {
  // Without pad_token_id (or null) there is no padding row, as HF's padding_idx None.
  if (const auto* v = r.find("pad_token_id"); v != nullptr && !v->is_null())
    r.check_id("pad_token_id", o.pad_token_id(), "vocab_size", o.vocab_size());
  r.check_divides("num_attention_heads", o.num_attention_heads(), "hidden_size", o.hidden_size());
  if ((o.hidden_size() / o.num_attention_heads()) % 2 != 0)
    r.fail("num_attention_heads", "hidden_size / num_attention_heads (" +
                                      std::to_string(o.hidden_size() / o.num_attention_heads()) +
                                      ") must be even: rotary embeddings turn pairs of features");
  if (!o.family<ModernBertConfig>().layer_types().empty() &&
      static_cast<int64_t>(o.family<ModernBertConfig>().layer_types().size()) != o.num_hidden_layers())
    r.fail("layer_types", "has " + std::to_string(o.family<ModernBertConfig>().layer_types().size()) +
                              " entries, expected num_hidden_layers (" + std::to_string(o.num_hidden_layers()) + ")");
}

std::vector<SizedTensor> modernbert_sized_tensors(const EncoderConfig& o) {
  const int64_t h = o.hidden_size(), i = o.intermediate_size();
  const auto l = static_cast<double>(o.num_hidden_layers());
  return {{"embeddings.tok_embeddings.weight", {o.vocab_size(), h}, "vocab_size, hidden_size"},
          {"layers.0.attn.Wqkv.weight", {3 * h, h}, "3 x hidden_size, hidden_size", l},
          {"layers.0.attn.Wo.weight", {h, h}, "hidden_size, hidden_size", l},
          {"layers.0.mlp.Wi.weight", {2 * i, h}, "2 x intermediate_size, hidden_size", l},
          {"layers.0.mlp.Wo.weight", {h, i}, "hidden_size, intermediate_size", l}};
}

Architecture modernbert_architecture() {
  Architecture a;
  a.model_type = "modernbert";
  a.class_prefix = "ModernBert";
  a.encoder_name = "model";
  a.tokenizer = "ByteLevelBPE";
  a.positions = PositionScheme::Rotary;
  a.token_type_ids = false;
  a.sequence_pooler = false;
  a.make_encoder = make_modernbert_encoder;
  a.make_sequence_head = make_modernbert_sequence_head;
  a.make_lm_head = make_modernbert_lm_head;
  a.tied_keys = {"decoder.weight"};
  a.check_config = check_modernbert_config;
  a.sized_tensors = modernbert_sized_tensors;
  a.layers.embeddings = {"embeddings."};
  a.layers.layers = "layers.";
  // Token and span heads run its prediction head.
  a.make_token_head = make_modernbert_token_head;
  use_hf_fields<ModernBertFields>(a);
  return a;
}

}  // namespace unif::models
