#include "framework/engines/local_engine.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/autograd.h>

#include "framework/engines/coupled_pass.h"
#include "framework/parallel/device_transfer.h"
#include "framework/parallel/parameter_swap.h"

namespace unif::framework {

LocalEngine::LocalEngine(std::shared_ptr<models::TaskModel> model, std::function<void()> optimizer_step,
                         Precision precision)
    : model_(std::move(model)), optimizer_step_(std::move(optimizer_step)), precision_(precision) {
  for (const auto& p : model_->parameters()) {
    device_ = p.device();
    break;
  }
  if (device_.is_cuda()) dropout_streams_.attach(*model_, 0, device_);
}

void LocalEngine::reseed_dropout() {
  if (model_->is_training()) dropout_streams_.reseed(0);
}

models::ModelOutput LocalEngine::forward(const models::Batch& batch, const torch::Tensor& delta) {
  AutocastGuard autocast(precision_, device_.type());  // the forward only: backward runs after it ends
  return model_->forward(batch, delta);
}

int64_t LocalEngine::embedding_dim() const { return model_->word_embeddings()->options.embedding_dim(); }

PassResult LocalEngine::run(const models::Batch& input, const torch::Tensor& delta, double scale,
                            bool want_delta_grad) {
  if (model_->couples_examples()) return run_coupled(*this, *model_, input, task_pass(delta, scale, want_delta_grad));
  const models::Batch batch = to_device(input, device_);
  reseed_dropout();
  torch::Tensor d;
  if (delta.defined())
    d = delta.detach().to(device_).clone();
  else if (want_delta_grad)
    d = torch::zeros({batch.input_ids.size(0), batch.input_ids.size(1), embedding_dim()},
                     torch::TensorOptions().dtype(torch::kFloat32).device(batch.input_ids.device()));
  if (want_delta_grad) d.requires_grad_(true);
  auto out = forward(batch, d);
  auto loss = out.example_losses.sum();
  (loss * scale).backward();
  PassResult r;
  r.loss_sum = loss.item<double>();
  if (want_delta_grad) r.delta_grad = d.grad().detach();
  r.output.logits = out.logits.detach();
  r.output.example_losses = out.example_losses.detach();
  r.output.loss_count = out.loss_count;
  return r;
}

PassResult LocalEngine::run_custom(const models::Batch& input, const PassRequest& request) {
  if (model_->couples_examples()) return run_coupled(*this, *model_, input, request);
  if (!request.loss_fn && !request.pair_loss_fn && request.param_grads)
    return run(input, request.delta, request.scale, request.want_delta_grad);
  const models::Batch batch = to_device(input, device_);
  reseed_dropout();
  torch::Tensor d;
  if (request.delta.defined())
    d = request.delta.detach().to(device_).clone();
  else if (request.want_delta_grad)
    d = torch::zeros({batch.input_ids.size(0), batch.input_ids.size(1), embedding_dim()},
                     torch::TensorOptions().dtype(torch::kFloat32).device(batch.input_ids.device()));
  if (request.want_delta_grad) d.requires_grad_(true);
  const bool backward = request.param_grads || request.want_delta_grad;
  // Gradient recording off for a forward-only pass (as a NoGradGuard would), else left as it is.
  torch::AutoGradMode grad_mode(backward && torch::GradMode::is_enabled());
  auto out = forward(batch, d);
  PassResult r;
  if (out.example_losses.defined()) r.loss_sum = out.example_losses.sum().item<double>();
  torch::Tensor loss;
  if (request.pair_loss_fn) {       // twin pass: a second forward with its own dropout masks
    auto out2 = forward(batch, d);  // under autocast too
    if (out2.example_losses.defined()) r.loss_sum = 0.5 * (r.loss_sum + out2.example_losses.sum().item<double>());
    loss = request.pair_loss_fn(out, out2, 0);
  } else {
    loss = request.loss_fn ? request.loss_fn(out, 0) : out.example_losses.sum();
  }
  if (request.loss_fn || request.pair_loss_fn) r.custom_loss = loss.item<double>();
  if (request.param_grads) {
    (loss * request.scale).backward();
    if (request.want_delta_grad) r.delta_grad = d.grad().detach();
  } else if (request.want_delta_grad) {
    // Only delta's gradient: the parameters' .grad stay as they are.
    r.delta_grad = torch::autograd::grad({loss * request.scale}, {d})[0].detach();
  }
  r.output.logits = out.logits.detach();
  if (out.example_losses.defined()) r.output.example_losses = out.example_losses.detach();
  r.output.loss_count = out.loss_count;
  return r;
}

models::ModelOutput LocalEngine::forward_kept(const models::Batch& input, int64_t cache_rows) {
  reseed_dropout();
  kept_ = torch::Tensor();
  cache_.clear();
  models::ModelOutput r;
  if (input.size() == 0) return r;  // a rank's empty slice: nothing to compute
  const models::Batch batch = to_device(input, device_);
  if (cache_rows > 0) {
    // The dropout masks come from the model's own generator on a GPU, else from the global one.
    std::vector<at::Generator> generators = dropout_streams_.generators(0);
    if (dropout_streams_.empty()) generators.push_back(at::detail::getDefaultCPUGenerator());
    return cache_.forward(batch, cache_rows, std::move(generators),
                          [this](const models::Batch& b) { return forward(b, {}); });
  }
  torch::AutoGradMode grad_mode(true);
  auto out = forward(batch, {});
  kept_ = out.logits;
  r.logits = out.logits.detach();
  r.loss_count = out.loss_count;
  return r;
}

void LocalEngine::backward_kept(const torch::Tensor& logits_grad) {
  if (cache_.active()) return cache_.backward(logits_grad, [this](const models::Batch& b) { return forward(b, {}); });
  torch::Tensor kept = std::move(kept_);
  kept_ = torch::Tensor();
  if (!kept.defined()) return;  // an empty batch
  torch::autograd::backward({kept}, {logits_grad.to(kept.device(), kept.scalar_type())});
}

models::ModelOutput LocalEngine::forward_with(const models::Batch& input, const std::vector<torch::Tensor>& params) {
  const models::Batch batch = to_device(input, device_);
  ParameterSwap swap(model_->parameters(), params);
  torch::NoGradGuard no_grad;
  auto out = forward(batch, {});
  models::ModelOutput r;
  r.logits = out.logits.detach().clone();
  if (out.example_losses.defined()) r.example_losses = out.example_losses.detach().clone();
  r.loss_count = out.loss_count;
  return r;
}

}  // namespace unif::framework
