// BertForSequenceClassification: see sequence_classification.h.
#include "models/heads/sequence_classification.h"

#include <stdexcept>
#include <string>
#include <torch/nn/functional/loss.h>

#include "models/architectures.h"
#include "models/full_precision.h"
#include "models/heads/early_exit.h"

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
  if (has_early_exit()) return forward_with_exits(batch, word_embedding_delta);
  // Only the first position (or the pooler on it) is read: the last layer computes position 0 alone.
  EncoderOutput encoded = encode(batch, word_embedding_delta, /*first_token_only=*/true);
  ModelOutput out;
  out.logits = full_precision(head_->forward(encoded));  // (B, C), float32 for the loss
  if (!batch.labels.defined()) return out;
  out.example_losses = head_losses(out.logits, batch);
  out.loss_count = batch.size();
  return out;
}

torch::Tensor EncoderForSequenceClassificationImpl::head_losses(const torch::Tensor& logits, const Batch& batch) const {
  torch::Tensor losses;  // (B)
  switch (kind_) {
    case Task::Classification: losses = classification_loss(logits, batch.labels, loss_); break;
    case Task::Multilabel:
      losses = F::binary_cross_entropy_with_logits(logits, batch.labels.to(logits.scalar_type()),
                                                   F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kNone))
                   .mean(-1);
      break;
    default: {  // Regression
      torch::Tensor target = batch.labels.to(logits.scalar_type()).reshape(logits.sizes());
      losses = (logits - target).pow(2).mean(-1);
      break;
    }
  }
  return weighted(losses, batch);
}

ModelOutput EncoderForSequenceClassificationImpl::forward_with_exits(const Batch& batch,
                                                                     const torch::Tensor& word_embedding_delta) {
  const int64_t layers = options().num_hidden_layers(), rows = batch.input_ids.size(0);
  const torch::Tensor mask = batch.attention_mask.defined() ? batch.attention_mask : torch::ones_like(batch.input_ids);
  auto branch = [&](int64_t layer, const torch::Tensor& hidden) {  // layer 1 .. layers - 1
    auto* b = branches[static_cast<size_t>(layer - 1)]->as<EarlyExitBranchImpl>();
    return full_precision(b->forward(hidden, mask));
  };
  LayerTap tap;
  ModelOutput out;
  if (exit_threshold_ && !is_training()) {
    // Each record's answer at the first confident branch; the stack stops when all have one.
    const auto ids = torch::TensorOptions().dtype(torch::kLong).device(batch.input_ids.device());
    torch::Tensor answered, exit_layers = torch::full({rows}, layers, ids);
    torch::Tensor pending = torch::ones({rows}, ids.dtype(torch::kBool));
    tap.exit_after = [&](int64_t layer, const torch::Tensor& hidden) {
      const torch::Tensor logits = branch(layer, hidden);
      if (!answered.defined()) answered = torch::zeros_like(logits);
      const torch::Tensor now = pending & normalized_entropy(logits).lt(*exit_threshold_);
      answered = torch::where(now.unsqueeze(1), logits, answered);
      exit_layers.masked_fill_(now, layer);
      pending &= now.logical_not();
      return !pending.any().item<bool>();
    };
    EncoderOutput encoded = encode(batch, word_embedding_delta, /*first_token_only=*/true, &tap);
    if (tap.layers_run == layers) {
      const torch::Tensor head = full_precision(head_->forward(encoded));
      answered = answered.defined() ? torch::where(pending.unsqueeze(1), head, answered) : head;
    }
    out.logits = answered;
    out.exit_layers = exit_layers;
    if (!batch.labels.defined()) return out;
    out.example_losses = head_losses(out.logits, batch);
    out.loss_count = batch.size();
    return out;
  }
  // Training and plain evaluation: the head's answer; every branch learns the head's distribution.
  std::vector<torch::Tensor> branch_logits;
  tap.exit_after = [&](int64_t layer, const torch::Tensor& hidden) {
    branch_logits.push_back(branch(layer, hidden));
    return false;
  };
  EncoderOutput encoded = encode(batch, word_embedding_delta, /*first_token_only=*/true, &tap);
  out.logits = full_precision(head_->forward(encoded));
  if (!batch.labels.defined()) return out;
  torch::Tensor kl = torch::zeros({rows}, out.logits.options());
  for (const auto& b : branch_logits) kl = kl + self_distillation_kl(out.logits, b);
  out.example_losses = head_losses(out.logits, batch) + weighted(kl, batch);
  out.loss_count = batch.size();
  return out;
}

void EncoderForSequenceClassificationImpl::enable_early_exit() {
  if (kind_ != Task::Classification)
    throw std::invalid_argument("early exit needs single-label classification (its exits read a class distribution)");
  if (has_early_exit()) return;
  const EncoderConfig& o = options();
  branches = register_module("branches", torch::nn::ModuleList());
  for (int64_t i = 0; i + 1 < o.num_hidden_layers(); ++i)
    branches->push_back(EarlyExitBranch(o.hidden_size(), num_labels_, o.initializer_range()));
  for (const auto& p : parameters()) {  // on the model's device
    branches->to(p.device());
    break;
  }
}

void EncoderForSequenceClassificationImpl::set_exit_threshold(std::optional<double> threshold) {
  if (threshold && !has_early_exit())
    throw std::invalid_argument("this model has no early exits (it was not trained with model.early_exit)");
  if (threshold && !(*threshold >= 0.0 && *threshold <= 1.0))
    throw std::invalid_argument("the exit threshold is a normalized entropy in [0, 1], got " +
                                std::to_string(*threshold));
  exit_threshold_ = threshold;
}

void EncoderForSequenceClassificationImpl::adopt_checkpoint_modules(const std::vector<std::string>& names) {
  for (const auto& n : names)
    if (n.rfind("branches.", 0) == 0 && kind_ == Task::Classification) {
      enable_early_exit();
      return;
    }
}

std::shared_ptr<TaskModel> EncoderForSequenceClassificationImpl::clone_model() const {
  auto copy = std::make_shared<EncoderForSequenceClassificationImpl>(options(), num_labels_, kind_);
  if (has_early_exit()) copy->enable_early_exit();
  copy_module_state(*this, *copy);
  copy->set_loss_options(loss_);
  copy->exit_threshold_ = exit_threshold_;
  return copy;
}

}  // namespace unif::models
