// RobertaModel as HF (also XLM-RoBERTa's, whose modules are RoBERTa's): RobertaEmbeddings, BERT's
// encoder layers and pooler. Positions start at pad_token_id + 1 and count real tokens only
// (padding keeps position pad_token_id, whose embedding row is the padding row), as HF's
// create_position_ids_from_input_ids. Keys: embeddings.{word,position,token_type}_embeddings,
// embeddings.LayerNorm, encoder.layer.N.… (BERT's), pooler.dense.
#pragma once
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "models/bert/bert_model.h"
#include "models/layers/dropout.h"
#include "models/bert/encoder.h"
#include "models/encoder_model.h"

namespace unif::models {

class RobertaEmbeddingsImpl : public torch::nn::Module {
 public:
  explicit RobertaEmbeddingsImpl(const EncoderConfig& options);
  /// input_ids (B, L) (positions come from it and attention_mask), word_embedding_delta or
  /// undefined, token_type_ids or undefined (zeros), attention_mask (B, L) or undefined -> (B, L, H).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& word_embedding_delta,
                        const torch::Tensor& token_type_ids, const torch::Tensor& attention_mask = {});

  EncoderConfig options;
  torch::nn::Embedding word_embeddings{nullptr};        // (V, H), padding_idx = pad_token_id
  torch::nn::Embedding token_type_embeddings{nullptr};  // (T, H)
  torch::nn::LayerNorm layer_norm{nullptr};             // "LayerNorm"
  Dropout dropout{nullptr};
  torch::nn::Embedding position_embeddings{nullptr};  // (P, H), padding_idx = pad_token_id
};
TORCH_MODULE(RobertaEmbeddings);

class RobertaModelImpl : public EncoderModel {
 public:
  RobertaModelImpl(EncoderConfig options, bool add_pooling_layer);
  EncoderOutput encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                       const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                       bool first_token_only, LayerTap* tap = nullptr) override;
  torch::nn::Embedding word_embeddings() override { return embeddings->word_embeddings; }
  const EncoderConfig& encoder_options() const override { return options; }

  EncoderConfig options;
  RobertaEmbeddings embeddings{nullptr};
  BertEncoder encoder{nullptr};
  BertPooler pooler{nullptr};  // null without a pooling layer
};

}  // namespace unif::models
