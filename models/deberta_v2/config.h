// DebertaV2Config: the config.json fields DeBERTa-v2/v3 alone reads
// (EncoderConfig::family<DebertaV2Config>()).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/encoder_config.h"

namespace unif::models {

/// Disentangled relative attention (relative_attention), its range (max_relative_positions, <= 0 =
/// max_position_embeddings) and log buckets (position_buckets, <= 0 = none), the attention terms
/// besides content-to-content (pos_att_type: "c2p", "p2c"), position projections shared with
/// query_proj / key_proj (share_att_key), the relative embeddings' normalisation (norm_rel_ebd:
/// "none" or "layer_norm"), absolute positions added to the input (position_biased_input), the
/// sequence heads' ContextPooler (pooler_hidden_size, <= 0 = hidden_size; pooler_hidden_act;
/// pooler_dropout) and the MLM head (legacy: `cls.predictions` as BERT's, else
/// `lm_predictions.lm_head`). Defaults: DebertaV2Config's (and HF's getattr defaults of the keys it
/// does not declare).
class DebertaV2Config : public FamilyConfigOf<DebertaV2Config> {
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

 public:
  void validate(const EncoderConfig& /*config*/) const override {
    config_checks::probability(pooler_dropout(), "pooler_dropout");
  }
  /// DeBERTa reads no token types when type_vocab_size is 0 (v3, its default).
  int64_t min_type_vocab_size() const override { return 0; }
};

}  // namespace unif::models
