// BertForMaskedLM as HF: bert WITHOUT pooler + `cls.predictions` (BertLMPredictionHead):
// transform = dense(H, H) → hidden_act → LayerNorm, then the decoder, whose weight IS the word
// embedding table (tied: the same tensor, not a copy) and whose bias is `cls.predictions.bias` (V).
// Checkpoint keys: cls.predictions.transform.dense.{weight,bias},
// cls.predictions.transform.LayerNorm.{weight,bias}, cls.predictions.bias (HF's tied
// cls.predictions.decoder.{weight,bias} are not separate parameters; loaders drop them).
//
// Labels (B, L) int64: the original id at the positions to predict, -100 elsewhere. With labels,
// only those M positions go through the decoder: logits are (M, V) in row-major (example, position)
// order, l_b = Σ over b's labelled positions of the cross-entropy, loss_count = M (SPEC §5: Z counts
// predicted tokens, so Σ_b l_b / M is HF's MLM loss). Without labels, logits are (B, L, V).
//
// The decoder's gradient reaches the tied table as a dense (V, H) tensor, so with sparse
// embeddings the table's gradient is dense (the sparse lookup rows added in): the engines' dense
// path sums it over replicas and processes, exactly.
#pragma once
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "models/heads/bert_task_model.h"

namespace unif::models {

/// cls.predictions.transform: dense → act → LayerNorm.
class MlmTransformImpl : public torch::nn::Module {
 public:
  explicit MlmTransformImpl(const BertOptions& options);
  torch::Tensor forward(const torch::Tensor& hidden);
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};  // "LayerNorm"

 private:
  std::function<torch::Tensor(const torch::Tensor&)> act_;
};
TORCH_MODULE(MlmTransform);

/// cls.predictions: transform + the output bias (V).
class MlmPredictionsImpl : public torch::nn::Module {
 public:
  explicit MlmPredictionsImpl(const BertOptions& options);
  MlmTransform transform{nullptr};
  torch::Tensor bias;
};
TORCH_MODULE(MlmPredictions);

/// cls (BertOnlyMLMHead).
class MlmHeadImpl : public torch::nn::Module {
 public:
  explicit MlmHeadImpl(const BertOptions& options);
  MlmPredictions predictions{nullptr};
};
TORCH_MODULE(MlmHead);

class BertForMaskedLMImpl : public BertTaskModel {
 public:
  explicit BertForMaskedLMImpl(const BertOptions& options);

  ModelOutput forward(const Batch& batch, const torch::Tensor& word_embedding_delta = {}) override;
  std::shared_ptr<TaskModel> clone_model() const override;
  Task kind() const override { return Task::MaskedLm; }
  /// No labels: config.json keeps HF's BertConfig default num_labels (2).
  int64_t num_labels() const override { return 2; }

  /// Vocabulary logits (N, V) of hidden states (N, H): transform, then the tied decoder.
  torch::Tensor lm_logits(const torch::Tensor& hidden);

  MlmHead cls{nullptr};
};
TORCH_MODULE(BertForMaskedLM);

}  // namespace unif::models
