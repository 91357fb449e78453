// DistillationModel: see distillation.h.
#include "models/heads/distillation.h"

#include <stdexcept>

namespace unif::models {

torch::Tensor distillation_kl(Task kind, const torch::Tensor& student_logits, const torch::Tensor& teacher_logits,
                              const torch::Tensor& labels, double temperature) {
  const auto kl = [temperature](const torch::Tensor& s, const torch::Tensor& t, int64_t dim) {
    const auto log_ps = torch::log_softmax(s / temperature, dim);
    const auto log_pt = torch::log_softmax(t.detach() / temperature, dim);
    return (log_pt.exp() * (log_pt - log_ps)).sum(dim);
  };
  switch (kind) {
    case Task::Classification: return kl(student_logits, teacher_logits, -1);  // (B)
    case Task::TokenClassification: {
      const auto labeled = labels.ne(-100).to(student_logits.scalar_type());  // (B, L)
      return (kl(student_logits, teacher_logits, -1) * labeled).sum(1);
    }
    case Task::SpanExtraction:  // (B, L, 2): over positions, start and end
      return kl(student_logits, teacher_logits, 1).mean(1);
    default:
      throw std::invalid_argument("distillation supports classification, token_classification and span_extraction");
  }
}

DistillationModel::DistillationModel(std::shared_ptr<EncoderTaskModel> student, std::shared_ptr<TaskModel> teacher,
                                     double temperature, double alpha)
    : student_(std::move(student)), teacher_(std::move(teacher)), temperature_(temperature), alpha_(alpha) {
  const auto kind = student_->kind();
  if (!task_spec(kind).distillation)
    throw std::invalid_argument("distillation supports classification, token_classification and span_extraction, not " +
                                to_string(kind));
  // The student's modules under their own names: parameters and keys are exactly the student's.
  for (const auto& child : student_->named_children()) register_module(child.key(), child.value());
  teacher_->eval();
  for (auto& p : teacher_->parameters()) p.set_requires_grad(false);
}

ModelOutput DistillationModel::forward(const Batch& batch, const torch::Tensor& word_embedding_delta) {
  ModelOutput out = student_->forward(batch, word_embedding_delta);
  if (!batch.labels.defined()) return out;
  torch::Tensor teacher_logits;
  {
    torch::NoGradGuard no_grad;
    Batch inputs = batch;
    inputs.labels = torch::Tensor();
    teacher_logits = teacher_->forward(inputs).logits;
  }
  auto kl = distillation_kl(student_->kind(), out.logits, teacher_logits, batch.labels, temperature_);
  if (batch.sample_weights.defined()) kl = kl * batch.sample_weights.to(kl.scalar_type());
  out.example_losses = alpha_ * temperature_ * temperature_ * kl + (1.0 - alpha_) * out.example_losses;
  return out;
}

std::shared_ptr<TaskModel> DistillationModel::clone_model() const {
  auto student = std::dynamic_pointer_cast<EncoderTaskModel>(student_->clone_model());
  auto copy = std::make_shared<DistillationModel>(student, teacher_->clone_model(), temperature_, alpha_);
  copy->train(is_training());
  return copy;
}

void DistillationModel::train(bool on) {
  TaskModel::train(on);
  student_->train(on);
  teacher_->eval();
}

void DistillationModel::to(torch::Device device, torch::Dtype dtype, bool non_blocking) {
  TaskModel::to(device, dtype, non_blocking);
  teacher_->to(device, dtype, non_blocking);
}
void DistillationModel::to(torch::Dtype dtype, bool non_blocking) {
  TaskModel::to(dtype, non_blocking);
  teacher_->to(dtype, non_blocking);
}
void DistillationModel::to(torch::Device device, bool non_blocking) {
  TaskModel::to(device, non_blocking);
  teacher_->to(device, non_blocking);
}

}  // namespace unif::models
