// BertForTokenClassification: see token_classification.h.
#include "models/heads/token_classification.h"

#include <stdexcept>
#include <string>
#include <torch/nn/functional/loss.h>

#include "models/architectures.h"
#include "models/layers/init.h"
#include "models/layers/linear.h"
#include "models/full_precision.h"

namespace unif::models {

namespace F = torch::nn::functional;

EncoderForTokenClassificationImpl::EncoderForTokenClassificationImpl(const EncoderConfig& options, int64_t num_labels)
    : EncoderTaskModel(options, /*add_pooling_layer=*/false), num_labels_(num_labels) {
  if (num_labels < 1)
    throw std::invalid_argument("token_classification needs num_labels >= 1, got " + std::to_string(num_labels));
  if (arch_->make_token_head) {
    family_head = arch_->make_token_head(*this, options, num_labels);
    return;
  }
  dropout = register_module("dropout", Dropout(head_dropout(options)));
  classifier = register_module("classifier", torch::nn::Linear(options.hidden_size(), num_labels));
  init_bert_weights(*classifier, options.initializer_range());
}

ModelOutput EncoderForTokenClassificationImpl::forward(const Batch& batch, const torch::Tensor& word_embedding_delta) {
  EncoderOutput encoded = encode(batch, word_embedding_delta);
  ModelOutput out;
  const torch::Tensor& hidden = encoded.last_hidden_state;
  out.logits = full_precision(family_head ? family_head->forward(hidden)
                                          : linear(classifier, dropout(hidden)));  // (B, L, C), float32 for the loss
  if (!batch.labels.defined()) return out;

  const int64_t b = out.logits.size(0), l = out.logits.size(1);
  torch::Tensor labels = batch.labels.to(torch::kLong);  // (B, L)
  torch::Tensor token_losses = classification_loss(out.logits.reshape({b * l, num_labels_}), labels.reshape({b * l}),
                                                   loss_, kIgnoreIndex);   // 0 where ignored
  out.example_losses = weighted(token_losses.view({b, l}).sum(1), batch);  // (B)
  out.loss_count = labels.ne(kIgnoreIndex).sum().item<int64_t>();
  return out;
}

std::shared_ptr<TaskModel> EncoderForTokenClassificationImpl::clone_model() const {
  auto copy = std::make_shared<EncoderForTokenClassificationImpl>(options(), num_labels_);
  copy_module_state(*this, *copy);
  copy->set_loss_options(loss_);
  return copy;
}

}  // namespace unif::models
