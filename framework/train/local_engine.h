// LocalEngine: the GradientEngine of one model on one device (the data-parallel engine of
// framework/parallel implements the same interface over replicas).
#pragma once
#include <functional>
#include <memory>

#include "adversarial/strategy.h"
#include "models/task_model.h"

namespace unif::framework {

class LocalEngine final : public adversarial::GradientEngine {
 public:
  /// `optimizer_step` clips, steps and zeroes the gradients (owned by the trainer).
  LocalEngine(std::shared_ptr<models::TaskModel> model, std::function<void()> optimizer_step);
  adversarial::PassResult run(const models::Batch& batch, const torch::Tensor& delta, double scale,
                              bool want_delta_grad) override;
  adversarial::PassResult run_custom(const models::Batch& batch, const adversarial::PassRequest& request) override;
  int64_t embedding_dim() const override;
  void optimizer_step() override { optimizer_step_(); }
  std::vector<torch::Tensor> parameters() override { return model_->parameters(); }
  models::ModelOutput forward_with(const models::Batch& batch, const std::vector<torch::Tensor>& params) override;

 private:
  std::shared_ptr<models::TaskModel> model_;
  std::function<void()> optimizer_step_;
};

}  // namespace unif::framework
