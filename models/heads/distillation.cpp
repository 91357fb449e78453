// DistillationModel: see distillation.h.
#include "models/heads/distillation.h"

#include <stdexcept>
#include <string>

#include "models/attention_capture.h"
#include "models/layers/init.h"
#include "models/layers/linear.h"

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

std::vector<std::pair<int64_t, int64_t>> uniform_layer_map(int64_t student_layers, int64_t teacher_layers) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t i = 1; i <= student_layers; ++i) out.emplace_back(i, i * teacher_layers / student_layers);
  return out;
}

torch::Tensor intermediate_losses(const IntermediateDistillation& d, const std::vector<torch::Tensor>& student_hidden,
                                  const std::vector<torch::Tensor>& teacher_hidden,
                                  const std::vector<torch::Tensor>& student_scores,
                                  const std::vector<torch::Tensor>& teacher_scores, const torch::Tensor& attention_mask,
                                  torch::nn::Linear projection) {
  const torch::Tensor mask = attention_mask.to(torch::kFloat);                            // (B, L)
  const torch::Tensor n = mask.sum(1).clamp_min(1);                                       // real tokens per example
  const torch::Tensor pair = (mask.unsqueeze(2) * mask.unsqueeze(1)).gt(0).unsqueeze(1);  // (B, 1, L, L)
  auto hidden_term = [&](const torch::Tensor& s, const torch::Tensor& t) {                // (B)
    torch::Tensor x = s.to(torch::kFloat);
    if (!projection.is_empty()) x = linear(projection, x);
    const torch::Tensor sq = (x - t.detach().to(torch::kFloat)).pow(2).sum(-1) * mask;  // (B, L)
    return sq.sum(1) / (n * static_cast<double>(t.size(-1)));
  };
  // Scores at real (query, key) pairs; a masked entry (finfo.min: padding, a sliding window) counts 0.
  auto kept = [&](const torch::Tensor& a) {
    const torch::Tensor f = a.to(torch::kFloat);
    return f.masked_fill(pair.logical_not() | f.lt(-1e30), 0.0);
  };
  auto attention_term = [&](const torch::Tensor& s, const torch::Tensor& t) {  // (B)
    const torch::Tensor sq = (kept(s) - kept(t.detach())).pow(2).sum({1, 2, 3});
    return sq / (static_cast<double>(s.size(1)) * n * n);
  };
  torch::Tensor total = torch::zeros_like(n);
  if (d.embedding_weight != 0.0)
    total = total + d.embedding_weight * hidden_term(student_hidden.at(0), teacher_hidden.at(0));
  for (const auto& [s, t] : d.layers) {
    if (d.hidden_weight != 0.0)
      total = total + d.hidden_weight * hidden_term(student_hidden.at(static_cast<size_t>(s)),
                                                    teacher_hidden.at(static_cast<size_t>(t)));
    if (d.attention_weight != 0.0)
      total = total + d.attention_weight * attention_term(student_scores.at(static_cast<size_t>(s - 1)),
                                                          teacher_scores.at(static_cast<size_t>(t - 1)));
  }
  return total;
}

namespace {

// Sets a tap on a head for one forward pass.
class ScopedTap {
 public:
  ScopedTap(EncoderTaskModel& model, LayerTap* tap) : model_(model) { model_.set_layer_tap(tap); }
  ~ScopedTap() { model_.set_layer_tap(nullptr); }
  ScopedTap(const ScopedTap&) = delete;
  ScopedTap& operator=(const ScopedTap&) = delete;

 private:
  EncoderTaskModel& model_;
};

// A forward pass of `model` keeping every layer's output and (with `scores`) attention scores.
ModelOutput traced_forward(EncoderTaskModel& model, const Batch& batch, const torch::Tensor& delta,
                           std::vector<torch::Tensor>& hidden, std::vector<torch::Tensor>* scores) {
  LayerTap tap;
  tap.keep_hidden_states = true;
  std::optional<AttentionCapture> capture;
  if (scores) capture.emplace();
  ModelOutput out;
  {
    ScopedTap scoped(model, &tap);
    out = model.forward(batch, delta);
  }
  const int64_t layers = model.options().num_hidden_layers();
  if (static_cast<int64_t>(tap.hidden_states.size()) != layers + 1)
    throw std::logic_error("distill.intermediate: the encoder reported " + std::to_string(tap.hidden_states.size()) +
                           " hidden states for " + std::to_string(layers) + " layers");
  hidden = std::move(tap.hidden_states);
  if (scores) {
    if (static_cast<int64_t>(capture->scores.size()) != layers)
      throw std::invalid_argument(
          "distill.intermediate: the attention term needs one attention per layer; this "
          "model ran " +
          std::to_string(capture->scores.size()) + " for " + std::to_string(layers) +
          " layers (set attention_weight to 0)");
    *scores = std::move(capture->scores);
  }
  return out;
}

}  // namespace

