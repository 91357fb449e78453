// EncoderConfig: the architecture of an encoder, as the framework and more than one family read it.
// Field names are HF `config.json` (BertConfig) names; each family's field list
// (models/<family>/family.cpp, models/hf_fields.h) maps its own config.json names onto these fields
// (DistilBERT's dim -> hidden_size, ...) and back. The fields one family alone reads live in that
// family's config type (models/<family>/config.h, a FamilyConfig), held by value in the
// EncoderConfig and reached with family<F>().
//
// Example:
//   EncoderConfig c; c.vocab_size(21128).hidden_size(32).num_hidden_layers(2).num_attention_heads(4);
//   c.family<DebertaV2Config>().relative_attention(true);   // creates DeBERTa's fields
//   const EncoderConfig& k = c;
//   k.family<DebertaV2Config>().position_buckets();          // DebertaV2Config's default where unset
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include <torch/arg.h>

namespace unif::models {

class EncoderConfig;

/// Checks a family's config type shares with EncoderConfig::validate (same messages).
namespace config_checks {
/// The largest size (vocab_size, hidden_size, a layer or head count, max_position_embeddings, ...)
/// a model may have: int32's, so that the element count of a weight matrix (two sizes) or a size
/// times a small factor cannot overflow.
inline constexpr int64_t kMaxSize = 2147483647;
/// `v` in [min, kMaxSize], else std::invalid_argument naming `name`.
inline void size(int64_t v, const char* name, int64_t min = 1) {
  if (v < min || v > kMaxSize)
    throw std::invalid_argument(std::string(name) + " must be in [" + std::to_string(min) + ", " +
                                std::to_string(kMaxSize) + "], got " + std::to_string(v));
}
/// `v` as %g prints it.
inline std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return std::string(text);
}
/// A dropout probability in [0, 1).
inline void probability(double p, const char* name) {
  if (!(p >= 0.0 && p < 1.0)) throw std::invalid_argument(std::string(name) + " must be in [0, 1), got " + number(p));
}
}  // namespace config_checks

/// The fields of one family alone (models/<family>/config.h). Derive from FamilyConfigOf<F>.
class FamilyConfig {
 public:
  virtual ~FamilyConfig() = default;
  virtual std::unique_ptr<FamilyConfig> clone() const = 0;
  /// After EncoderConfig's own checks: std::invalid_argument naming the first inconsistent field.
  virtual void validate(const EncoderConfig& /*config*/) const {}
  /// The least type_vocab_size the family takes: 1, or 0 where the model may read no token types.
  virtual int64_t min_type_vocab_size() const { return 1; }
  /// The dropout before the span head's qa_outputs; negative = none.
  virtual double span_head_dropout() const { return -1.0; }
};

/// FamilyConfig with F's clone().
template <class F>
class FamilyConfigOf : public FamilyConfig {
 public:
  std::unique_ptr<FamilyConfig> clone() const override { return std::make_unique<F>(static_cast<const F&>(*this)); }
};

/// Options of an encoder (models/architectures.h) and its heads.
class EncoderConfig {
  /// config.json's model_type: the family (models/architectures.h) whose modules are built.
  TORCH_ARG(std::string, model_type) = "bert";
  TORCH_ARG(int64_t, vocab_size) = 30522;
  TORCH_ARG(int64_t, hidden_size) = 768;
  TORCH_ARG(int64_t, num_hidden_layers) = 12;
  TORCH_ARG(int64_t, num_attention_heads) = 12;
  TORCH_ARG(int64_t, intermediate_size) = 3072;
  TORCH_ARG(std::string, hidden_act) = "gelu";  // gelu | gelu_new | relu
  TORCH_ARG(double, hidden_dropout_prob) = 0.1;
  TORCH_ARG(double, attention_probs_dropout_prob) = 0.1;
  TORCH_ARG(int64_t, max_position_embeddings) = 512;
  TORCH_ARG(int64_t, type_vocab_size) = 2;
  TORCH_ARG(double, initializer_range) = 0.02;
  TORCH_ARG(double, layer_norm_eps) = 1e-12;
  TORCH_ARG(int64_t, pad_token_id) = 0;
  /// HF `classifier_dropout`; negative = null (use hidden_dropout_prob).
  TORCH_ARG(double, classifier_dropout) = -1.0;
  /// The width of the embeddings where it differs from hidden_size (ELECTRA, ALBERT, DeBERTa: then
  /// projected to hidden_size); <= 0 = hidden_size.
  TORCH_ARG(int64_t, embedding_size) = -1;
  /// Not an HF field: word embeddings produce sparse (COO) gradients.
  TORCH_ARG(bool, sparse_embeddings) = false;
  /// Not an HF field: where a batch has padding, the encoder's dense layers run on its real tokens
  /// only (concatenated), attention on the padded rectangle (models/packing.h; every family but
  /// DeBERTa-v2). The outputs at padded positions are then zeros, not HF's values there.
  TORCH_ARG(bool, unpad_inputs) = false;
  /// Not an HF field (HF's model attribute of the name): while training, each encoder layer keeps
  /// no activations and is run again in backward (models/layers/checkpoint.h).
  TORCH_ARG(bool, gradient_checkpointing) = false;

