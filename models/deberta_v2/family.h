// DeBERTa-v2 / DeBERTa-v3 (model_type "deberta-v2") as HF transformers 5's modeling_deberta_v2.py, op by op:
//   `deberta.embeddings`: word_embeddings (padding_idx pad_token_id), position_embeddings only when
//     position_biased_input, token_type_embeddings only when type_vocab_size > 0, embed_proj (no bias)
//     when embedding_size != hidden_size, LayerNorm (layer_norm_eps), then × attention_mask, dropout.
//   `deberta.encoder`: `layer.N` = attention.self (DisentangledSelfAttention: query_proj, key_proj,
//     value_proj; with relative_attention and without share_att_key pos_key_proj (c2p) / pos_query_proj
//     (p2c)), attention.output (dense, LayerNorm), intermediate.dense, output (dense, LayerNorm);
//     rel_embeddings (2·position_buckets or 2·max_relative_positions rows) and LayerNorm when
//     norm_rel_ebd has layer_norm. Scores: q·(k/√(d·s))ᵀ + c2p + p2c, s = 1 + |pos_att_type|; the
//     relative positions are log-bucketed (make_log_bucket_position); the mask is mask_i·mask_j.
// Heads: sequence = ContextPooler `pooler.dense` (dropout pooler_dropout on token 0, dense,
// pooler_hidden_act) + dropout (cls_dropout, else hidden_dropout_prob) + `classifier`; token and span
// heads the generic ones; MLM (config legacy, HF's default) `cls.predictions` (transform.dense(H, E) →
// act → transform.LayerNorm(E) → tied decoder + `cls.predictions.bias`), or with legacy false
// `lm_predictions.lm_head` (dense(H, H) → act → LayerNorm → word embeddingsᵀ + bias).
// Not supported (std::invalid_argument): conv_kernel_size > 0 (DeBERTa-v2-xlarge's ConvLayer),
// attention_head_size other than hidden_size / num_attention_heads.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "models/architectures.h"
#include "models/bert/attention.h"
#include "models/layers/dropout.h"
#include "models/bert/layer.h"
#include "models/deberta_v2/config.h"
#include "models/encoder_config.h"
#include "models/encoder_model.h"

namespace unif::models {

class HfJson;

class DebertaV2EmbeddingsImpl : public torch::nn::Module {
 public:
  explicit DebertaV2EmbeddingsImpl(const EncoderConfig& options);
  /// words (B, L, E) = word_embeddings(input_ids) (+ delta); mask (B, L) 1/0.
  torch::Tensor forward(const torch::Tensor& words, const torch::Tensor& token_type_ids, const torch::Tensor& mask);
  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr}, token_type_embeddings{nullptr};
  torch::nn::Linear embed_proj{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};  // "LayerNorm"
  Dropout dropout{nullptr};
};
TORCH_MODULE(DebertaV2Embeddings);

/// DisentangledSelfAttention (registered as `self`).
class DisentangledSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit DisentangledSelfAttentionImpl(const EncoderConfig& options);
  /// hidden (B, L, H); mask (B, 1, L, L) bool; relative_pos (L, L) int64; rel_embeddings (2S', H)
  /// (undefined without relative attention) -> the context (B, L, H).
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& mask, const torch::Tensor& relative_pos,
                        const torch::Tensor& rel_embeddings);

  int64_t heads = 0;
  bool relative_attention = false, share_att_key = false, c2p = false, p2c = false;
  int64_t pos_ebd_size = 0;
  torch::nn::Linear query_proj{nullptr}, key_proj{nullptr}, value_proj{nullptr};
  torch::nn::Linear pos_key_proj{nullptr}, pos_query_proj{nullptr};  // without share_att_key
  Dropout pos_dropout{nullptr}, dropout{nullptr};

 private:
  torch::Tensor disentangled_bias(const torch::Tensor& query, const torch::Tensor& key,
                                  const torch::Tensor& relative_pos, const torch::Tensor& rel_embeddings,
                                  int64_t scale_factor);
};
TORCH_MODULE(DisentangledSelfAttention);

