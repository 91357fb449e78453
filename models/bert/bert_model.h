// BertModel: embeddings, encoder and (optionally) the pooler, as HF `BertModel`. Parameter names are
// HF's (`embeddings.word_embeddings.weight`, `encoder.layer.0.attention.self.query.weight`,
// `pooler.dense.bias`, ...). Heads (models/heads/) register it as "bert".
//
// Example:
//   EncoderConfig opt; opt.vocab_size(21128).hidden_size(32).num_hidden_layers(2).num_attention_heads(4);
//   BertModel bert(opt);
//   auto out = bert->forward(input_ids, token_type_ids, attention_mask);  // out.last_hidden_state (B, L, H)
#pragma once
#include <torch/nn/cloneable.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include "models/bert/embeddings.h"
#include "models/bert/encoder.h"
#include "models/encoder_config.h"
#include "models/encoder_model.h"

namespace unif::models {

/// BertPooler: tanh(dense(hidden[:, 0])), the [CLS] representation. (B, L, H) -> (B, H).
class BertPoolerImpl : public torch::nn::Cloneable<BertPoolerImpl> {
 public:
  explicit BertPoolerImpl(EncoderConfig options);
  void reset() override;
  torch::Tensor forward(const torch::Tensor& hidden);

  EncoderConfig options;
  torch::nn::Linear dense{nullptr};  // (H, H)
};
TORCH_MODULE(BertPooler);

using BertModelOutput = EncoderOutput;

/// HF's get_extended_attention_mask: (1 - mask) * finfo(dtype).min, shaped (B, 1, 1, L).
torch::Tensor extended_attention_mask(const torch::Tensor& attention_mask, torch::Dtype dtype);

class BertModelImpl : public EncoderModel {
 public:
  /// Builds and initialises (init_bert_weights) the model; throws std::invalid_argument on bad options.
  explicit BertModelImpl(EncoderConfig options, bool add_pooling_layer = true);
  void reset();

  EncoderOutput encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                       const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                       bool first_token_only, LayerTap* tap = nullptr) override;
  torch::nn::Embedding word_embeddings() override { return embeddings->word_embeddings; }
  const EncoderConfig& encoder_options() const override { return options; }

  /// Give input_ids (B, L) int64 or inputs_embeds (B, L, H) (replaces word_embeddings(input_ids));
  /// token_type_ids (B, L) default zeros; attention_mask (B, L) 1/0, default ones.
  /// first_token_only: the last layer computes position 0 only, so last_hidden_state is (B, 1, H)
  /// (the full output's first position) and pooler_output is unchanged: for heads that read the
  /// pooled [CLS] alone. It saves most of the last layer (its queries, attention output and
  /// feed-forward for L - 1 positions): about 1 / num_hidden_layers of the step.
  BertModelOutput forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids = {},
                          const torch::Tensor& attention_mask = {}, const torch::Tensor& inputs_embeds = {},
                          bool first_token_only = false, LayerTap* tap = nullptr);

  EncoderConfig options;
  bool add_pooling_layer;
  BertEmbeddings embeddings{nullptr};
  BertEncoder encoder{nullptr};
  BertPooler pooler{nullptr};  // null when !add_pooling_layer
};
TORCH_MODULE(BertModel);

}  // namespace unif::models
