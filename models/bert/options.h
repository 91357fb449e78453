// BertOptions: the architecture of a BERT-family encoder. Field names are HF `config.json` (BertConfig)
// names, so a BERT config file maps onto this struct key by key; each family's config reader
// (models/<family>/config.cpp, a row of models/architectures.h) maps its own names onto the same
// fields (DistilBERT's dim -> hidden_size, ...) and back. Fields only some families read are marked.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/arg.h>

namespace unif::models {

/// Options of BertModel and its heads.
/// Example:
///   BertOptions opt; opt.vocab_size(21128).hidden_size(32).num_hidden_layers(2).num_attention_heads(4);
struct BertOptions {
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
  /// ELECTRA, ALBERT: the width of the embeddings (projected to hidden_size); <= 0 = hidden_size.
  TORCH_ARG(int64_t, embedding_size) = -1;
  /// ALBERT: layer groups (layers share the parameters of their group) and layers per group.
  TORCH_ARG(int64_t, num_hidden_groups) = 1;
  TORCH_ARG(int64_t, inner_group_num) = 1;
  /// DistilBERT: dropout before qa_outputs (qa_dropout) and before the sequence classifier
  /// (seq_classif_dropout); negative = none / not used.
  TORCH_ARG(double, qa_dropout) = -1.0;
  TORCH_ARG(double, seq_classif_dropout) = -1.0;
  /// DistilBERT: fixed sinusoidal position embeddings.
  TORCH_ARG(bool, sinusoidal_pos_embds) = false;
  /// DeBERTa-v2/v3 (DebertaV2Config): disentangled relative attention (relative_attention), its
  /// range (max_relative_positions, <= 0 = max_position_embeddings) and log buckets (position_buckets,
  /// <= 0 = none), the attention terms besides content-to-content (pos_att_type: "c2p", "p2c"),
  /// position projections shared with query_proj / key_proj (share_att_key), the relative embeddings'
  /// normalisation (norm_rel_ebd: "none" or "layer_norm"), absolute positions added to the input
  /// (position_biased_input), the sequence heads' ContextPooler (pooler_hidden_size, <= 0 =
  /// hidden_size; pooler_hidden_act; pooler_dropout) and the MLM head (legacy: `cls.predictions` as
  /// BERT's, else `lm_predictions.lm_head`).
  TORCH_ARG(bool, relative_attention) = false;
  TORCH_ARG(int64_t, max_relative_positions) = -1;
  TORCH_ARG(int64_t, position_buckets) = -1;
  TORCH_ARG(std::vector<std::string>, pos_att_type) = {};
  TORCH_ARG(bool, share_att_key) = false;
  TORCH_ARG(std::string, norm_rel_ebd) = "none";
  TORCH_ARG(bool, position_biased_input) = true;
  TORCH_ARG(int64_t, pooler_hidden_size) = -1;
  TORCH_ARG(std::string, pooler_hidden_act) = "gelu";
  TORCH_ARG(double, pooler_dropout) = 0.0;
  TORCH_ARG(bool, legacy) = true;
  /// ModernBERT (ModernBertConfig): biases of the LayerNorms (norm_bias), the attention's Wqkv/Wo
  /// (attention_bias), the MLP's Wi/Wo (mlp_bias), the heads' dense (classifier_bias) and the MLM decoder
  /// (decoder_bias); the prediction head's activation (classifier_activation); the sequence heads'
  /// pooling ("cls" or "mean": classifier_pooling); per layer "full_attention" or "sliding_attention"
  /// (layer_types; empty = every third layer full from layer 0, HF's global_attn_every_n_layers 3),
  /// the sliding window (local_attention: |i - j| <= local_attention / 2), the rotary bases of full and
  /// sliding layers (global_rope_theta, local_rope_theta), the embeddings' dropout
  /// (embedding_dropout) and the init's truncation (initializer_cutoff_factor).
  TORCH_ARG(bool, norm_bias) = true;
  TORCH_ARG(bool, attention_bias) = true;
  TORCH_ARG(bool, mlp_bias) = true;
  TORCH_ARG(bool, classifier_bias) = true;
  TORCH_ARG(bool, decoder_bias) = true;
  TORCH_ARG(std::string, classifier_activation) = "gelu";
  TORCH_ARG(std::string, classifier_pooling) = "cls";
  TORCH_ARG(std::vector<std::string>, layer_types) = {};
  TORCH_ARG(int64_t, local_attention) = 128;
  TORCH_ARG(double, global_rope_theta) = 160000.0;
  TORCH_ARG(double, local_rope_theta) = 10000.0;
  TORCH_ARG(double, embedding_dropout) = 0.0;
  TORCH_ARG(double, initializer_cutoff_factor) = 2.0;
  /// Not an HF field: word embeddings produce sparse (COO) gradients.
  TORCH_ARG(bool, sparse_embeddings) = false;
  /// Not an HF field: where a batch has padding, the encoder's dense layers run on its real tokens
  /// only (concatenated), attention on the padded rectangle (models/packing.h; every family but
  /// DeBERTa-v2). The outputs at padded positions are then zeros, not HF's values there.
  TORCH_ARG(bool, unpad_inputs) = false;

