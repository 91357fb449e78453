// FastBERT's early-exit branches: see early_exit.h.
#include "models/heads/early_exit.h"

#include <cmath>

#include "models/layers/init.h"
#include "models/layers/linear.h"

namespace unif::models {

EarlyExitBranchImpl::EarlyExitBranchImpl(int64_t hidden_size_, int64_t num_labels_, double initializer_range_)
    : hidden_size(hidden_size_), num_labels(num_labels_), initializer_range(initializer_range_) {
  reset();
}

void EarlyExitBranchImpl::reset() {
  dense = register_module("dense", torch::nn::Linear(hidden_size, hidden_size));
  classifier = register_module("classifier", torch::nn::Linear(hidden_size, num_labels));
  init_bert_weights(*this, initializer_range);
}

torch::Tensor EarlyExitBranchImpl::forward(const torch::Tensor& hidden, const torch::Tensor& attention_mask) {
  const torch::Tensor mask = attention_mask.to(hidden.scalar_type()).unsqueeze(-1);  // (B, L, 1)
  const torch::Tensor pooled = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1.0);
  return linear(classifier, torch::tanh(linear(dense, pooled)));
}

torch::Tensor normalized_entropy(const torch::Tensor& logits) {
  const torch::Tensor logp = torch::log_softmax(logits.to(torch::kFloat), -1);
  return -(logp.exp() * logp).sum(-1) / std::log(static_cast<double>(logits.size(-1)));
}

torch::Tensor self_distillation_kl(const torch::Tensor& teacher_logits, const torch::Tensor& student_logits) {
  const torch::Tensor t = torch::log_softmax(teacher_logits.detach().to(torch::kFloat), -1);
  const torch::Tensor s = torch::log_softmax(student_logits.to(torch::kFloat), -1);
  return (t.exp() * (t - s)).sum(-1);
}

}  // namespace unif::models
