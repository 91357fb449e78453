// DistilBERT as HF: `embeddings` (word, position, LayerNorm; no token types), `transformer.layer.N`
// (attention.{q_lin,k_lin,v_lin,out_lin}, sa_layer_norm, ffn.{lin1,lin2}, output_layer_norm), no
// pooler. Sequence head `pre_classifier` → ReLU → dropout (seq_classif_dropout) → `classifier` on
// the first token; QA dropout qa_dropout; MLM head `vocab_transform` → activation →
// `vocab_layer_norm` → `vocab_projector` (tied, own bias). DistilBertConfig's keys map onto
// EncoderConfig: dim → hidden_size, hidden_dim → intermediate_size, n_layers, n_heads, activation →
// hidden_act, dropout → hidden_dropout_prob, attention_dropout → attention_probs_dropout_prob.
#pragma once
#include <cstdint>
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
#include "models/distilbert/config.h"
#include "models/encoder_config.h"
#include "models/encoder_model.h"

namespace unif::models {

struct Packing;

class HfJson;

/// DistilBertSelfAttention: q_lin, k_lin, v_lin, out_lin (H, H).
class DistilBertAttentionImpl : public torch::nn::Module {
 public:
  explicit DistilBertAttentionImpl(const EncoderConfig& options);
  /// With `queries` (B, Lq, H) defined, positions Lq only (keys and values from all of `hidden`).
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask,
                        const torch::Tensor& queries = {});
  int64_t heads;
  torch::nn::Linear q_lin{nullptr}, k_lin{nullptr}, v_lin{nullptr}, out_lin{nullptr};
  Dropout dropout{nullptr};
};
TORCH_MODULE(DistilBertAttention);

/// FFN: lin1 (I, H) → activation → lin2 (H, I) → dropout.
class DistilBertFfnImpl : public torch::nn::Module {
 public:
  explicit DistilBertFfnImpl(const EncoderConfig& options);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear lin1{nullptr}, lin2{nullptr};
  Dropout dropout{nullptr};
  std::function<torch::Tensor(const torch::Tensor&)> act;
};
TORCH_MODULE(DistilBertFfn);

/// TransformerBlock: sa_layer_norm(attention(x) + x), then output_layer_norm(ffn(a) + a). With
/// `queries` (B, Lq, H) the block computes those positions only (the residual taken from them).
class DistilBertBlockImpl : public torch::nn::Module {
 public:
  explicit DistilBertBlockImpl(const EncoderConfig& options);
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& additive_mask,
                        const torch::Tensor& queries = {});
  /// The block on a batch's real tokens x (N, H) (models/packing.h) -> (N, H).
  torch::Tensor forward_packed(const torch::Tensor& x, const Packing& packing, const torch::Tensor& additive_mask);
  DistilBertAttention attention{nullptr};
  torch::nn::LayerNorm sa_layer_norm{nullptr};
  DistilBertFfn ffn{nullptr};
  torch::nn::LayerNorm output_layer_norm{nullptr};
};
TORCH_MODULE(DistilBertBlock);

/// Transformer: `layer` (n_layers blocks).
class DistilBertTransformerImpl : public torch::nn::Module {
 public:
  explicit DistilBertTransformerImpl(const EncoderConfig& options);
  torch::nn::ModuleList layer{nullptr};
};
TORCH_MODULE(DistilBertTransformer);

class DistilBertModelImpl : public EncoderModel {
 public:
  explicit DistilBertModelImpl(EncoderConfig options);
  EncoderOutput encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                       const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                       bool first_token_only, LayerTap* tap = nullptr) override;
  torch::nn::Embedding word_embeddings() override { return embeddings->word_embeddings; }
  const EncoderConfig& encoder_options() const override { return options; }

  EncoderConfig options;
  BertEmbeddings embeddings{nullptr};
  DistilBertTransformer transformer{nullptr};
};

std::shared_ptr<EncoderModel> make_distilbert_encoder(const EncoderConfig& options, bool add_pooling_layer);
std::unique_ptr<SequenceHead> make_distilbert_sequence_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                            int64_t num_labels);
std::unique_ptr<LmHead> make_distilbert_lm_head(torch::nn::Module& owner, EncoderModel& encoder);
/// pad_token_id in [0, vocab_size), n_heads dividing dim.
void check_distilbert_config(const HfJson& config, const EncoderConfig& options);
std::vector<SizedTensor> distilbert_sized_tensors(const EncoderConfig& options);

/// The family's row of the architecture table (models/architectures.h).
Architecture distilbert_architecture();

}  // namespace unif::models
