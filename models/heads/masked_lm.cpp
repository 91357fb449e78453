// BertForMaskedLM: see masked_lm.h.
#include "models/heads/masked_lm.h"

#include <torch/nn/functional/loss.h>

#include "models/bert/activations.h"
#include "models/bert/init.h"
#include "models/bert/linear.h"
#include "models/full_precision.h"

namespace unif::models {

namespace F = torch::nn::functional;

MlmTransformImpl::MlmTransformImpl(const BertOptions& o) : act_(activation(o.hidden_act())) {
  dense = register_module("dense", torch::nn::Linear(o.hidden_size(), o.hidden_size()));
  layer_norm = register_module(
      "LayerNorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.hidden_size()}).eps(o.layer_norm_eps())));
}

// Under autocast the dense layer's output is bfloat16 / float16; LayerNorm runs on float32 (its
// weights' type, as the encoder's LayerNorms whose residual input is float32).
torch::Tensor MlmTransformImpl::forward(const torch::Tensor& hidden) {
  return layer_norm(full_precision(act_(linear(dense, hidden))));
}

MlmPredictionsImpl::MlmPredictionsImpl(const BertOptions& o) {
  transform = register_module("transform", MlmTransform(o));
  bias = register_parameter("bias", torch::zeros({o.vocab_size()}));
}

MlmHeadImpl::MlmHeadImpl(const BertOptions& o) { predictions = register_module("predictions", MlmPredictions(o)); }

BertForMaskedLMImpl::BertForMaskedLMImpl(const BertOptions& options)
    : BertTaskModel(options, /*add_pooling_layer=*/false) {
  cls = register_module("cls", MlmHead(options));
  init_bert_weights(*cls, options.initializer_range());
  torch::NoGradGuard no_grad;
  cls->predictions->bias.zero_();
}

torch::Tensor BertForMaskedLMImpl::lm_logits(const torch::Tensor& hidden) {
  const auto h = cls->predictions->transform(hidden);
  // Tied decoder; float32 logits for the softmax and the loss when autocast made the product low precision.
  return full_precision(at::linear(h, bert->embeddings->word_embeddings->weight, cls->predictions->bias));
}

ModelOutput BertForMaskedLMImpl::forward(const Batch& batch, const torch::Tensor& word_embedding_delta) {
  BertModelOutput encoded = encode(batch, word_embedding_delta);
  const auto& hidden = encoded.last_hidden_state;  // (B, L, H)
  ModelOutput out;
  if (!batch.labels.defined()) {
    out.logits = lm_logits(hidden);  // (B, L, V)
    return out;
  }
  const int64_t b = hidden.size(0), l = hidden.size(1);
  const auto labels = batch.labels.to(torch::kLong).reshape({b * l});
  const auto picked = labels.ne(-100).nonzero().flatten();                 // (M) flat positions, row-major
  out.logits = lm_logits(hidden.reshape({b * l, hidden.size(2)}).index_select(0, picked));  // (M, V)
  const auto token_losses = F::cross_entropy(out.logits, labels.index_select(0, picked),
                                             F::CrossEntropyFuncOptions().reduction(torch::kNone));  // (M)
  const auto example = picked.div(l, /*rounding_mode=*/"floor");
  auto losses = torch::zeros({b}, token_losses.options()).index_add(0, example, token_losses);
  out.example_losses = weighted(losses, batch);
  out.loss_count = picked.size(0);
  return out;
}

std::shared_ptr<TaskModel> BertForMaskedLMImpl::clone_model() const {
  auto copy = std::make_shared<BertForMaskedLMImpl>(options());
  copy_module_state(*this, *copy);
  copy->set_loss_options(loss_);
  return copy;
}

}  // namespace unif::models
