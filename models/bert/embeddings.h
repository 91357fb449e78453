// BertEmbeddings: word + token-type + absolute position embeddings, then LayerNorm and dropout, as HF
// `BertEmbeddings`. Registered names are HF's checkpoint keys. `position_ids` is NOT a buffer here
// (HF 4.28 saved it, newer HF does not): positions are always 0..L-1.
#pragma once
#include "models/layers/dropout.h"
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "models/encoder_config.h"

namespace unif::models {

class BertEmbeddingsImpl : public torch::nn::Cloneable<BertEmbeddingsImpl> {
 public:
  /// Width options.embedding_width() (hidden_size for BERT; embedding_size for ELECTRA and ALBERT,
  /// which project it). token_types false: no token_type_embeddings (DistilBERT).
  explicit BertEmbeddingsImpl(EncoderConfig options, bool token_types = true);
  void reset() override;

  /// input_ids (B, L) int64, or inputs_embeds (B, L, H) replacing word_embeddings(input_ids);
  /// token_type_ids (B, L) int64 (undefined = zeros). Returns (B, L, H).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids = {},
                        const torch::Tensor& inputs_embeds = {});

  EncoderConfig options;
  bool token_types;
  torch::nn::Embedding word_embeddings{nullptr};        // (V, H), padding_idx = pad_token_id
  torch::nn::Embedding position_embeddings{nullptr};    // (P, H)
  torch::nn::Embedding token_type_embeddings{nullptr};  // (T, H); null without token types
  torch::nn::LayerNorm layer_norm{nullptr};             // registered as "LayerNorm"
  Dropout dropout{nullptr};
};
TORCH_MODULE(BertEmbeddings);

}  // namespace unif::models
