// ALBERT as HF: embeddings of width embedding_size (BERT's modules), `encoder` = AlbertTransformer
// (`embedding_hidden_mapping_in` Linear(E, H), `albert_layer_groups.G.albert_layers.I` with
// `attention.{query,key,value,dense,LayerNorm}`, `ffn`, `ffn_output`, `full_layer_layer_norm`; layer
// i runs group i / (num_hidden_layers / num_hidden_groups), so layers share parameters), `pooler`
// Linear(H, H) + tanh. Sequence head: BERT's (dropout classifier_dropout_prob + `classifier` on the
// pooler); MLM head `predictions` (dense(H, E) → hidden_act → LayerNorm(E) → tied decoder + bias).
// AlbertConfig keys: BertConfig's + embedding_size, num_hidden_groups, inner_group_num,
// classifier_dropout_prob.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "models/architectures.h"
#include "models/layers/dropout.h"
#include "models/bert/embeddings.h"
#include "models/albert/config.h"
#include "models/encoder_config.h"
#include "models/encoder_model.h"

namespace unif::models {

struct Packing;

class HfJson;

/// AlbertAttention: LayerNorm(x + dropout(dense(attention(query, key, value)))).
class AlbertAttentionImpl : public torch::nn::Module {
 public:
  explicit AlbertAttentionImpl(const EncoderConfig& options);
  /// With `queries` (B, Lq, H) defined, positions Lq only (the residual taken from them).
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask,
                        const torch::Tensor& queries = {});
  int64_t heads;
  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr}, dense{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};  // "LayerNorm"
  Dropout attention_dropout{nullptr}, output_dropout{nullptr};
};
TORCH_MODULE(AlbertAttention);

/// AlbertLayer: full_layer_layer_norm(ffn_output(act(ffn(a))) + a), a = attention(x).
class AlbertLayerImpl : public torch::nn::Module {
 public:
  explicit AlbertLayerImpl(const EncoderConfig& options);
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask,
                        const torch::Tensor& queries = {});
  /// The layer on a batch's real tokens x (N, H) (models/packing.h) -> (N, H).
  torch::Tensor forward_packed(const torch::Tensor& x, const Packing& packing, const torch::Tensor& additive_mask);
  torch::nn::LayerNorm full_layer_layer_norm{nullptr};
  AlbertAttention attention{nullptr};
  torch::nn::Linear ffn{nullptr}, ffn_output{nullptr};
  std::function<torch::Tensor(const torch::Tensor&)> act;
};
TORCH_MODULE(AlbertLayer);

/// AlbertLayerGroup: `albert_layers` (inner_group_num layers).
class AlbertLayerGroupImpl : public torch::nn::Module {
 public:
  explicit AlbertLayerGroupImpl(const EncoderConfig& options);
  torch::nn::ModuleList albert_layers{nullptr};
};
TORCH_MODULE(AlbertLayerGroup);

class AlbertTransformerImpl : public torch::nn::Module {
 public:
  explicit AlbertTransformerImpl(const EncoderConfig& options);
  /// first_token_only: the last layer computes position 0 alone (B, 1, H).
  torch::Tensor forward(const torch::Tensor& embedded, const torch::Tensor& additive_mask,
                        bool first_token_only = false, LayerTap* tap = nullptr);
  EncoderConfig options;
  torch::nn::Linear embedding_hidden_mapping_in{nullptr};
  torch::nn::ModuleList albert_layer_groups{nullptr};
};
TORCH_MODULE(AlbertTransformer);

class AlbertModelImpl : public EncoderModel {
 public:
  AlbertModelImpl(EncoderConfig options, bool add_pooling_layer);
  EncoderOutput encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                       const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                       bool first_token_only, LayerTap* tap = nullptr) override;
  torch::nn::Embedding word_embeddings() override { return embeddings->word_embeddings; }
  const EncoderConfig& encoder_options() const override { return options; }

  EncoderConfig options;
  BertEmbeddings embeddings{nullptr};
  AlbertTransformer encoder{nullptr};
  torch::nn::Linear pooler{nullptr};  // null without a pooling layer
};

std::shared_ptr<EncoderModel> make_albert_encoder(const EncoderConfig& options, bool add_pooling_layer);
std::unique_ptr<LmHead> make_albert_lm_head(torch::nn::Module& owner, EncoderModel& encoder);
/// check_bert_config, and num_hidden_groups at most num_hidden_layers.
void check_albert_config(const HfJson& config, const EncoderConfig& options);
/// The embeddings (embedding_size wide), `embedding_hidden_mapping_in` and each group's layers.
std::vector<SizedTensor> albert_sized_tensors(const EncoderConfig& options);

/// The family's row of the architecture table (models/architectures.h).
Architecture albert_architecture();

}  // namespace unif::models
