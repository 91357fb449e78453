// <Family>ForMaskedLM as HF: the encoder WITHOUT pooler + the family's LM head (BERT:
// `cls.predictions`, RoBERTa: `lm_head`, ...: the row's make_lm_head), whose decoder weight IS the
// word embedding table (tied: the same tensor, not a copy) with a bias of its own (V). HF's tied
// checkpoint copies (the row's tied_keys) are not separate parameters; loaders drop them.
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
#include <torch/nn/pimpl.h>

#include "models/heads/encoder_task_model.h"

namespace unif::models {

class EncoderForMaskedLMImpl : public EncoderTaskModel {
 public:
  explicit EncoderForMaskedLMImpl(const EncoderConfig& options);

  ModelOutput forward(const Batch& batch, const torch::Tensor& word_embedding_delta = {}) override;
  std::shared_ptr<TaskModel> clone_model() const override;
  Task kind() const override { return Task::MaskedLm; }
  /// No labels: config.json keeps HF's BertConfig default num_labels (2).
  int64_t num_labels() const override { return 2; }

  /// Vocabulary logits (N, V) of hidden states (N, H): transform, then the tied decoder.
  torch::Tensor lm_logits(const torch::Tensor& hidden);

 private:
  std::unique_ptr<LmHead> lm_;
};
TORCH_MODULE(EncoderForMaskedLM);

}  // namespace unif::models
