// BertForQuestionAnswering: see span_extraction.h.
#include "models/heads/span_extraction.h"

#include <stdexcept>
#include <torch/nn/functional/loss.h>

#include "models/architectures.h"
#include "models/layers/init.h"
#include "models/layers/linear.h"
#include "models/full_precision.h"

namespace unif::models {

namespace F = torch::nn::functional;

namespace {
// HF's span loss is a softmax over every position, padding included: the padded path keeps their
// logits HF's (the unpadded one would give zeros there).
EncoderConfig padded(EncoderConfig options) { return options.unpad_inputs(false); }
}  // namespace

EncoderForQuestionAnsweringImpl::EncoderForQuestionAnsweringImpl(const EncoderConfig& options)
    : EncoderTaskModel(padded(options), /*add_pooling_layer=*/false) {
  if (arch_->make_token_head) {
    family_head = arch_->make_token_head(*this, options, 2);
    return;
  }
  qa_outputs = register_module("qa_outputs", torch::nn::Linear(options.hidden_size(), 2));
  init_bert_weights(*qa_outputs, options.initializer_range());
  // A family's dropout before qa_outputs (DistilBERT's qa_dropout).
  const double qa_dropout = options.family_config() ? options.family_config()->span_head_dropout() : -1.0;
  if (qa_dropout >= 0) dropout = register_module("dropout", Dropout(qa_dropout));
}

ModelOutput EncoderForQuestionAnsweringImpl::forward(const Batch& batch, const torch::Tensor& word_embedding_delta) {
  EncoderOutput encoded = encode(batch, word_embedding_delta);
  ModelOutput out;
  if (family_head) {
    out.logits = full_precision(family_head->forward(encoded.last_hidden_state));  // (B, L, 2)
  } else {
    const torch::Tensor hidden = dropout ? dropout(encoded.last_hidden_state) : encoded.last_hidden_state;
    out.logits = full_precision(linear(qa_outputs, hidden));  // (B, L, 2), float32 for the loss
  }
  torch::Tensor verdict;  // (B): the verifier's logit of "no answer in this window"
  if (has_verifier()) {
    verdict = full_precision(linear(verifier, encoded.last_hidden_state.select(1, 0))).squeeze(1);
    out.logits = torch::cat({out.logits, verdict.view({-1, 1, 1}).expand({-1, out.logits.size(1), 1})}, 2);
  }
  if (!batch.labels.defined()) return out;

  const int64_t length = out.logits.size(1);
  torch::Tensor labels = batch.labels.to(torch::kLong);
  if (labels.dim() != 2 || labels.size(1) != 2) throw std::invalid_argument("span labels must be (B, 2) start/end");
  torch::Tensor positions = labels.clamp(0, length);  // (B, 2); L = ignored, as HF
  auto options = F::CrossEntropyFuncOptions().reduction(torch::kNone).ignore_index(length);
  torch::Tensor start_loss = F::cross_entropy(out.logits.select(2, 0), positions.select(1, 0), options);  // (B)
  torch::Tensor end_loss = F::cross_entropy(out.logits.select(2, 1), positions.select(1, 1), options);    // (B)
  torch::Tensor loss = (start_loss + end_loss) / 2;
  if (has_verifier()) {
    const auto no_answer = labels.select(1, 0).eq(0).logical_and(labels.select(1, 1).eq(0)).to(verdict.scalar_type());
    loss = loss + F::binary_cross_entropy_with_logits(
                      verdict, no_answer, F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone));
  }
  out.example_losses = weighted(loss, batch);
  out.loss_count = batch.size();
  return out;
}

void EncoderForQuestionAnsweringImpl::enable_verifier() {
  if (has_verifier()) return;
  verifier = register_module("verifier", torch::nn::Linear(options().hidden_size(), 1));
  init_bert_weights(*verifier, options().initializer_range());
  for (const auto& p : parameters()) {  // on the model's device
    verifier->to(p.device());
    break;
  }
}

void EncoderForQuestionAnsweringImpl::adopt_checkpoint_modules(const std::vector<std::string>& names) {
  for (const auto& n : names)
    if (n == "verifier.weight") enable_verifier();
}

std::shared_ptr<TaskModel> EncoderForQuestionAnsweringImpl::clone_model() const {
  auto copy = std::make_shared<EncoderForQuestionAnsweringImpl>(options());
  if (has_verifier()) copy->enable_verifier();
  copy_module_state(*this, *copy);
  return copy;
}

}  // namespace unif::models
