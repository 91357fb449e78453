// <Family>Model as a sentence embedder (sentence-transformers' Transformer + Pooling [+ Normalize]):
// the family's encoder without a pooler, its token states pooled over the attention mask
// (models/heads/embedding/pooling.h) and, when asked, L2-normalized. Trained with a loss over the
// whole batch (models/heads/embedding/losses.h: in-batch negatives, CoSENT, cosine MSE, Matryoshka),
// so the model couples the batch's examples (TaskModel::couples_examples) and the engines gather
// every replica's and rank's embeddings before batch_loss (framework/engines/coupled_pass.h).
//
// Inputs: input_ids (B, C, L) for C texts per example (anchor, positive, negatives; or a scored
// pair), each text encoded alone; or (B, L) for one text per example (inference). logits are the
// embeddings: (B, C, H), or (B, H) for (B, L) inputs. labels (B) float: the pair scores of cosent
// and cosine.
#pragma once
#include <torch/nn/pimpl.h>

#include "models/heads/embedding/losses.h"
#include "models/heads/embedding/pooling.h"
#include "models/heads/encoder_task_model.h"

namespace unif::models {

/// How the embedding is made from the encoder's states, and how it is trained.
struct EmbeddingOptions {
  Pooling pooling = Pooling::Mean;
  bool normalize = false;
  EmbeddingLossOptions loss;
  /// cached_mnrl: texts per forward of the gradient cache (gradient_cache_rows; 0 = whole batch).
  int64_t mini_batch_size = 0;
};

class EncoderForEmbeddingImpl : public EncoderTaskModel {
 public:
  explicit EncoderForEmbeddingImpl(const EncoderConfig& options);

  ModelOutput forward(const Batch& batch, const torch::Tensor& word_embedding_delta = {}) override;
  std::shared_ptr<TaskModel> clone_model() const override;
  Task kind() const override { return Task::Embedding; }
  int64_t num_labels() const override { return 1; }
  bool couples_examples() const override { return true; }
  /// N · embedding_loss(logits, labels): the batch's loss in the sum form the trainer divides by N.
  torch::Tensor batch_loss(const ModelOutput& out, const Batch& batch) const override;
  /// cached_mnrl: mini_batch_size texts per forward, i.e. mini_batch_size / C examples of C texts
  /// (at least one); 0 for the other losses.
  int64_t gradient_cache_rows(const Batch& batch) const override;

  void set_embedding_options(EmbeddingOptions options);
  const EmbeddingOptions& embedding_options() const { return embedding_; }

 private:
  EmbeddingOptions embedding_;
};
TORCH_MODULE(EncoderForEmbedding);

}  // namespace unif::models
