// Smart: symmetric-KL smoothness with projected ascent; see smart.h for the exact procedure.
#include "adversarial/smart.h"

#include <cstdio>

namespace unif::adversarial {

namespace {

enum class OutputKind { Softmax, Sigmoid, TokenSoftmax, SpanSoftmax };

OutputKind output_kind(const torch::Tensor& logits, const models::Batch& batch) {
  const auto& y = batch.labels;
  if (!y.defined()) throw StrategyError("adversarial.method: smart needs labelled training batches");
  const bool integer = !y.is_floating_point();
  if (!integer && y.dim() == 1)
    throw StrategyError(
        "adversarial.method: smart needs a probability output (classification, multilabel, "
        "token_classification); task regression has none — use fgm, pgd, freelb or freeat");
  if (!integer) return OutputKind::Sigmoid;                                          // multilabel (B, C)
  if (logits.dim() == 2) return OutputKind::Softmax;                                 // (B, C)
  if (y.dim() == 2 && y.size(1) == logits.size(1)) return OutputKind::TokenSoftmax;  // (B, L, C)
  return OutputKind::SpanSoftmax;                                                    // (B, L, 2), labels (B, 2)
}

// Σ over the last dim of (p - q)(log p - log q) for softmax distributions.
torch::Tensor softmax_skl(const torch::Tensor& a, const torch::Tensor& b) {
  const auto la = torch::log_softmax(a, -1), lb = torch::log_softmax(b, -1);
  return ((la.exp() - lb.exp()) * (la - lb)).sum(-1);
}

}  // namespace

torch::Tensor symmetric_kl(const torch::Tensor& logits, const torch::Tensor& target_logits, const models::Batch& batch,
                           int64_t first) {
  const auto kind = output_kind(logits, batch);
  const int64_t n = logits.size(0);
  // On the logits' device: a replica's logits on cuda:i meet targets gathered on the master's device.
  const auto a = logits.to(torch::kFloat32), b = target_logits.to(logits.device(), torch::kFloat32);
  switch (kind) {
    case OutputKind::Softmax: return softmax_skl(a, b).sum();
    case OutputKind::Sigmoid:
      // Per label, Bernoulli: KL(p‖q) + KL(q‖p) = (p - q)(logit p - logit q).
      return ((torch::sigmoid(a) - torch::sigmoid(b)) * (a - b)).sum();
    case OutputKind::TokenSoftmax: {
      const auto labeled = batch.labels.narrow(0, first, n).to(a.device()).ne(-100).to(torch::kFloat32);  // (B, L)
      return (softmax_skl(a, b) * labeled).sum();
    }
    case OutputKind::SpanSoftmax:
      return softmax_skl(a.transpose(1, 2), b.transpose(1, 2)).sum();  // start and end over positions
  }
  return {};
}

void Smart::update_teacher(GradientEngine& engine, int64_t step) {
  const auto params = engine.parameters();
  torch::NoGradGuard no_grad;
  if (teacher_.empty()) {
    for (const auto& p : params) teacher_.push_back(p.detach().clone());
    teacher_step_ = step;
    return;
  }
  if (teacher_.size() != params.size())
    throw StrategyError("smart teacher: " + std::to_string(teacher_.size()) + " tensors for a model with " +
                        std::to_string(params.size()) + " parameters (checkpoint of another model?)");
  for (size_t i = 0; i < params.size(); ++i) {
    if (!teacher_[i].sizes().equals(params[i].sizes()))
      throw StrategyError("smart teacher: tensor " + std::to_string(i) + " does not match the model's parameter shape");
    if (teacher_[i].device() != params[i].device() || teacher_[i].dtype() != params[i].dtype())
      teacher_[i] = teacher_[i].to(params[i].device(), params[i].scalar_type());
  }
  if (step <= teacher_step_) return;  // another micro-batch of the same step
  for (size_t i = 0; i < params.size(); ++i) teacher_[i].mul_(momentum_).add_(params[i].detach(), 1.0 - momentum_);
  teacher_step_ = step;
}

std::map<std::string, torch::Tensor> Smart::state() const {
  std::map<std::string, torch::Tensor> out;
  if (teacher_.empty()) return out;
  for (size_t i = 0; i < teacher_.size(); ++i) {
    char name[40];
    std::snprintf(name, sizeof name, "smart.teacher.%05zu", i);
    out[name] = teacher_[i];
  }
  out["smart.teacher_step"] = torch::tensor({teacher_step_}, torch::kLong);
  return out;
}

void Smart::load_state(const std::map<std::string, torch::Tensor>& state, const std::string& where) {
  teacher_.clear();
  teacher_step_ = -1;
  if (state.empty()) return;
  const auto it = state.find("smart.teacher_step");
  if (it == state.end() || it->second.numel() != 1)
    throw StrategyError(where + ": smart.teacher_step missing or not one number");
  for (size_t i = 0;; ++i) {
    char name[40];
    std::snprintf(name, sizeof name, "smart.teacher.%05zu", i);
    const auto t = state.find(name);
    if (t == state.end()) break;
    teacher_.push_back(t->second.clone());
  }
  if (teacher_.size() + 1 != state.size()) throw StrategyError(where + ": unexpected tensors besides smart.teacher.*");
  teacher_step_ = it->second.to(torch::kLong).item<int64_t>();
}

StepResult Smart::accumulate(GradientEngine& engine, const models::Batch& batch, double scale, int64_t seed,
                             int64_t step) {
  const auto mask = padding_mask(batch);  // (B, L, 1)
  StepResult result;

  // 1. Clean distribution (forward only), the fixed target of the ascent.
  PassRequest forward_only;
  forward_only.param_grads = false;
  auto clean0 = engine.run_custom(batch, forward_only);
  const torch::Tensor clean_logits = clean0.output.logits;  // detached, batch order
  symmetric_kl(clean_logits, clean_logits, batch);          // refuses regression before any update
  result.pass_losses.push_back(clean0.loss_sum);

  // Teacher distribution f(x; θ̃) at δ = 0 (forward only), for the Bregman proximal term.
  torch::Tensor teacher_logits;
  if (bregman_ > 0.0) {
    update_teacher(engine, step);
    teacher_logits = engine.forward_with(batch, teacher_).logits;
  }

  // 2. δ₀ ~ N(0, σ²) at real tokens, drawn from the (seed, step) generator for the whole batch.
  const int64_t b = batch.input_ids.size(0), l = batch.input_ids.size(1), h = engine.embedding_dim();
  auto gen = noise_generator(seed, step, micro_.next(step));
  torch::Tensor delta =
      apply_mask(torch::empty({b, l, h}, torch::kFloat32).normal_(0.0, kNoiseStd, gen).to(mask.device()), mask);

  const auto against = [&batch](const torch::Tensor& target) -> LossFn {
    return [&batch, target](const models::ModelOutput& out, int64_t first) {
      return symmetric_kl(out.logits, target.narrow(0, first, out.logits.size(0)), batch, first);
    };
  };

  // 3. K projected ascent steps on sKL(f(E) ‖ f(E+δ)), δ only.
  for (int64_t k = 1; k <= steps_; ++k) {
    PassRequest ascent;
    ascent.delta = delta;
    ascent.scale = scale;
    ascent.want_delta_grad = true;
    ascent.param_grads = false;
    ascent.loss_fn = against(clean_logits);
    auto r = engine.run_custom(batch, ascent);
    result.pass_losses.push_back(r.loss_sum);
    delta = delta + alpha_ * normalize(r.delta_grad / scale, mask);
    if (epsilon_ > 0.0) {
      result.projected_examples.push_back(count_outside(delta, epsilon_, mask));
      delta = project(delta, epsilon_, mask);
    }
  }

  // 4. Adversarial side: λ·sKL at δ*, the clean distribution fixed.
  PassRequest adv;
  adv.delta = delta;
  adv.scale = scale * lambda_;
  adv.loss_fn = against(clean_logits);
  auto adv_r = engine.run_custom(batch, adv);
  result.pass_losses.push_back(adv_r.loss_sum);

  // 5. Clean side: task loss + λ·sKL, the adversarial distribution fixed; + μ·sKL to the teacher.
  PassRequest clean;
  clean.scale = scale;
  const torch::Tensor adv_logits = adv_r.output.logits;
  const double lambda = lambda_, mu = bregman_;
  clean.loss_fn = [&batch, adv_logits, teacher_logits, lambda, mu](const models::ModelOutput& out, int64_t first) {
    const int64_t n = out.logits.size(0);
    auto loss =
        out.example_losses.sum() + lambda * symmetric_kl(out.logits, adv_logits.narrow(0, first, n), batch, first);
    if (mu > 0.0) loss = loss + mu * symmetric_kl(out.logits, teacher_logits.narrow(0, first, n), batch, first);
    return loss;
  };
  auto clean_r = engine.run_custom(batch, clean);
  result.pass_losses.push_back(clean_r.loss_sum);

  result.loss_sum = clean_r.loss_sum;
  result.output = std::move(clean_r.output);
  result.passes = passes_per_step();
  return result;
}

}  // namespace unif::adversarial
