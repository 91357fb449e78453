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
//
// With IntermediateDistillation (TinyBERT), l_b also has, for the mapped layer pairs (s, t) and the
// n_b real tokens of example b (padding never counts, so the value is the same on any shard):
//   w_h · Σ_(s,t) Σ_i ‖W h^s_i − h^t_i‖² / (n_b · H_t)            (hidden states, HF's output_hidden_states)
//   w_a · Σ_(s,t) Σ_(heads, i, j) (a^s_ij − a^t_ij)² / (heads · n_b²)  (attention scores before softmax)
//   w_e · Σ_i ‖W e^s_i − e^t_i‖² / (n_b · H_t)                   (the embeddings' outputs, layer 0)
// W is `distill_projection` (Linear H_s → H_t) when the widths differ, else the identity. The
// projection is the DistillationModel's parameter, not the student's: the student saves without it.
#pragma once
#include <memory>
#include <optional>
#include <utility>
#include <vector>
#include <torch/nn/modules/linear.h>

#include "models/heads/encoder_task_model.h"

namespace unif::models {

/// Σ-over-items KL(softmax(teacher/T) ‖ softmax(student/T)) per example (B), for `kind`'s logits
/// (classification (B, C); token classification (B, L, C) with labels (B, L), -100 ignored; span
/// extraction (B, L, 2): the mean of start and end).
torch::Tensor distillation_kl(Task kind, const torch::Tensor& student_logits, const torch::Tensor& teacher_logits,
                              const torch::Tensor& labels, double temperature);

/// TinyBERT's layer-wise terms: which student layer learns from which teacher layer (1-based), and
/// the weights of the three terms.
struct IntermediateDistillation {
  std::vector<std::pair<int64_t, int64_t>> layers;
  double hidden_weight = 1.0, attention_weight = 1.0, embedding_weight = 1.0;
};

/// TinyBERT's uniform map: student layer i learns from teacher layer i·T/S (rounded down), i = 1..S.
std::vector<std::pair<int64_t, int64_t>> uniform_layer_map(int64_t student_layers, int64_t teacher_layers);

/// The layer-wise terms per example (B) from both models' hidden states (layer 0 = the embeddings'
/// output) and attention scores (one per layer), and the 1/0 attention mask (B, L). `projection`
/// maps the student's width to the teacher's (undefined: the same width).
torch::Tensor intermediate_losses(const IntermediateDistillation& d, const std::vector<torch::Tensor>& student_hidden,
                                  const std::vector<torch::Tensor>& teacher_hidden,
                                  const std::vector<torch::Tensor>& student_scores,
                                  const std::vector<torch::Tensor>& teacher_scores, const torch::Tensor& attention_mask,
                                  torch::nn::Linear projection);

class DistillationModel final : public TaskModel {
 public:
  /// kind: Classification, TokenClassification or SpanExtraction (std::invalid_argument otherwise).
  /// intermediate: TinyBERT's terms (the teacher must then be an EncoderTaskModel; std::invalid_argument
  /// for a layer past either model's, or attention scores between different head counts).
  DistillationModel(std::shared_ptr<EncoderTaskModel> student, std::shared_ptr<TaskModel> teacher, double temperature,
                    double alpha, std::optional<IntermediateDistillation> intermediate = std::nullopt);

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
  const std::optional<IntermediateDistillation>& intermediate() const { return intermediate_; }
  bool has_projection() const { return !projection_.is_empty(); }

 private:
  std::shared_ptr<EncoderTaskModel> student_;
  std::shared_ptr<TaskModel> teacher_;
  double temperature_, alpha_;
  std::optional<IntermediateDistillation> intermediate_;
  torch::nn::Linear projection_{nullptr};  // distill_projection: H_s -> H_t when they differ
};

}  // namespace unif::models
