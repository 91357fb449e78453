// The sentence-embedding head: see embedding_model.h.
#include "models/heads/embedding_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "models/architectures.h"
#include "models/full_precision.h"

namespace unif::models {

// The family's base model as HF builds it (BertModel with its pooler, so that a pretrained
// directory's pooler weights load and are saved again); the embedding never reads the pooler.
EncoderForEmbeddingImpl::EncoderForEmbeddingImpl(const EncoderConfig& options)
    : EncoderTaskModel(options, models::architecture(options.model_type()).sequence_pooler) {}

void EncoderForEmbeddingImpl::set_embedding_options(EmbeddingOptions options) {
  check_embedding_loss_options(options.loss, this->options().hidden_size());
  embedding_ = std::move(options);
}

ModelOutput EncoderForEmbeddingImpl::forward(const Batch& batch, const torch::Tensor& word_embedding_delta) {
  if (word_embedding_delta.defined())
    throw std::invalid_argument("an embedding model takes no perturbation of its word embeddings");
  const auto& ids = batch.input_ids;
  if (ids.dim() != 2 && ids.dim() != 3)
    throw std::invalid_argument("embedding model: input_ids must be (B, L) or (B, C, L), got " +
                                std::to_string(ids.dim()) + " dimensions");
  const int64_t b = ids.size(0);
  const int64_t columns = ids.dim() == 3 ? ids.size(1) : 1;
  const int64_t length = ids.size(-1);
  // Every text of every example as one row: (B·C, L).
  Batch flat;
  flat.input_ids = ids.reshape({b * columns, length});
  if (batch.token_type_ids.defined()) flat.token_type_ids = batch.token_type_ids.reshape({b * columns, length});
  torch::Tensor mask = batch.attention_mask.defined() ? batch.attention_mask.reshape({b * columns, length})
                                                      : torch::ones({b * columns, length}, ids.options());
  flat.attention_mask = mask;
  EncoderOutput encoded = encode(flat, {});
  torch::Tensor emb = pool(full_precision(encoded.last_hidden_state), mask, embedding_.pooling);  // (B·C, H)
  if (embedding_.normalize) emb = normalize(emb);
  ModelOutput out;
  out.logits = ids.dim() == 3 ? emb.reshape({b, columns, emb.size(-1)}) : emb;
  out.loss_count = b;
  return out;
}

torch::Tensor EncoderForEmbeddingImpl::batch_loss(const ModelOutput& out, const Batch& batch) const {
  if (out.logits.dim() != 3)
    throw std::invalid_argument("embedding loss: expected (B, C, H) embeddings of C >= 2 texts per example");
  const int64_t n = out.logits.size(0);
  // Pair scores are the scored losses' targets; in-batch negatives take none (a file's scores are
  // then only for evaluation).
  const bool scored = embedding_.loss.loss == EmbeddingLoss::Cosent || embedding_.loss.loss == EmbeddingLoss::Cosine;
  return embedding_loss(out.logits, scored ? batch.labels : torch::Tensor(), embedding_.loss) * static_cast<double>(n);
}

int64_t EncoderForEmbeddingImpl::gradient_cache_rows(const Batch& batch) const {
  if (embedding_.loss.loss != EmbeddingLoss::CachedMnrl || embedding_.mini_batch_size <= 0) return 0;
  const int64_t columns = batch.input_ids.dim() == 3 ? batch.input_ids.size(1) : 1;
  return std::max<int64_t>(1, embedding_.mini_batch_size / columns);
}

std::shared_ptr<TaskModel> EncoderForEmbeddingImpl::clone_model() const {
  auto copy = std::make_shared<EncoderForEmbeddingImpl>(options());
  copy_module_state(*this, *copy);
  copy->embedding_ = embedding_;
  return copy;
}

}  // namespace unif::models
