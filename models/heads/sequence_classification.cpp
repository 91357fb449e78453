// BertForSequenceClassification: see sequence_classification.h.
#include "models/heads/sequence_classification.h"

#include <stdexcept>
#include <string>
#include <torch/nn/functional/loss.h>

#include "models/architectures.h"
#include "models/full_precision.h"

namespace unif::models {

namespace F = torch::nn::functional;

EncoderForSequenceClassificationImpl::EncoderForSequenceClassificationImpl(const EncoderConfig& options,
                                                                           int64_t num_labels, Task kind)
    : EncoderTaskModel(options, models::architecture(options.model_type()).sequence_pooler),
      num_labels_(num_labels),
      kind_(kind) {
  if (kind != Task::Classification && kind != Task::Multilabel && kind != Task::Regression)
    throw std::invalid_argument("BertForSequenceClassification: task must be classification, multilabel or regression");
  const int64_t min_labels = kind == Task::Classification ? 2 : 1;
  if (num_labels < min_labels)
    throw std::invalid_argument(to_string(kind) + " needs num_labels >= " + std::to_string(min_labels) + ", got " +
                                std::to_string(num_labels));
  head_ = arch_->make_sequence_head(*this, options, num_labels);
}

ModelOutput EncoderForSequenceClassificationImpl::forward(const Batch& batch,
                                                          const torch::Tensor& word_embedding_delta) {
  // Only the first position (or the pooler on it) is read: the last layer computes position 0 alone.
  EncoderOutput encoded = encode(batch, word_embedding_delta, /*first_token_only=*/true);
  ModelOutput out;
  out.logits = full_precision(head_->forward(encoded));  // (B, C), float32 for the loss
  if (!batch.labels.defined()) return out;

  torch::Tensor losses;  // (B)
  switch (kind_) {
    case Task::Classification: losses = classification_loss(out.logits, batch.labels, loss_); break;
    case Task::Multilabel:
      losses = F::binary_cross_entropy_with_logits(out.logits, batch.labels.to(out.logits.scalar_type()),
                                                   F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone))
                   .mean(-1);
      break;
    default: {  // Regression
      torch::Tensor target = batch.labels.to(out.logits.scalar_type()).reshape(out.logits.sizes());
      losses = (out.logits - target).pow(2).mean(-1);
      break;
    }
  }
  out.example_losses = weighted(losses, batch);
  out.loss_count = batch.size();
  return out;
}

std::shared_ptr<TaskModel> EncoderForSequenceClassificationImpl::clone_model() const {
  auto copy = std::make_shared<EncoderForSequenceClassificationImpl>(options(), num_labels_, kind_);
  copy_module_state(*this, *copy);
  copy->set_loss_options(loss_);
  return copy;
}

}  // namespace unif::models