DistillationModel::DistillationModel(std::shared_ptr<EncoderTaskModel> student, std::shared_ptr<TaskModel> teacher,
                                     double temperature, double alpha,
                                     std::optional<IntermediateDistillation> intermediate)
    : student_(std::move(student)),
      teacher_(std::move(teacher)),
      temperature_(temperature),
      alpha_(alpha),
      intermediate_(std::move(intermediate)) {
  const auto kind = student_->kind();
  if (!task_spec(kind).distillation)
    throw std::invalid_argument("distillation supports classification, token_classification and span_extraction, not " +
                                to_string(kind));
  // The student's modules under their own names: parameters and keys are exactly the student's.
  for (const auto& child : student_->named_children()) register_module(child.key(), child.value());
  teacher_->eval();
  for (auto& p : teacher_->parameters()) p.set_requires_grad(false);
  if (!intermediate_) return;
  auto* teacher_encoder = dynamic_cast<EncoderTaskModel*>(teacher_.get());
  if (teacher_encoder == nullptr)
    throw std::invalid_argument("distill.intermediate: the teacher must be an encoder model");
  const EncoderConfig &s = student_->options(), &t = teacher_encoder->options();
  for (const auto& [a, b] : intermediate_->layers)
    if (a < 1 || a > s.num_hidden_layers() || b < 1 || b > t.num_hidden_layers())
      throw std::invalid_argument("distill.intermediate.layers: [" + std::to_string(a) + ", " + std::to_string(b) +
                                  "] is past the student's " + std::to_string(s.num_hidden_layers()) +
                                  " layers or the teacher's " + std::to_string(t.num_hidden_layers()));
  if (intermediate_->attention_weight != 0.0 && s.num_attention_heads() != t.num_attention_heads())
    throw std::invalid_argument(
        "distill.intermediate: attention scores are matched head by head, and the student has " +
        std::to_string(s.num_attention_heads()) + " heads, the teacher " + std::to_string(t.num_attention_heads()) +
        " (set attention_weight to 0)");
  if (s.hidden_size() != t.hidden_size()) {
    projection_ = register_module("distill_projection", torch::nn::Linear(s.hidden_size(), t.hidden_size()));
    init_bert_weights(*projection_, s.initializer_range());
  }
}

ModelOutput DistillationModel::forward(const Batch& batch, const torch::Tensor& word_embedding_delta) {
  if (!batch.labels.defined()) return student_->forward(batch, word_embedding_delta);
  const bool layerwise = intermediate_.has_value();
  const bool scores = layerwise && intermediate_->attention_weight != 0.0;
  std::vector<torch::Tensor> student_hidden, teacher_hidden, student_scores, teacher_scores;
  ModelOutput out = layerwise ? traced_forward(*student_, batch, word_embedding_delta, student_hidden,
                                               scores ? &student_scores : nullptr)
                              : student_->forward(batch, word_embedding_delta);
  torch::Tensor teacher_logits;
  {
    torch::NoGradGuard no_grad;
    Batch inputs = batch;
    inputs.labels = torch::Tensor();
    teacher_logits = layerwise ? traced_forward(dynamic_cast<EncoderTaskModel&>(*teacher_), inputs, {}, teacher_hidden,
                                                scores ? &teacher_scores : nullptr)
                                     .logits
                               : teacher_->forward(inputs).logits;
  }
  auto kl = distillation_kl(student_->kind(), out.logits, teacher_logits, batch.labels, temperature_);
  torch::Tensor distilled = alpha_ * temperature_ * temperature_ * kl;
  if (layerwise) {
    const torch::Tensor mask =
        batch.attention_mask.defined() ? batch.attention_mask : torch::ones_like(batch.input_ids);
    distilled = distilled + intermediate_losses(*intermediate_, student_hidden, teacher_hidden, student_scores,
                                                teacher_scores, mask, projection_)
                                .to(distilled.scalar_type());
  }
  if (batch.sample_weights.defined()) distilled = distilled * batch.sample_weights.to(distilled.scalar_type());
  out.example_losses = distilled + (1.0 - alpha_) * out.example_losses;
  return out;
}

std::shared_ptr<TaskModel> DistillationModel::clone_model() const {
  auto student = std::dynamic_pointer_cast<EncoderTaskModel>(student_->clone_model());
  auto copy =
      std::make_shared<DistillationModel>(student, teacher_->clone_model(), temperature_, alpha_, intermediate_);
  if (!projection_.is_empty()) copy_module_state(*projection_, *copy->projection_);
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
