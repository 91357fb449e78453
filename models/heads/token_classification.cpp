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
  if (has_crf()) return crf_loss(std::move(out), batch);

  const int64_t b = out.logits.size(0), l = out.logits.size(1);
  torch::Tensor labels = batch.labels.to(torch::kLong);  // (B, L)
  torch::Tensor token_losses = classification_loss(out.logits.reshape({b * l, num_labels_}), labels.reshape({b * l}),
                                                   loss_, kIgnoreIndex);   // 0 where ignored
  out.example_losses = weighted(token_losses.view({b, l}).sum(1), batch);  // (B)
  out.loss_count = labels.ne(kIgnoreIndex).sum().item<int64_t>();
  return out;
}

ModelOutput EncoderForTokenClassificationImpl::crf_loss(ModelOutput out, const Batch& batch) const {
  // Each row's labeled positions (its words' first pieces), moved to the front in order: the
  // sequence the CRF scores.
  const torch::Tensor labels = batch.labels.to(torch::kLong);  // (B, L)
  const int64_t l = labels.size(1);
  const torch::Tensor labeled = labels.ne(kIgnoreIndex);
  const torch::Tensor counts = labeled.sum(1);
  const int64_t t = l == 0 ? 0 : counts.max().item<int64_t>();
  const torch::Tensor key = labeled.logical_not().to(torch::kLong) * l + torch::arange(l, labels.options());
  const torch::Tensor order = std::get<1>(key.sort(1)).narrow(1, 0, t);  // (B, T)
  const torch::Tensor emissions =
      out.logits.gather(1, order.unsqueeze(2).expand({order.size(0), t, num_labels_}));  // (B, T, C)
  const torch::Tensor tags = labels.gather(1, order);
  const torch::Tensor mask = torch::arange(t, labels.options()).unsqueeze(0).lt(counts.unsqueeze(1));
  out.example_losses = weighted(-crf->log_likelihood(emissions, tags, mask), batch);  // (B)
  out.loss_count = counts.sum().item<int64_t>();
  return out;
}

torch::Tensor EncoderForTokenClassificationImpl::decode_tags(const torch::Tensor& emissions,
                                                             torch::Tensor* probs) const {
  if (!has_crf()) return TaskModel::decode_tags(emissions, probs);
  torch::Tensor marginals;
  auto tags = crf->viterbi(emissions, probs ? &marginals : nullptr);
  if (probs) *probs = marginals.gather(1, tags.unsqueeze(1)).squeeze(1);
  return tags;
}

void EncoderForTokenClassificationImpl::enable_crf(const std::optional<CrfConstraints>& constraints) {
  if (!has_crf()) {
    crf = register_module("crf", Crf(num_labels_));
    // On the model's device (a CRF added after the model moved).
    for (const auto& p : parameters()) {
      crf->to(p.device());
      break;
    }
  }
  if (constraints) crf->constrain(*constraints);
}

void EncoderForTokenClassificationImpl::disable_crf() {
  if (!has_crf()) return;
  unregister_module("crf");
  crf = nullptr;
}

void EncoderForTokenClassificationImpl::adopt_checkpoint_modules(const std::vector<std::string>& names) {
  for (const auto& n : names)
    if (n == "crf.transitions") enable_crf();
}

std::shared_ptr<TaskModel> EncoderForTokenClassificationImpl::clone_model() const {
  auto copy = std::make_shared<EncoderForTokenClassificationImpl>(options(), num_labels_);
  if (has_crf()) copy->enable_crf(crf->constraints());
  copy_module_state(*this, *copy);
  copy->set_loss_options(loss_);
  return copy;
}

}  // namespace unif::models