/// DebertaV2Attention: `self` (DisentangledSelfAttention), `output` (BERT's self-output: dense,
/// dropout, residual LayerNorm).
class DebertaV2AttentionImpl : public torch::nn::Module {
 public:
  explicit DebertaV2AttentionImpl(const EncoderConfig& options);
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& mask, const torch::Tensor& relative_pos,
                        const torch::Tensor& rel_embeddings);
  DisentangledSelfAttention self{nullptr};
  BertSelfOutput output{nullptr};
};
TORCH_MODULE(DebertaV2Attention);

/// DebertaV2Layer: `attention`, `intermediate` (dense + hidden_act), `output` (dense, dropout,
/// residual LayerNorm), BERT's modules for the last two.
class DebertaV2LayerImpl : public torch::nn::Module {
 public:
  explicit DebertaV2LayerImpl(const EncoderConfig& options);
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& mask, const torch::Tensor& relative_pos,
                        const torch::Tensor& rel_embeddings);
  DebertaV2Attention attention{nullptr};
  BertIntermediate intermediate{nullptr};
  BertOutput output{nullptr};
};
TORCH_MODULE(DebertaV2Layer);

class DebertaV2EncoderImpl : public torch::nn::Module {
 public:
  explicit DebertaV2EncoderImpl(const EncoderConfig& options);
  /// embedded (B, L, H), attention_mask (B, L) 1/0 -> (B, L, H).
  torch::Tensor forward(const torch::Tensor& embedded, const torch::Tensor& attention_mask, LayerTap* tap = nullptr);
  EncoderConfig options;
  torch::nn::ModuleList layer{nullptr};
  torch::nn::Embedding rel_embeddings{nullptr};  // with relative_attention
  torch::nn::LayerNorm layer_norm{nullptr};      // "LayerNorm", with norm_rel_ebd layer_norm
};
TORCH_MODULE(DebertaV2Encoder);

class DebertaV2ModelImpl : public EncoderModel {
 public:
  explicit DebertaV2ModelImpl(EncoderConfig options);
  EncoderOutput encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                       const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                       bool first_token_only, LayerTap* tap = nullptr) override;
  torch::nn::Embedding word_embeddings() override { return embeddings->word_embeddings; }
  const EncoderConfig& encoder_options() const override { return options; }

  EncoderConfig options;
  DebertaV2Embeddings embeddings{nullptr};
  DebertaV2Encoder encoder{nullptr};
};

/// HF's make_log_bucket_position on relative positions (int64) -> float32 bucket positions.
torch::Tensor make_log_bucket_position(const torch::Tensor& relative_pos, int64_t bucket_size, int64_t max_position);
/// HF's build_relative_position for a length-L self-attention: (L, L) int64, q - k, log-bucketed when
/// bucket_size > 0 and max_position > 0.
torch::Tensor build_relative_position(int64_t length, int64_t bucket_size, int64_t max_position,
                                      const torch::Device& device);

std::shared_ptr<EncoderModel> make_deberta_v2_encoder(const EncoderConfig& options, bool add_pooling_layer);
std::unique_ptr<SequenceHead> make_deberta_v2_sequence_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                            int64_t num_labels);
std::unique_ptr<LmHead> make_deberta_v2_lm_head(torch::nn::Module& owner, EncoderModel& encoder);
/// check_bert_relations, attention_head_size and pooler_hidden_size as supported.
void check_deberta_v2_config(const HfJson& config, const EncoderConfig& options);
std::vector<SizedTensor> deberta_v2_sized_tensors(const EncoderConfig& options);

/// The family's row of the architecture table (models/architectures.h).
Architecture deberta_v2_architecture();

}  // namespace unif::models