 public:
  /// The largest size (vocab_size, hidden_size, a layer or head count, max_position_embeddings, ...)
  /// a model may have: int32's, so that the element count of a weight matrix (two sizes) or a
  /// size times a small factor cannot overflow.
  static constexpr int64_t kMaxSize = 2147483647;

  /// Throws std::invalid_argument naming the first inconsistent field (by BertConfig's names; the
  /// families' config readers check first, by their own).
  void validate() const {
    auto positive = [](int64_t v, const char* name) {
      if (v <= 0 || v > kMaxSize)
        throw std::invalid_argument(std::string(name) + " must be in [1, " + std::to_string(kMaxSize) + "], got " +
                                    std::to_string(v));
    };
    positive(vocab_size(), "vocab_size");
    positive(hidden_size(), "hidden_size");
    positive(num_hidden_layers(), "num_hidden_layers");
    positive(num_attention_heads(), "num_attention_heads");
    positive(intermediate_size(), "intermediate_size");
    positive(max_position_embeddings(), "max_position_embeddings");
    // DeBERTa reads no token types when type_vocab_size is 0 (its default).
    if (model_type() == "deberta-v2" ? type_vocab_size() < 0 || type_vocab_size() > kMaxSize
                                     : type_vocab_size() <= 0 || type_vocab_size() > kMaxSize)
      throw std::invalid_argument(std::string("type_vocab_size must be in [") +
                                  (model_type() == "deberta-v2" ? "0" : "1") + ", " + std::to_string(kMaxSize) +
                                  "], got " + std::to_string(type_vocab_size()));
    positive(num_hidden_groups(), "num_hidden_groups");
    positive(inner_group_num(), "inner_group_num");
    if (embedding_size() > kMaxSize) positive(embedding_size(), "embedding_size");
    if (hidden_size() % num_attention_heads() != 0)
      throw std::invalid_argument("hidden_size (" + std::to_string(hidden_size()) +
                                  ") must be a multiple of num_attention_heads (" +
                                  std::to_string(num_attention_heads()) + ")");
    if (hidden_act() != "gelu" && hidden_act() != "gelu_new" && hidden_act() != "relu")
      throw std::invalid_argument("hidden_act must be gelu, gelu_new or relu, got '" + hidden_act() + "'");
    auto number = [](double v) {
      char text[32];
      std::snprintf(text, sizeof text, "%g", v);
      return std::string(text);
    };
    auto prob = [&](double p, const char* name) {
      if (!(p >= 0.0 && p < 1.0))
        throw std::invalid_argument(std::string(name) + " must be in [0, 1), got " + number(p));
    };
    prob(hidden_dropout_prob(), "hidden_dropout_prob");
    prob(attention_probs_dropout_prob(), "attention_probs_dropout_prob");
    prob(pooler_dropout(), "pooler_dropout");
    prob(embedding_dropout(), "embedding_dropout");
    // Negative: null / not used.
    if (classifier_dropout() >= 0) prob(classifier_dropout(), "classifier_dropout");
    if (qa_dropout() >= 0) prob(qa_dropout(), "qa_dropout");
    if (seq_classif_dropout() >= 0) prob(seq_classif_dropout(), "seq_classif_dropout");
    if (!(std::isfinite(initializer_range()) && initializer_range() >= 0))
      throw std::invalid_argument("initializer_range must be a finite number >= 0, got " + number(initializer_range()));
    if (!(std::isfinite(layer_norm_eps()) && layer_norm_eps() > 0))
      throw std::invalid_argument("layer_norm_eps must be a finite number > 0, got " + number(layer_norm_eps()));
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
};

}  // namespace unif::models
