// MPNet (model_type "mpnet") as HF transformers 5's modeling_mpnet.py, op by op:
//   `mpnet.embeddings`: word_embeddings and position_embeddings (padding_idx 1, HF's constant whatever
//     pad_token_id says), LayerNorm, dropout; no token types. Positions as RoBERTa's: 1 + the count of
//     real tokens up to here, 1 at padding (create_position_ids_from_input_ids with padding_idx 1).
//   `mpnet.encoder`: `layer.N` = attention.attn (q, k, v, o), attention.LayerNorm
//     (LayerNorm(dropout(o(context)) + x)), intermediate.dense + hidden_act, output (dense, dropout,
//     residual LayerNorm); one `relative_attention_bias` (relative_attention_num_buckets x heads) for
//     all layers: compute_position_bias buckets j - i of the arange positions (not the padding-aware
//     ones) with T5's bidirectional relative_position_bucket (32 buckets, max_distance 128: half of
//     them for keys after the query, exact distances below 8, logarithmic up to 128), once per
//     forward. Scores q·kᵀ/√d + that bias + the additive mask (finfo.min at padding).
//   `mpnet.pooler`: dense + tanh on position 0 (MPNetModel's; the task heads have none).
// Heads: sequence = RoBERTa's ClassificationHead (`classifier.dense`, `classifier.out_proj`, tanh,
// dropout hidden_dropout_prob); token = dropout + `classifier`; span = `qa_outputs`; MLM = RoBERTa's
// `lm_head` (dense → gelu → layer_norm → decoder tied to the word embeddings + `lm_head.bias`).
// Unpadded batches (EncoderConfig::unpad_inputs) run the per-token layers on the real tokens only
// (models/packing.h); the bias rides on the padded rectangle's attention with the mask.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "models/architectures.h"
#include "models/bert/bert_model.h"
#include "models/bert/layer.h"
#include "models/encoder_config.h"
#include "models/encoder_model.h"
#include "models/layers/dropout.h"
#include "models/mpnet/config.h"

namespace unif::models {

class HfJson;
struct Packing;

/// HF MPNetEmbeddings.padding_idx: the padding row of both tables, positions start after it.
inline constexpr int64_t kMPNetPaddingIdx = 1;

class MPNetEmbeddingsImpl : public torch::nn::Module {
 public:
  explicit MPNetEmbeddingsImpl(const EncoderConfig& options);
  /// words (B, L, H) = word_embeddings(input_ids) (+ delta); input_ids and attention_mask (B, L) give
  /// the positions -> (B, L, H).
  torch::Tensor forward(const torch::Tensor& words, const torch::Tensor& input_ids,
                        const torch::Tensor& attention_mask);
  int64_t max_position_embeddings = 0;
  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};  // "LayerNorm"
  Dropout dropout{nullptr};
};
TORCH_MODULE(MPNetEmbeddings);

/// MPNetSelfAttention (registered as `attn`): q, k, v, o.
class MPNetSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit MPNetSelfAttentionImpl(const EncoderConfig& options);
  /// hidden (B, L, H); additive (B or 1, heads or 1, Lq, L): the position bias plus the mask; with
  /// `queries` (B, Lq, H) only those positions ask -> o(context) (B, Lq, H).
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& additive, const torch::Tensor& queries = {});
  int64_t heads = 0;
  torch::nn::Linear q{nullptr}, k{nullptr}, v{nullptr}, o{nullptr};
  Dropout dropout{nullptr};  // attention_probs_dropout_prob
};
TORCH_MODULE(MPNetSelfAttention);

/// MPNetAttention: LayerNorm(dropout(attn(x)) + x).
class MPNetAttentionImpl : public torch::nn::Module {
 public:
  explicit MPNetAttentionImpl(const EncoderConfig& options);
  /// As MPNetSelfAttention's forward; the residual is `queries` where given, else `hidden`.
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& additive, const torch::Tensor& queries = {});
  /// The real tokens x (N, H) of a batch (packing.h); attention on its padded rectangle -> (N, H).
  torch::Tensor forward_packed(const torch::Tensor& x, const Packing& packing, const torch::Tensor& additive);
  MPNetSelfAttention attn{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};  // "LayerNorm"
  Dropout dropout{nullptr};                  // hidden_dropout_prob
};
TORCH_MODULE(MPNetAttention);

/// MPNetLayer: `attention`, then BERT's `intermediate` and `output`.
class MPNetLayerImpl : public torch::nn::Module {
 public:
  explicit MPNetLayerImpl(const EncoderConfig& options);
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& additive, const torch::Tensor& queries = {});
  torch::Tensor forward_packed(const torch::Tensor& x, const Packing& packing, const torch::Tensor& additive);
  MPNetAttention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertOutput output{nullptr};
};
TORCH_MODULE(MPNetLayer);

class MPNetEncoderImpl : public torch::nn::Module {
 public:
  explicit MPNetEncoderImpl(const EncoderConfig& options);
  /// embedded (B, L, H), attention_mask (B, L) 1/0 -> (B, L, H); with first_token_only the last
  /// layer computes position 0 alone -> (B, 1, H).
  torch::Tensor forward(torch::Tensor embedded, const torch::Tensor& attention_mask, bool first_token_only = false,
                        LayerTap* tap = nullptr);
  /// compute_position_bias for a length-L input: (1, heads, L, L).
  torch::Tensor position_bias(int64_t length, const torch::Device& device);
  EncoderConfig options;
  torch::nn::ModuleList layer{nullptr};
  torch::nn::Embedding relative_attention_bias{nullptr};  // (relative_attention_num_buckets, heads)
};
TORCH_MODULE(MPNetEncoder);

class MPNetModelImpl : public EncoderModel {
 public:
  MPNetModelImpl(EncoderConfig options, bool add_pooling_layer);
  EncoderOutput encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                       const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                       bool first_token_only, LayerTap* tap = nullptr) override;
  torch::nn::Embedding word_embeddings() override { return embeddings->word_embeddings; }
  const EncoderConfig& encoder_options() const override { return options; }

  EncoderConfig options;
  MPNetEmbeddings embeddings{nullptr};
  MPNetEncoder encoder{nullptr};
  BertPooler pooler{nullptr};  // null without a pooling layer
};

/// HF's MPNetEncoder.relative_position_bucket (T5's bidirectional buckets) of relative positions
/// j - i (int64): half of num_buckets for j > i, exact distances below num_buckets / 4, logarithmic
/// ones up to max_distance, the last bucket beyond -> int64 buckets in [0, num_buckets).
torch::Tensor mpnet_relative_position_bucket(const torch::Tensor& relative_position,
                                             int64_t num_buckets = kMPNetPositionBuckets, int64_t max_distance = 128);

std::shared_ptr<EncoderModel> make_mpnet_encoder(const EncoderConfig& options, bool add_pooling_layer);
/// check_bert_relations, max_position_embeddings > padding_idx + 1 and at least 32 relative buckets.
void check_mpnet_config(const HfJson& config, const EncoderConfig& options);
std::vector<SizedTensor> mpnet_sized_tensors(const EncoderConfig& options);

/// The family's row of the architecture table (models/architectures.h).
Architecture mpnet_architecture();

}  // namespace unif::models
