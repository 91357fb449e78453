// ModernBertConfig: the config.json fields ModernBERT alone reads
// (EncoderConfig::family<ModernBertConfig>()).
#pragma once
#include <string>
#include <vector>

#include "models/encoder_config.h"

namespace unif::models {

/// Biases of the LayerNorms (norm_bias), the attention's Wqkv/Wo (attention_bias), the MLP's Wi/Wo
/// (mlp_bias), the heads' dense (classifier_bias) and the MLM decoder (decoder_bias); the prediction
/// head's activation (classifier_activation); the sequence heads' pooling ("cls" or "mean":
/// classifier_pooling); per layer "full_attention" or "sliding_attention" (layer_types; empty =
/// every third layer full from layer 0, HF's global_attn_every_n_layers 3), the sliding window
/// (local_attention: |i - j| <= local_attention / 2), the rotary bases of full and sliding layers
/// (global_rope_theta, local_rope_theta), the embeddings' dropout (embedding_dropout) and the init's
/// truncation (initializer_cutoff_factor). Defaults: ModernBertConfig's.
class ModernBertConfig : public FamilyConfigOf<ModernBertConfig> {
  TORCH_ARG(bool, norm_bias) = false;
  TORCH_ARG(bool, attention_bias) = false;
  TORCH_ARG(bool, mlp_bias) = false;
  TORCH_ARG(bool, classifier_bias) = false;
  TORCH_ARG(bool, decoder_bias) = true;
  TORCH_ARG(std::string, classifier_activation) = "gelu";
  TORCH_ARG(std::string, classifier_pooling) = "cls";
  TORCH_ARG(std::vector<std::string>, layer_types) = {};
  TORCH_ARG(int64_t, local_attention) = 128;
  TORCH_ARG(double, global_rope_theta) = 160000.0;
  TORCH_ARG(double, local_rope_theta) = 10000.0;
  TORCH_ARG(double, embedding_dropout) = 0.0;
  TORCH_ARG(double, initializer_cutoff_factor) = 2.0;

 public:
  void validate(const EncoderConfig& /*config*/) const override {
    config_checks::probability(embedding_dropout(), "embedding_dropout");
  }
};

}  // namespace unif::models
