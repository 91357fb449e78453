// ModernBERT (model_type "modernbert") as HF transformers 5's modeling_modernbert.py, op by op:
//   `model.embeddings`: tok_embeddings (padding_idx pad_token_id), norm (LayerNorm, bias by
//     norm_bias), drop (embedding_dropout). No positions here, no token types.
//   `model.layers.N`: pre-norm blocks x + attn(attn_norm(x)), then x + mlp(mlp_norm(x)); attn_norm is
//     HF's Identity in layer 0 (no parameters). attn.Wqkv (H -> 3H) gives q, k, v per head; q and k get
//     rotary embeddings (inv_freq = 1 / theta^(2i/d), cos/sin of position · inv_freq over both halves,
//     rotate_half), theta global_rope_theta in full-attention layers and local_rope_theta in sliding
//     ones; scores q·kᵀ/√d + mask, the sliding layers' mask also hiding keys with |i - j| >
//     local_attention / 2; attn.Wo. mlp: Wi (H -> 2I) chunked into input and gate, Wo(act(input) ·
//     gate) (GeGLU). Linear biases by attention_bias and mlp_bias.
//   `model.final_norm` on the last layer's output.
// Heads (on the task model): `head` (ModernBertPredictionHead: dense (bias classifier_bias) ->
// classifier_activation -> norm), `drop` (classifier_dropout), `classifier`. Sequence heads pool
// position 0 ("cls") or the mean over the attention mask ("mean") before `head`; token and span heads
// run `head` on every position (the span head's `classifier` gives start and end); MLM: `head` then
// `decoder` (weight tied to tok_embeddings, bias by decoder_bias). Layers are full or sliding by
// layer_types (HF's global_attn_every_n_layers in older config files: layer i is full when
// i % n == 0).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "models/architectures.h"
#include "models/layers/dropout.h"
#include "models/modernbert/config.h"
#include "models/encoder_config.h"
#include "models/encoder_model.h"
#include "models/packing.h"

namespace unif::models {

class HfJson;

/// nn.LayerNorm with an optional bias (HF's bias=norm_bias): `weight`, and `bias` when `bias`.
class ModernBertNormImpl : public torch::nn::Module {
 public:
  ModernBertNormImpl(int64_t width, double eps, bool bias);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight, bias;
  int64_t width;
  double eps;
};
TORCH_MODULE(ModernBertNorm);

class ModernBertEmbeddingsImpl : public torch::nn::Module {
 public:
  explicit ModernBertEmbeddingsImpl(const EncoderConfig& options);
  /// words (B, L, H) = tok_embeddings(input_ids) (+ delta) -> drop(norm(words)).
  torch::Tensor forward(const torch::Tensor& words);
  torch::nn::Embedding tok_embeddings{nullptr};
  ModernBertNorm norm{nullptr};
  Dropout drop{nullptr};
};
TORCH_MODULE(ModernBertEmbeddings);

class ModernBertAttentionImpl : public torch::nn::Module {
 public:
  explicit ModernBertAttentionImpl(const EncoderConfig& options);
  /// hidden (B, L, H); cos, sin (L, d); additive_mask (B, 1, 1 or L, L) -> (B, L, H). With `packing`
  /// hidden is (N, H), the real tokens, and so is the result. first_only (no packing): position 0's
  /// query alone, over every key -> (B, 1, H).
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& additive_mask, const Packing* packing = nullptr, bool first_only = false);
  int64_t heads;
  torch::nn::Linear Wqkv{nullptr}, Wo{nullptr};
  Dropout attention_dropout{nullptr}, out_drop{nullptr};
};
TORCH_MODULE(ModernBertAttention);

class ModernBertMLPImpl : public torch::nn::Module {
 public:
  explicit ModernBertMLPImpl(const EncoderConfig& options);
  torch::Tensor forward(const torch::Tensor& x);
  torch::nn::Linear Wi{nullptr}, Wo{nullptr};
  Dropout drop{nullptr};

 private:
  std::function<torch::Tensor(const torch::Tensor&)> act_;
};
TORCH_MODULE(ModernBertMLP);

class ModernBertEncoderLayerImpl : public torch::nn::Module {
 public:
  ModernBertEncoderLayerImpl(const EncoderConfig& options, int64_t index);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& additive_mask, const Packing* packing = nullptr);
  /// x (B, L, H) -> position 0's output alone (B, 1, H): a last layer under a head that reads it only.
  torch::Tensor forward_first(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                              const torch::Tensor& additive_mask);
  ModernBertNorm attn_norm{nullptr};  // none in layer 0 (HF's Identity)
  ModernBertAttention attn{nullptr};
  ModernBertNorm mlp_norm{nullptr};
  ModernBertMLP mlp{nullptr};
  bool sliding = false;
};
TORCH_MODULE(ModernBertEncoderLayer);

class ModernBertModelImpl : public EncoderModel {
 public:
  explicit ModernBertModelImpl(EncoderConfig options);
  EncoderOutput encode(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                       const torch::Tensor& attention_mask, const torch::Tensor& word_embedding_delta,
                       bool first_token_only, LayerTap* tap = nullptr) override;
  torch::nn::Embedding word_embeddings() override { return embeddings->tok_embeddings; }
  const EncoderConfig& encoder_options() const override { return options; }

  EncoderConfig options;
  ModernBertEmbeddings embeddings{nullptr};
  torch::nn::ModuleList layers{nullptr};
  ModernBertNorm final_norm{nullptr};
};

/// Whether layer `index` uses sliding-window attention (layer_types, or every third layer full).
bool modernbert_sliding_layer(const EncoderConfig& options, int64_t index);

std::shared_ptr<EncoderModel> make_modernbert_encoder(const EncoderConfig& options, bool add_pooling_layer);
std::unique_ptr<SequenceHead> make_modernbert_sequence_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                            int64_t num_labels);
std::unique_ptr<TokenHead> make_modernbert_token_head(torch::nn::Module& owner, const EncoderConfig& options,
                                                      int64_t num_outputs);
std::unique_ptr<LmHead> make_modernbert_lm_head(torch::nn::Module& owner, EncoderModel& encoder);
/// ModernBertConfig's defaults, then its keys (global_attn_every_n_layers, global_rope_theta and
/// local_rope_theta of older files; layer_types and rope_parameters of transformers 5's).
/// Both spellings, so that transformers 4 and 5 read the same model.
/// pad_token_id in [0, vocab_size) where given, num_attention_heads dividing hidden_size into heads
/// of an even size (rotary), one layer_types entry per layer.
void check_modernbert_config(const HfJson& config, const EncoderConfig& options);
std::vector<SizedTensor> modernbert_sized_tensors(const EncoderConfig& options);

/// The family's row of the architecture table (models/architectures.h).
Architecture modernbert_architecture();

}  // namespace unif::models
