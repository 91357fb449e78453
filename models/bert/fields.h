// BertConfig's config.json keys (models/hf_fields.h), which RoBERTa, ELECTRA, ALBERT and DeBERTa
// configs share: their field lists visit these and add their own.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include "models/encoder_config.h"
#include "models/hf_fields.h"

namespace unif::models {

class HfJson;

/// position_embedding_type: only "absolute" is read; written as "absolute" where the file has none.
void read_absolute_positions(const HfJson& config, EncoderConfig& c);
void write_absolute_positions(const EncoderConfig& c, nlohmann::json& config);
/// embedding_size written as the embeddings' width (hidden_size where it is not set).
void write_embedding_width(const EncoderConfig& c, nlohmann::json& config);

struct BertFields {
  static void defaults(EncoderConfig& /*c*/) {}
  /// vocab_size ... pad_token_id, each within its range (sizes in [1, kMaxSize], dropouts in [0, 1), ...);
  /// type_vocab_size only with `token_types` (MPNet's config has none).
  template <class V>
  static void visit_common(V& v, bool token_types = true) {
    using namespace hf_fields;
    v("vocab_size", UNIF_HF_FIELD(vocab_size), kSize);
    v("hidden_size", UNIF_HF_FIELD(hidden_size), kSize);
    v("num_hidden_layers", UNIF_HF_FIELD(num_hidden_layers), kSize);
    v("num_attention_heads", UNIF_HF_FIELD(num_attention_heads), kSize);
    v("intermediate_size", UNIF_HF_FIELD(intermediate_size), kSize);
    v("hidden_act", UNIF_HF_FIELD(hidden_act));
    v("hidden_dropout_prob", UNIF_HF_FIELD(hidden_dropout_prob), kProbability);
    v("attention_probs_dropout_prob", UNIF_HF_FIELD(attention_probs_dropout_prob), kProbability);
    v("max_position_embeddings", UNIF_HF_FIELD(max_position_embeddings), kSize);
    // 0: no token types (DeBERTa-v3); the families that read token types check it is >= 1.
    if (token_types) v("type_vocab_size", UNIF_HF_FIELD(type_vocab_size), kSizeOrZero);
    v("initializer_range", UNIF_HF_FIELD(initializer_range), kNonNegative);
    v("layer_norm_eps", UNIF_HF_FIELD(layer_norm_eps), kPositive);
    v("pad_token_id", UNIF_HF_FIELD(pad_token_id), kNullKeeps);
  }
  template <class V>
  static void visit(V& v) {
    using namespace hf_fields;
    visit_common(v);
    v("classifier_dropout", UNIF_HF_FIELD(classifier_dropout), kNullableProbability, kNullWhenNegative);
    v.custom("position_embedding_type", read_absolute_positions, write_absolute_positions);
  }
};

}  // namespace unif::models