 public:
  static constexpr int64_t kMaxSize = config_checks::kMaxSize;

  /// The fields of family F: F's defaults where this config holds none (or another family's).
  template <class F>
  const F& family() const {
    if (const auto* f = dynamic_cast<const F*>(family_.get.get())) return *f;
    static const F defaults{};
    return defaults;
  }
  /// The fields of family F, created with F's defaults where this config holds none (or another family's).
  template <class F>
  F& family() {
    if (auto* f = dynamic_cast<F*>(family_.get.get())) return *f;
    auto made = std::make_unique<F>();
    F& f = *made;
    family_.get = std::move(made);
    return f;
  }
  /// The family fields held, or nullptr.
  const FamilyConfig* family_config() const { return family_.get.get(); }

  /// Throws std::invalid_argument naming the first inconsistent field (by BertConfig's names; the
  /// families' config readers check first, by their own), then the family's checks.
  void validate() const {
    namespace check = config_checks;
    check::size(vocab_size(), "vocab_size");
    check::size(hidden_size(), "hidden_size");
    check::size(num_hidden_layers(), "num_hidden_layers");
    check::size(num_attention_heads(), "num_attention_heads");
    check::size(intermediate_size(), "intermediate_size");
    check::size(max_position_embeddings(), "max_position_embeddings");
    // A family that may read no token types accepts 0 (FamilyConfig::min_type_vocab_size).
    check::size(type_vocab_size(), "type_vocab_size", family_.get ? family_.get->min_type_vocab_size() : 1);
    if (embedding_size() > kMaxSize) check::size(embedding_size(), "embedding_size");
    if (hidden_size() % num_attention_heads() != 0)
      throw std::invalid_argument("hidden_size (" + std::to_string(hidden_size()) +
                                  ") must be a multiple of num_attention_heads (" +
                                  std::to_string(num_attention_heads()) + ")");
    if (hidden_act() != "gelu" && hidden_act() != "gelu_new" && hidden_act() != "relu")
      throw std::invalid_argument("hidden_act must be gelu, gelu_new or relu, got '" + hidden_act() + "'");
    check::probability(hidden_dropout_prob(), "hidden_dropout_prob");
    check::probability(attention_probs_dropout_prob(), "attention_probs_dropout_prob");
    // Negative: null / not used.
    if (classifier_dropout() >= 0) check::probability(classifier_dropout(), "classifier_dropout");
    if (!(std::isfinite(initializer_range()) && initializer_range() >= 0))
      throw std::invalid_argument("initializer_range must be a finite number >= 0, got " +
                                  check::number(initializer_range()));
    if (!(std::isfinite(layer_norm_eps()) && layer_norm_eps() > 0))
      throw std::invalid_argument("layer_norm_eps must be a finite number > 0, got " + check::number(layer_norm_eps()));
    if (family_.get) family_.get->validate(*this);
  }
  /// The share of a batch's positions that must be padding for the unpadded path to be taken: with
  /// less, gathering and scattering the rows costs more than the padding (bench/unpadded/run.sh).
  static constexpr double kUnpadMinPadding = 0.15;
  /// Whether a batch of `real` tokens in `positions` takes the unpadded path.
  bool unpad(int64_t real, int64_t positions) const {
    return unpad_inputs() && static_cast<double>(positions - real) >= kUnpadMinPadding * static_cast<double>(positions);
  }
  /// The embeddings' width: embedding_size, or hidden_size when it is not set.
  int64_t embedding_width() const { return embedding_size() > 0 ? embedding_size() : hidden_size(); }

 private:
  /// The family's fields, copied deeply with the config.
  struct Slot {
    std::unique_ptr<FamilyConfig> get;
    Slot() = default;
    Slot(const Slot& other) : get(other.get ? other.get->clone() : nullptr) {}
    Slot(Slot&&) noexcept = default;
    Slot& operator=(const Slot& other) {
      if (this != &other) get = other.get ? other.get->clone() : nullptr;
      return *this;
    }
    Slot& operator=(Slot&&) noexcept = default;
    ~Slot() = default;
  };
  Slot family_;
};

}  // namespace unif::models
