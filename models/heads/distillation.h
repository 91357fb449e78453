// DistillationModel: knowledge distillation (Hinton et al. 2015) as a TaskModel around a student
// head and a frozen teacher. It exposes exactly the student's parameters (the student's submodules
// are registered under their own names, so keys, optimizer groups and checkpoints are the
// student's); the teacher is held aside: never a parameter, always in eval mode, run under no-grad
// on the same batch (on a replica: the same shard, by the same engine) inside forward().
//
// With labels, per example b (T = temperature, a = alpha, z = logits):
//   l_b = a · T² · KL_b(softmax(z_teacher/T) ‖ softmax(z_student/T)) + (1 - a) · task_b
// where task_b is the student's own l_b and KL_b is summed like task_b: over the classes
// (classification); over the classes at each labelled token, summed over b's tokens (token
// classification); for span extraction the mean of the start and end KLs over positions. So
// Σ_b l_b / Z (Z as the task's: examples or labelled tokens) is a·T²·KL + (1-a)·task loss with
// KL averaged as the task loss is. Outputs are the student's (logits, loss_count). Without
// labels forward() is the student's alone.
#pragma once
#include <memory>

#include "models/heads/encoder_task_model.h"

namespace unif::models {

/// Σ-over-items KL(softmax(teacher/T) ‖ softmax(student/T)) per example (B), for `kind`'s logits
/// (classification (B, C); token classification (B, L, C) with labels (B, L), -100 ignored; span
/// extraction (B, L, 2): the mean of start and end).
torch::Tensor distillation_kl(Task kind, const torch::Tensor& student_logits, const torch::Tensor& teacher_logits,
                              const torch::Tensor& labels, double temperature);

class DistillationModel final : public TaskModel {
 public:
  /// kind: Classification, TokenClassification or SpanExtraction (std::invalid_argument otherwise).
  DistillationModel(std::shared_ptr<EncoderTaskModel> student, std::shared_ptr<TaskModel> teacher, double temperature,
                    double alpha);

  ModelOutput forward(const Batch& batch, const torch::Tensor& word_embedding_delta = {}) override;
  torch::nn::Embedding word_embeddings() override { return student_->word_embeddings(); }
  /// A deep copy of the student and of the teacher.
  std::shared_ptr<TaskModel> clone_model() const override;
  /// The student follows; the teacher stays in eval mode.
  void train(bool on = true) override;
  /// Moves the teacher too (replicas on other devices).
  void to(torch::Device device, torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Device device, bool non_blocking = false) override;

  const std::shared_ptr<EncoderTaskModel>& student() const { return student_; }
  const std::shared_ptr<TaskModel>& teacher() const { return teacher_; }

 private:
  std::shared_ptr<EncoderTaskModel> student_;
  std::shared_ptr<TaskModel> teacher_;
  double temperature_, alpha_;
};

}  // namespace unif::models
