#include "framework/train/local_engine.h"

#include <torch/autograd.h>

namespace unif::framework {

LocalEngine::LocalEngine(std::shared_ptr<models::TaskModel> model, std::function<void()> optimizer_step)
    : model_(std::move(model)), optimizer_step_(std::move(optimizer_step)) {}

int64_t LocalEngine::embedding_dim() const {
  return model_->word_embeddings()->options.embedding_dim();
}

adversarial::PassResult LocalEngine::run(const models::Batch& batch, const torch::Tensor& delta,
                                         double scale, bool want_delta_grad) {
  torch::Tensor d;
  if (delta.defined()) d = delta.detach().clone();
  else if (want_delta_grad)
    d = torch::zeros({batch.input_ids.size(0), batch.input_ids.size(1), embedding_dim()},
                     torch::TensorOptions().dtype(torch::kFloat32).device(batch.input_ids.device()));
  if (want_delta_grad) d.requires_grad_(true);
  auto out = model_->forward(batch, d);
  auto loss = out.example_losses.sum();
  (loss * scale).backward();
  adversarial::PassResult r;
  r.loss_sum = loss.item<double>();
  if (want_delta_grad) r.delta_grad = d.grad().detach();
  r.output.logits = out.logits.detach();
  r.output.example_losses = out.example_losses.detach();
  r.output.loss_count = out.loss_count;
  return r;
}

}  // namespace unif::framework
