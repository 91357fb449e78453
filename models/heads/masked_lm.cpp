// BertForMaskedLM: see masked_lm.h.
#include "models/heads/masked_lm.h"

#include <torch/nn/functional/loss.h>

#include "models/architectures.h"
#include "models/full_precision.h"

namespace unif::models {

namespace F = torch::nn::functional;

EncoderForMaskedLMImpl::EncoderForMaskedLMImpl(const EncoderConfig& options)
    : EncoderTaskModel(options, /*add_pooling_layer=*/false) {
  lm_ = arch_->make_lm_head(*this, *encoder_);
}

torch::Tensor EncoderForMaskedLMImpl::lm_logits(const torch::Tensor& hidden) {
  // float32 logits for the softmax and the loss when autocast made the product low precision.
  return full_precision(lm_->forward(hidden));
}

ModelOutput EncoderForMaskedLMImpl::forward(const Batch& batch, const torch::Tensor& word_embedding_delta) {
  EncoderOutput encoded = encode(batch, word_embedding_delta);
  const auto& hidden = encoded.last_hidden_state;  // (B, L, H)
  ModelOutput out;
  if (!batch.labels.defined()) {
    out.logits = lm_logits(hidden);  // (B, L, V)
    return out;
  }
  const int64_t b = hidden.size(0), l = hidden.size(1);
  const auto labels = batch.labels.to(torch::kLong).reshape({b * l});
  const auto picked = labels.ne(-100).nonzero().flatten();  // (M) flat positions, row-major
  out.logits = lm_logits(hidden.reshape({b * l, hidden.size(2)}).index_select(0, picked));  // (M, V)
  const auto token_losses = F::cross_entropy(out.logits, labels.index_select(0, picked),
                                             F::CrossEntropyFuncOptions().reduction(torch::kNone));  // (M)
  const auto example = picked.div(l, /*rounding_mode=*/"floor");
  auto losses = torch::zeros({b}, token_losses.options()).index_add(0, example, token_losses);
  out.example_losses = weighted(losses, batch);
  out.loss_count = picked.size(0);
  return out;
}

std::shared_ptr<TaskModel> EncoderForMaskedLMImpl::clone_model() const {
  auto copy = std::make_shared<EncoderForMaskedLMImpl>(options());
  copy_module_state(*this, *copy);
  copy->set_loss_options(loss_);
  return copy;
}

}  // namespace unif::models
